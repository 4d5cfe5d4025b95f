"""The untimed warm-up before a server's first timed point, run until the server is steady.

A fixed few seconds on one connection was not enough: in the committed full run every
Elasticsearch and OpenSearch throughput cell kept rising over the three rounds (the JVMs were
still compiling and filling caches while being timed). So, as Rally warms a cluster, the warm-up
is the measured load itself — ``clients`` concurrent connections running the study's queries —
and it ends on evidence: it is cut into slices of ``slice_s`` and stops when two consecutive
slices' throughput agree within ``tolerance`` (after at least ``min_s``), or at the cap
``cap_s``, where its record says it was not steady. The stopping rule (``WarmupRule``) is
separate from the load (``WarmLoad``), so it is tested with fake slices and no clock.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pglimits_core.workloads.search.queries import worker_order
from pglimits_core.workloads.search.systems.base import SearchSystem


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


class WarmLoad:
    """``clients`` threads, each with its own connection, running ``pairs`` from its own offset
    (as the load driver's workers do) until stopped. Threads, not processes: the work is in the
    server — a thread sends a pre-encoded request (or executes a prepared statement) and waits on
    its socket, which releases the GIL — and the warm-up is untimed, so the client's own cost only
    needs to leave the server busy, which the slices' throughput shows."""

    def __init__(self, engines: list[SearchSystem], pairs: list[tuple[str, str]]):
        self.engines, self.pairs = engines, pairs
        self.done = [0] * len(engines)  # each thread counts its own: no lock on the hot path
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def _client(self, i: int) -> None:
        engine, n = self.engines[i], len(self.pairs)
        try:
            engine.prepare_stream(worker_order(self.pairs, i, len(self.engines)))
            while not self.stop.is_set():
                engine.stream_hits(self.done[i] % n)
                self.done[i] += 1
        except Exception as exc:  # handed to the main thread, which raises it
            self.error = self.error or exc
            self.stop.set()

    def take_slice(self, seconds: float) -> Slice:
        """Wait ``seconds`` while the clients run; the queries they answered meanwhile."""
        before, started = sum(self.done), time.perf_counter()
        self.stop.wait(seconds)  # wakes early when a client failed
        if self.error is not None:
            raise RuntimeError(f"warm-up query failed: {self.error}") from self.error
        return Slice(time.perf_counter() - started, sum(self.done) - before)


@contextmanager
def warm_load(open_engine: Callable[[], SearchSystem], pairs: list[tuple[str, str]], clients: int) -> Iterator[WarmLoad]:
    """The clients connected (here, so a refused connection raises in the caller), running;
    stopped, joined and closed on the way out, whatever happened."""
    engines: list[SearchSystem] = []
    try:
        engines += [open_engine() for _ in range(clients)]
        load = WarmLoad(engines, pairs)
        threads = [threading.Thread(target=load._client, args=(i,), daemon=True) for i in range(clients)]
        for thread in threads:
            thread.start()
        try:
            yield load
        finally:
            load.stop.set()
            for thread in threads:
                thread.join()
    finally:
        for engine in engines:
            engine.close()


def warm_until_steady(rule: WarmupRule, open_engine: Callable[[], SearchSystem],
                      pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Run the warm load under ``rule``; its record (seconds, queries, qps per slice, steady)."""
    with warm_load(open_engine, pairs, rule.clients) as load:
        return rule.run(load.take_slice)
