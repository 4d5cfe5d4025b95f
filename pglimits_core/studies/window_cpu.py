"""Every run's exact CPU window, its placement as observed, and which side set its limit.

``run_recorded`` (the harness) and ``run_tool_recorded`` (a C tool) each arm an
``ExactCpuWindow`` over their measured window: the server's process tree, the load (the
harness's workers, or the tool's processes) and the study process (the harness: driver,
collector, samplers), read at the window's start and end. What it finds goes into the manifest:
``cpu.exact`` (seconds and cores used per side, each CPU set's busy fraction), ``placement``
(the sets, and the affinity each side's processes really had, read at the window's start) and
``limit`` (``samplers.limit``: which side set the point's limit).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from pglimits_core import placement as placing
from pglimits_core.record.results import measured_window
from pglimits_core.samplers.exact_cpu import SOURCE, ExactCpuWindow, tree_pids
from pglimits_core.samplers.limit import limit_side
from pglimits_core.servers.registry import server_class

NO_TOOL_WINDOW = "the tool runs several commands in a row: no single measured window to read"
PidSource = Callable[[], Iterable[int]]


class RunCpu:
    """The exact window of one run; the affinity of both sides is read at the window's start."""

    def __init__(self, placement: dict[str, Any], server_pids: PidSource, load_pids: PidSource,
                 compiled_load: bool = False):
        self.placement, self.compiled_load = placement, compiled_load
        self.server_pids, self.load_pids = server_pids, load_pids
        sides = {"server": lambda: tree_pids(server_pids()), "load": lambda: list(load_pids()),
                 "harness": lambda: [os.getpid()]}
        self.window = ExactCpuWindow(sides, placement, at_start=self._observe)
        self.seen: dict[str, Any] = {}
        self.not_armed: str | None = None
        self.armed = False

    def _observe(self) -> None:
        self.seen = placing.observed(tree_pids(self.server_pids()), [*self.load_pids(), os.getpid()])

    def arm(self, start_s: float, end_s: float) -> None:
        self.armed = True
        self.window.arm(start_s, end_s)

    def evidence(self, server: str) -> dict[str, Any]:
        """The manifest fields: ``placement`` (as configured and as seen), ``limit``, and the
        ``exact`` figures that go into ``cpu``."""
        exact = {"source": SOURCE, "error": self.not_armed} if self.not_armed else self.window.finish()
        kind = server_class(server)
        limit = limit_side(exact, self.placement, kind.cpu_ceiling_cores, kind.engine_in_client, self.compiled_load)
        return {"placement": as_held(self.placement, self.seen), "limit": limit, "exact": exact}


def as_held(placement: dict[str, Any], seen: dict[str, Any]) -> dict[str, Any]:
    """The placement as configured, the affinity each side's processes had, and whether it held."""
    return {**placement, **seen, "held": placing.held(placement, seen)}


def seen_placement(placement: dict[str, Any], server_pids: Iterable[int], load_pids: Iterable[int]) -> dict[str, Any]:
    """A window's placement read now from its processes (the servers' trees; the load's and the
    study process), for windows that have no ``RunCpu`` (the co-location windows)."""
    return as_held(placement, placing.observed(tree_pids(server_pids), [*load_pids, os.getpid()]))


def for_harness(placement: dict[str, Any], server_pids: PidSource, load_pids: PidSource,
                spec: Any) -> tuple[RunCpu, Callable[[float], None]]:
    """The window of a harness run and the ``on_start`` hook ``run_load`` calls with its start."""
    cpu = RunCpu(placement, server_pids, load_pids)

    def on_start(start_s: float) -> None:
        window = measured_window(spec.phase_infos(), start_s)
        if window is None:
            cpu.not_armed = "every phase is a warm-up: no measured window"
            return
        cpu.arm(*window)

    return cpu, on_start


def for_tool(placement: dict[str, Any], server_pids: PidSource, process: Any, load: Any) -> RunCpu:
    """The window of a tool run, armed when its first command starts, over the tool's measured
    phase (``load.measured_offsets()``: seconds after that start) when it has exactly one."""
    cpu = RunCpu(placement, server_pids, process.pids, compiled_load=True)
    offsets = load.measured_offsets() if hasattr(load, "measured_offsets") else None
    if offsets is None:
        cpu.not_armed = NO_TOOL_WINDOW
        return cpu
    run = process.run

    def run_and_arm(command: Any) -> Any:
        if not cpu.armed:
            began = time.monotonic()
            cpu.arm(began + offsets[0], began + offsets[1])
        return run(command)

    process.run = run_and_arm
    return cpu


def manifest_update(cpu_figures: dict[str, Any], evidence: dict[str, Any]) -> dict[str, Any]:
    """``cpu`` with ``exact`` added, ``placement`` and ``limit``."""
    return {"cpu": {**cpu_figures, "exact": evidence["exact"]}, "placement": evidence["placement"],
            "limit": evidence["limit"]}
