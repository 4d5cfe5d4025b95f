"""A window's CPU, exactly: per-process CPU-time counters read at the window's start and end.

The per-second sampler reports whole percent once a second; inside a 2–3 s window that is one or
two readings, too coarse to carry a ±25 % band. Here each side's CPU over a window is the
difference of the kernel's own cumulative counters (``/proc/<pid>/stat``: user + system time of
the process and of the children it has reaped), read at the window's start and at its end:

    side's CPU = Σ over processes at the end (own + reaped) − Σ over processes at the start (own + reaped)

which counts each process exactly once: one alive at both reads by its difference; one born
inside the window by its whole count; one that exited inside the window through its parent's
reaped count, less what it had used before the window (a Postgres backend that disconnects is
reaped by the postmaster). An exited process whose parent is not on the same side cannot be
counted; it is left out and counted in ``lost_processes``.

The CPUs themselves are read too (``/proc/stat``, per CPU): how busy each placement set was over
the window, whoever used it. That is the direct reading of "the server's set was saturated".
Counters are in clock ticks (1/100 s on Linux), so a 30 s window resolves 0.03 % per process.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PidSource = Callable[[], Iterable[int]]
SOURCE = "per-process CPU-time counters at the window's start and end"


@dataclass(frozen=True)
class ProcessCounters:
    """One process at one read: ``key`` = (pid, start tick) tells a reused pid apart."""

    key: tuple[int, int]
    parent: int
    own_ticks: int
    reaped_ticks: int


def read_process(pid: int) -> ProcessCounters | None:
    """The counters of ``pid`` (None: it is gone). Fields after the command name, which may
    hold spaces and parentheses, so the line is split after its last ')'."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode(errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()
    # fields[0] is the state (stat field 3): utime 14, stime 15, cutime 16, cstime 17, starttime 22
    utime, stime, cutime, cstime = (int(fields[i]) for i in (11, 12, 13, 14))
    return ProcessCounters((pid, int(fields[19])), int(fields[1]), utime + stime, cutime + cstime)


def tree_pids(roots: Iterable[int]) -> list[int]:
    """The roots and every descendant alive now."""
    import psutil

    found: list[int] = []
    for root in roots:
        try:
            found += [root, *(child.pid for child in psutil.Process(root).children(recursive=True))]
        except psutil.Error:
            continue
    return sorted(set(found))


def read_cpus() -> dict[int, tuple[int, int]]:
    """Per CPU: (busy ticks, all ticks) since boot, from ``/proc/stat`` (guest time is already
    inside user time, so it is not added again)."""
    cpus: dict[int, tuple[int, int]] = {}
    with open("/proc/stat") as handle:
        for line in handle:
            if not line.startswith("cpu") or line.startswith("cpu "):
                continue
            name, *values = line.split()
            user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in values[:8])
            total = user + nice + system + idle + iowait + irq + softirq + steal
            cpus[int(name[3:])] = (total - idle - iowait, total)
    return cpus


@dataclass(frozen=True)
class Snapshot:
    """Every side's processes and every CPU's counters at one instant (``taken_s``: monotonic)."""

    taken_s: float
    sides: dict[str, dict[tuple[int, int], ProcessCounters]]
    cpus: dict[int, tuple[int, int]]


def take_snapshot(sides: dict[str, list[int]], own_only: Iterable[str] = ()) -> Snapshot:
    """``sides``: side name -> the pids that are that side now. A side in ``own_only`` counts its
    processes' own time only (the study process reaps the load's workers and the servers: their
    time is theirs, not the harness's)."""
    taken = time.monotonic()
    read: dict[str, dict[tuple[int, int], ProcessCounters]] = {}
    for side, pids in sides.items():
        counters = [c for pid in pids if (c := read_process(pid)) is not None]
        if side in own_only:
            counters = [ProcessCounters(c.key, c.parent, c.own_ticks, 0) for c in counters]
        read[side] = {c.key: c for c in counters}
    return Snapshot(taken, read, read_cpus())


