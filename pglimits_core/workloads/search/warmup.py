"""The untimed warm-up before a server's first timed point, run until the server is steady.

A fixed few seconds on one connection was not enough: in the committed full run every
Elasticsearch and OpenSearch throughput cell kept rising over the three rounds (the JVMs were
still compiling and filling caches while being timed). So, as Rally warms a cluster, the warm-up
is the measured load itself — ``clients`` concurrent connections running the study's queries —
and it ends on evidence: it is cut into slices of ``slice_s`` and stops when two consecutive
slices' throughput agree within ``tolerance`` (after at least ``min_s``), or at the cap
``cap_s``, where its record says it was not steady. The stopping rule (``WarmupRule``) is
separate from the load (``driver_slices``), so it is tested with fake slices and no clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pglimits_core.load import ClosedLoop, Operation, Phase, Role, RunSpec
from pglimits_core.load.driver import run_load


@dataclass(frozen=True)
class Slice:
    """One measured slice of the warm-up: its real length and the queries answered in it."""

    seconds: float
    queries: int

    @property
    def qps(self) -> float:
        return self.queries / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class WarmupRule:
    """When the warm-up stops: ``cap_s`` 0 means no warm-up at all. The cap and the minimum
    count in whole slices (a cap that is not a multiple of ``slice_s`` is rounded up)."""

    cap_s: float = 120.0
    min_s: float = 20.0
    slice_s: float = 5.0
    tolerance: float = 0.10
    clients: int = 8

    @property
    def enabled(self) -> bool:
        return self.cap_s > 0

    @property
    def max_slices(self) -> int:
        return max(1, math.ceil(self.cap_s / self.slice_s - 1e-9))

    @property
    def min_slices(self) -> int:
        """Two slices at least: steadiness is two slices agreeing."""
        return max(2, math.ceil(self.min_s / self.slice_s - 1e-9))

    def agree(self, before: Slice, after: Slice) -> bool:
        """``after``'s throughput within ``tolerance`` of ``before``'s (a slice that answered
        nothing never agrees: a server that stopped answering is not steady)."""
        return before.qps > 0 and abs(after.qps - before.qps) <= self.tolerance * before.qps

    def verdict(self, slices: list[Slice]) -> str | None:
        """``steady``, ``cap`` (not steady when the cap came) or None (take another slice)."""
        if len(slices) >= self.min_slices and self.agree(slices[-2], slices[-1]):
            return "steady"
        return "cap" if len(slices) >= self.max_slices else None

    def run(self, take_slice: Callable[[float], Slice]) -> dict[str, Any]:
        """Take slices of ``slice_s`` until the verdict; what the warm-up did, for the record."""
        slices: list[Slice] = []
        while (verdict := self.verdict(slices)) is None:
            slices.append(take_slice(self.slice_s))
        return self.record(slices, verdict)

    def record(self, slices: list[Slice], verdict: str) -> dict[str, Any]:
        steady = verdict == "steady"
        said = (f"steady: the last two slices within {self.tolerance:.0%}" if steady
                else f"not steady after cap ({self.cap_s:g} s)")
        return {"seconds": round(sum(s.seconds for s in slices), 2), "queries": sum(s.queries for s in slices),
                "clients": self.clients, "slice_s": self.slice_s, "slices_qps": [round(s.qps, 1) for s in slices],
                "steady": steady, "stopped": said,
                "rule": {"cap_s": self.cap_s, "min_s": self.min_s, "tolerance": self.tolerance}}


def driver_slices(op: Operation, clients: int, seed: int) -> Callable[[float], Slice]:
    """Slices run by the load driver itself, as the throughput points run: ``clients`` worker
    processes, closed loop, ``op``. A thread pool in one process (the first version) topped out
    below the measured load (its clients shared one interpreter) and timed slices of whatever
    part of the stream they reached (a slice of frequent-term queries at 11 qps beside one of
    rare ones at 321). Each driver slice starts every worker at its own offset of the stream, as
    every timed point does, so consecutive slices answer the same queries from the start, and
    only the server's warming changes between them."""

    def take_slice(seconds: float) -> Slice:
        spec = RunSpec(phases=[Phase("slice", seconds)],
                       roles=[Role("client", op, workers=clients, loop=ClosedLoop(idle_sleep_s=0))],
                       seed=seed, start_method="fork")
        result = run_load(spec)
        if result.status != "complete":
            raise RuntimeError(f"warm-up query failed: {result.error}")
        done = sum(counts["ops"] for (_role, _op, phase), counts in result.counts.items() if phase == "slice")
        return Slice(seconds, done)

    return take_slice


def warm_until_steady(rule: WarmupRule, take_slice: Callable[[float], Slice]) -> dict[str, Any]:
    """Take slices under ``rule``; its record (seconds, queries, qps per slice, steady)."""
    return {**rule.run(take_slice), "driver": "the load driver's worker processes, closed loop"}
