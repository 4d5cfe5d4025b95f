"""A load run that lasts until it is told to stop: the load a drill keeps going beside its act.

A drill (a hot backup, a server kill) needs producers and consumers running *while* it does
something else, for as long as that takes — not for a planned duration. ``BackgroundLoad`` runs
the same roles, operations, loops and worker processes as ``run_load`` (so the same timing rules
hold: an open-loop producer keeps every intended start, an op's timing is the executor's), with
one phase that lasts until ``stop()``; ``max_s`` bounds it, so a drill that never stops it
cannot leave load running::

    with BackgroundLoad([Role("producer", EnqueueOp(...), loop=OpenLoop(rate=500))], seed=7) as load:
        time.sleep(load_s)        # the workers have been running since the with-block began
        take_the_backup()
    load.result                   # the RunResult (``stop()`` returns it too)

``start()`` (``__enter__``) returns at the common start, once every worker opened its connection;
a worker that cannot open aborts the start (RuntimeError with the reasons). ``stop()`` raises the
run's stop flag: each worker finishes the operation it is in, closes and reports; one that has
not exited within ``stop_timeout_s`` is terminated and reported failed. A worker killed on
purpose (``pids(role)`` gives them) is reported "died" when its role ``may_die``.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import time
from collections.abc import Iterable

from pglimits_core.load.driver import (
    Collector,
    _exit_reason,
    _parent_to_follow,
    _plans,
    _publish_workers,
    _start_together,
    _statuses,
    _stop_processes,
    check_start_method,
)
from pglimits_core.load.spec import Phase, Role, RunSpec, validate_spec
from pglimits_core.load.worker import SharedControl, worker_main
from pglimits_core.record.results import RunResult, merge_worker_results

PHASE = "load"
#: after every worker exited, how long their last reports may still take to arrive (they are in
#: the pipe by then: a process flushes its queue before it exits)
FINAL_READ_S = 0.5


class BackgroundLoad:
    """``roles`` in worker processes from ``start()`` to ``stop()`` (at most ``max_s``)."""

    def __init__(self, roles: Iterable[Role], seed: int = 0, max_s: float = 3600.0,
                 start_method: str = "fork", open_timeout_s: float = 60.0,
                 stop_timeout_s: float = 10.0):
        self.spec = RunSpec(phases=[Phase(PHASE, max_s)], roles=list(roles), seed=seed,
                            start_method=start_method, open_timeout_s=open_timeout_s)
        self.stop_timeout_s = stop_timeout_s
        self.result: RunResult | None = None
        self._processes: dict = {}
        self._started: float | None = None

    def __enter__(self) -> BackgroundLoad:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> BackgroundLoad:
        """Start every worker; return at the common start (a worker that cannot open: raise)."""
        validate_spec(self.spec)
        check_start_method(self.spec.start_method)
        self._launch(mp.get_context(self.spec.start_method))
        try:
            _start_together(self.spec, self._collector, self._control)
        except BaseException:
            self.stop()
            raise
        if self._control.stop.value:  # aborted: a load missing workers is another load
            raise RuntimeError(f"the background load did not start: {self.stop().error}")
        remaining_ns = self._control.start_ns.value - time.monotonic_ns()
        time.sleep(max(0, remaining_ns) / 1e9)
        self._started = time.monotonic()
        return self

    def _launch(self, context) -> None:
        self._control = SharedControl(context.Queue(), context.Event(), context.RawValue("q", 0),
                                      context.RawValue("b", 0))
        go_timeout_s = self.spec.open_timeout_s + 30
        self._processes = {
            plan.key: context.Process(target=worker_main, name=f"pglimits-{plan.key}", daemon=True,
                                      args=(plan, self._control, go_timeout_s, _parent_to_follow(self.spec)))
            for plan in _plans(self.spec)}
        self._collector = Collector(self._processes, self._control,
                                    frozenset(r.name for r in self.spec.roles if r.may_die))
        try:
            for process in self._processes.values():
                process.start()
                _publish_workers([process.pid], active=True)
        except BaseException:
            self.stop()
            raise

    def pids(self, role: str | None = None) -> list[int]:
        """The worker processes (of ``role``), e.g. for a drill that kills one on purpose."""
        return [p.pid for (name, _), p in self._processes.items()
                if p.pid is not None and role in (None, name)]

    def stop(self) -> RunResult:
        """Stop every worker (bounded) and return what they measured; idempotent."""
        if self.result is not None:
            return self.result
        pids = self.pids()
        if self._processes:
            self._control.stop.value = 1
            self._control.go.set()  # a worker still waiting for the start gives up at once
            try:
                self._collect(time.monotonic() + self.stop_timeout_s)
            finally:
                _stop_processes(self._processes)
                _publish_workers(pids, active=False)
        self.result = merge_worker_results(
            list(self._collector.results.values()) if self._processes else [],
            self._ran_phases(), [r.info() for r in self.spec.roles],
            _statuses(self._collector) if self._processes else [], self.spec.describe())
        return self.result

    def _ran_phases(self) -> list:
        """The one phase as long as it really ran (start to stop), not its ``max_s`` bound:
        the summary's rates divide by it."""
        ran = [dataclasses.replace(info, duration_s=round(min(info.duration_s, time.monotonic() - self._started), 3))
               for info in self.spec.phase_infos()] if self._started is not None else self.spec.phase_infos()
        return ran

    def _collect(self, deadline: float) -> None:
        """Every report until each worker exited (or the deadline), then what is still in the
        pipe; a worker that exited without one died (its role ``may_die``) or failed."""
        collector = self._collector
        collector.wait(self._all_exited, deadline)
        collector.wait(lambda: not collector.pending(), time.monotonic() + FINAL_READ_S)
        for key in collector.pending():
            process = self._processes[key]
            if process.exitcode is None:
                collector.lost[key] = f"did not stop within {self.stop_timeout_s:.0f}s: terminated"
            elif key[0] in collector.may_die:
                collector.died[key] = _exit_reason(process)
            else:
                collector.lost[key] = _exit_reason(process)

    def _all_exited(self) -> bool:
        return all(self._processes[key].exitcode is not None for key in self._collector.pending())