def side_ticks(start: dict[tuple[int, int], ProcessCounters],
               end: dict[tuple[int, int], ProcessCounters]) -> tuple[int, int]:
    """(ticks the side used between the two reads, processes whose exit could not be counted)."""
    end_pids = {key[0] for key in end}
    total = sum(c.own_ticks + c.reaped_ticks for c in end.values())
    lost = 0
    for key, counters in start.items():
        if key in end or counters.parent in end_pids:
            total -= counters.own_ticks + counters.reaped_ticks
        else:
            lost += 1
    return max(total, 0), lost


def set_busy(start: Snapshot, end: Snapshot, cpus: Iterable[int]) -> float | None:
    """The fraction of the set's CPU time that was busy between the reads (None: unknown CPU)."""
    busy = total = 0
    for cpu in cpus:
        if cpu not in start.cpus or cpu not in end.cpus:
            return None
        busy += end.cpus[cpu][0] - start.cpus[cpu][0]
        total += end.cpus[cpu][1] - start.cpus[cpu][1]
    return busy / total if total > 0 else None


def window_figures(start: Snapshot, end: Snapshot, placement: dict[str, Any]) -> dict[str, Any]:
    """The manifest's ``cpu.exact``: seconds and cores used by each side, each set's busy fraction."""
    seconds = end.taken_s - start.taken_s
    figures: dict[str, Any] = {"window_s": round(seconds, 4), "source": SOURCE}
    for side in start.sides:
        ticks, lost = side_ticks(start.sides[side], end.sides.get(side, {}))
        cpu_s = ticks / TICKS_PER_S
        figures[f"{side}_cpu_s"] = round(cpu_s, 3)
        figures[f"{side}_cores_used"] = round(cpu_s / seconds, 4) if seconds > 0 else None
        figures[f"{side}_processes"] = len(end.sides.get(side, {}))
        if lost:
            figures[f"{side}_lost_processes"] = lost
    for name in ("server", "load"):
        busy = set_busy(start, end, placement[f"{name}_cpus"])
        figures[f"{name}_set_busy"] = None if busy is None else round(busy, 4)
    figures["server_set_cores"] = len(placement["server_cpus"])
    figures["load_set_cores"] = len(placement["load_cpus"])
    return figures


class ExactCpuWindow:
    """Reads every side's counters at a window's start and end, from a thread of its own, while
    the load runs. ``sides``: side name -> a function giving its pids at the moment of reading
    (the server's tree, the load's workers or tool processes, the study process)."""

    def __init__(self, sides: dict[str, PidSource], placement: dict[str, Any], own_only: Iterable[str] = ("harness",),
                 at_start: Callable[[], None] | None = None):
        self.sides, self.placement, self.own_only = sides, placement, tuple(own_only)
        self.at_start = at_start  # called in the window's thread right after the start read
        self.start: Snapshot | None = None
        self.end: Snapshot | None = None
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._end_s = float("inf")

    def _take(self) -> Snapshot:
        return take_snapshot({side: list(pids()) for side, pids in self.sides.items()}, self.own_only)

    def arm(self, start_s: float, end_s: float) -> None:
        """Read at ``start_s`` and at ``end_s`` (``time.monotonic()`` seconds)."""
        self._end_s = end_s
        self._thread = threading.Thread(target=self._run, args=(start_s, end_s), name="exact-cpu", daemon=True)
        self._thread.start()

    def _run(self, start_s: float, end_s: float) -> None:
        if not self._wait_until(start_s):
            return
        self.start = self._take()
        if self.at_start is not None:
            self.at_start()
        if self._wait_until(end_s):
            self.end = self._take()

    def _wait_until(self, moment: float) -> bool:
        return not self._cancel.wait(max(0.0, moment - time.monotonic()))

    def finish(self) -> dict[str, Any]:
        """The window's figures, once the load has ended; a window it did not run to the end of
        (it failed or stopped early) gets no figures and says why."""
        if self._thread is not None:
            if time.monotonic() < self._end_s:
                self._cancel.set()
            self._thread.join(timeout=5)
        if self.start is None or self.end is None:
            return {"source": SOURCE, "error": "the window's start or end was not read: the load ended before it"}
        return window_figures(self.start, self.end, self.placement)
