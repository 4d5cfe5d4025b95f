"""The parent of a load run: start the workers together, collect, never hang, never hide.

``run_load(spec)`` starts one process per worker of every role, waits until all opened their
connection, publishes a common start time (``time.monotonic_ns()`` + a short lead), then
collects each worker's ``WorkerResult``. It never waits on a dead worker: a process that
exits without reporting, or reports nothing by the deadline (schedule + drain +
``finish_timeout_s``), is terminated and reported as failed with the reason. One failure sets
the stop flag so the others wind down early — except a worker of a role that ``may_die`` (a
consumer-crash drill kills one on purpose) that exits without reporting: it is reported as
"died" and the others keep running. On Ctrl-C or any exception every live worker is
terminated (then killed) before the exception propagates.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import threading
import time
from collections.abc import Callable

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.spec import RunSpec, validate_spec
from pglimits_core.load.worker import SharedControl, WorkerPlan, worker_main
from pglimits_core.record.recorder import WorkerResult
from pglimits_core.record.results import (
    RunResult,
    WorkerStatus,
    measured_window,
    merge_worker_results,
)

START_LEAD_S = 0.2  # lets every worker see the start time before it arrives
POLL_S = 0.1
EXIT_GRACE_S = 3.0  # a dead worker's last message may still be in the pipe

# Pids of the worker processes of the runs in progress in this process. The host sampler reads
# them from its own thread to tell client CPU from server CPU, which a process-tree walk cannot
# do: the study process that runs the load also started the servers.
_active_workers: set[int] = set()
_active_workers_lock = threading.Lock()


def active_worker_pids() -> list[int]:
    """The pids of the load workers started by ``run_load`` and not yet reaped: exactly the
    client side of the run in progress (empty between runs)."""
    with _active_workers_lock:
        return sorted(_active_workers)


def _publish_workers(pids: list[int], active: bool) -> None:
    with _active_workers_lock:
        if active:
            _active_workers.update(pids)
        else:
            _active_workers.difference_update(pids)


def _plans(spec: RunSpec) -> list[WorkerPlan]:
    return [WorkerPlan(role, index, list(spec.phases), spec.seed)
            for role in spec.roles for index in range(role.workers)]


def _exit_reason(process: mp.process.BaseProcess) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        return f"worker process killed by {signal.Signals(-code).name} before reporting"
    return f"worker process exited with code {code} before reporting"


class Collector:
    """Reads the result queue and watches the processes; the parent's only waiting place."""

    def __init__(self, processes: dict, control: SharedControl, may_die: frozenset = frozenset()):
        self.processes, self.control, self.may_die = processes, control, may_die
        self.ready: set = set()
        self.results: dict[tuple[str, int], WorkerResult] = {}
        self.lost: dict[tuple[str, int], str] = {}
        self.died: dict[tuple[str, int], str] = {}  # expected deaths (``Role.may_die``)
        self.dead_since: dict[tuple[str, int], float] = {}

    def pending(self) -> list:
        return [k for k in self.processes
                if k not in self.results and k not in self.lost and k not in self.died]

    def wait(self, done, deadline: float) -> bool:
        """Collect until ``done()`` or ``deadline`` (time.monotonic); True if done in time."""
        while not done():
            if time.monotonic() > deadline:
                return False
            self._receive()
            self._notice_dead()
        return True

    def _receive(self) -> None:
        try:
            kind, key, payload = self.control.results.get(timeout=POLL_S)
        except queue.Empty:
            return
        if kind == "ready":
            self.ready.add(key)
            return
        self.results[key] = payload
        if payload.status != "ok":
            self.control.stop.value = 1

    def _notice_dead(self) -> None:
        now = time.monotonic()
        for key in self.pending():
            if self.processes[key].exitcode is None:
                continue
            if now - self.dead_since.setdefault(key, now) <= EXIT_GRACE_S:
                continue
            if key[0] in self.may_die:
                self.died[key] = _exit_reason(self.processes[key])
                continue
            self.lost[key] = _exit_reason(self.processes[key])
            self.control.stop.value = 1

    def all_ready_or_gone(self) -> bool:
        return all(k in self.ready or k in self.results or k in self.lost or k in self.died
                   for k in self.processes)

    def mark_unfinished(self, reason: str) -> None:
        for key in self.pending():
            self.lost[key] = reason


def _stop_processes(processes: dict) -> None:
    started = [p for p in processes.values() if p.pid is not None]  # a failed start() never ran
    for process in started:
        if process.is_alive():
            process.terminate()
    for process in started:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join(timeout=5)


def _statuses(collector: Collector) -> list[WorkerStatus]:
    statuses = []
    for key in collector.processes:
        result = collector.results.get(key)
        if key in collector.died:
            statuses.append(WorkerStatus(*key, "died", collector.died[key]))
        elif result is None:
            statuses.append(WorkerStatus(*key, "failed", collector.lost.get(key, "no report")))
        else:
            statuses.append(WorkerStatus(*key, result.status, result.error, result.ended_by))
    return statuses


def _start_together(spec: RunSpec, collector: Collector, control: SharedControl) -> None:
    ready_deadline = time.monotonic() + spec.open_timeout_s
    if not collector.wait(collector.all_ready_or_gone, ready_deadline):
        collector.mark_unfinished(f"did not open within open_timeout_s={spec.open_timeout_s}")
    if len(collector.ready) < len(collector.processes):
        control.stop.value = 1  # abort: a run missing workers measures something else
    control.start_ns.value = time.monotonic_ns() + round(START_LEAD_S * 1e9)
    control.go.set()


def _run_deadline(spec: RunSpec) -> float:
    drain_s = max((getattr(r.loop, "drain_s", 0.0) for r in spec.roles), default=0.0)
    return time.monotonic() + START_LEAD_S + spec.total_s + drain_s + spec.finish_timeout_s


def _parent_to_follow(spec: RunSpec) -> int | None:
    """This process, which a worker must die with; under "forkserver" a worker's OS parent is
    the fork server, not this process, so it does not follow it."""
    return None if spec.start_method == "forkserver" else os.getpid()


def run_load(spec: RunSpec, on_start: Callable[[float], None] | None = None) -> RunResult:
    """Run every role of ``spec`` in worker processes and return the merged measurements.
    ``on_start(start_s)`` is told the common start (``time.monotonic()`` seconds) as soon as it
    is published, before it arrives (the exact CPU window reads its counters from it)."""
    validate_spec(spec)
    check_start_method(spec.start_method)
    context = mp.get_context(spec.start_method)
    control = SharedControl(context.Queue(), context.Event(), context.RawValue("q", 0),
                            context.RawValue("b", 0))
    go_timeout_s = spec.open_timeout_s + 30
    processes = {plan.key: context.Process(target=worker_main, name=f"pglimits-{plan.key}",
                                           args=(plan, control, go_timeout_s, _parent_to_follow(spec)), daemon=True)
                 for plan in _plans(spec)}
    collector = Collector(processes, control, frozenset(r.name for r in spec.roles if r.may_die))
    started: list[int] = []
    try:
        for process in processes.values():
            process.start()
            started.append(process.pid)
            _publish_workers([process.pid], active=True)
        _start_together(spec, collector, control)
        if on_start is not None and not control.stop.value:
            on_start(control.start_ns.value / 1e9)
        if not collector.wait(lambda: not collector.pending(), _run_deadline(spec)):
            collector.mark_unfinished("did not finish by the run deadline (stuck in an operation?)")
        collected_s = time.monotonic()  # every worker reported: the load ended by now
    finally:
        _stop_processes(processes)
        _publish_workers(started, active=False)
    result = merge_worker_results(list(collector.results.values()), spec.phase_infos(),
                                  [r.info() for r in spec.roles], _statuses(collector), spec.describe())
    result.window_monotonic_s = measured_window(spec.phase_infos(), control.start_ns.value / 1e9, collected_s)
    return result


def check_start_method(name: str) -> None:
    if name not in mp.get_all_start_methods():
        raise PGLimitsError(f"start method {name!r} is not available here",
                            f"use one of {mp.get_all_start_methods()}")
