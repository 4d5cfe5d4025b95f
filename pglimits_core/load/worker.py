"""The worker process: open the operation, wait for the common start, loop, report home.

Messages on the result queue (``(kind, key, payload)``, key = ``(role, index)``):
``("ready", key, None)`` once ``open()`` succeeded; ``("done", key, WorkerResult)`` at the
end, with status "failed" and the reason when open, the loop or the operation raised.
Imports stay light (no pandas) because every worker process imports this module.
"""

from __future__ import annotations

import os
import signal
import traceback
from dataclasses import dataclass
from typing import Any

from pglimits_core.load.clock import MonotonicClock
from pglimits_core.load.loops import Executor, run_closed_loop, run_open_loop
from pglimits_core.load.operation import WorkerContext, set_current_worker, set_run_start
from pglimits_core.load.schedule import NS_PER_S, intended_starts, phase_windows
from pglimits_core.load.spec import OpenLoop, Phase, Role
from pglimits_core.record.recorder import Recorder, WorkerResult


@dataclass(frozen=True)
class WorkerPlan:
    """Everything one worker needs, picklable: its role, index, the phases and the seed."""

    role: Role
    index: int
    phases: list[Phase]
    seed: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.role.name, self.index)


@dataclass
class SharedControl:
    """Parent <-> workers: result queue, go event, common start (ns) and a stop flag."""

    results: Any
    go: Any
    start_ns: Any  # multiprocessing RawValue('q')
    stop: Any  # multiprocessing RawValue('b'), read lock-free once per operation


def failure_text(error: BaseException) -> str:
    """One line for the summary plus where it happened (last frame)."""
    frame = traceback.extract_tb(error.__traceback__)[-1:] if error.__traceback__ else []
    where = f" at {frame[0].filename}:{frame[0].lineno}" if frame else ""
    return f"{type(error).__name__}: {error}{where}"


def run_plan(plan: WorkerPlan, recorder: Recorder, clock, run_start_ns: int, should_stop) -> str:
    """Run the role's loop for this worker from ``run_start_ns``; returns how it ended."""
    role = plan.role
    executor = Executor(role.operation, recorder, clock, role.max_errors)
    windows = phase_windows(plan.phases, role.active_phases, run_start_ns)
    max_ops = role.ops_share(plan.index)
    if not isinstance(role.loop, OpenLoop):
        idle_ns = round(role.loop.idle_sleep_s * NS_PER_S)
        return run_closed_loop(executor, windows, max_ops, idle_ns, should_stop)
    loop = role.loop
    schedules = [(w, intended_starts(w, loop.rate, loop.arrival, plan.index, role.workers,
                                     plan.seed, role.name)) for w in windows]
    drain_deadline_ns = windows[-1].end_ns + round(loop.drain_s * NS_PER_S) if windows else 0
    return run_open_loop(executor, schedules, max_ops, drain_deadline_ns, should_stop)


def _open(plan: WorkerPlan, control: SharedControl) -> bool:
    role = plan.role
    set_current_worker(WorkerContext(role.name, plan.index, role.workers, plan.seed))
    try:
        role.operation.open()
    except BaseException as error:
        result = WorkerResult(role.name, plan.index, role.operation.name, "failed",
                              f"open: {failure_text(error)}")
        control.results.put(("done", plan.key, result))
        return False
    control.results.put(("ready", plan.key, None))
    return True


def _close(plan: WorkerPlan) -> str | None:
    try:
        plan.role.operation.close()
    except BaseException as error:
        return f"close: {failure_text(error)}"
    return None


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent_pid: int) -> bool:
    """Ask Linux to SIGKILL this process when its parent dies: a parent killed with no chance to
    clean up (SIGKILL, OOM) must not leave a worker holding a connection or a claimed message.
    Returns False where the call is not available (then the parent's cleanup is all there is)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent_pid:  # the parent died before the request was in place
        os._exit(1)
    return True


def worker_main(plan: WorkerPlan, control: SharedControl, go_timeout_s: float,
                parent_pid: int | None = None) -> None:
    """Process entry point. Ctrl-C is the parent's business: it stops workers itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent_pid is not None:
        die_with_parent(parent_pid)
    if not _open(plan, control):
        return
    recorder = Recorder(plan.role.name, plan.index, plan.role.operation.name, 0)
    status, error, ended_by = "ok", None, "stop"
    if not control.go.wait(go_timeout_s) or control.stop.value:
        status, error = "failed", "never started: the run was aborted before the common start"
    else:
        recorder.run_start_ns = control.start_ns.value
        set_run_start(recorder.run_start_ns)
        try:
            ended_by = run_plan(plan, recorder, MonotonicClock(), recorder.run_start_ns,
                                lambda: control.stop.value != 0)
        except BaseException as exc:
            status, error = "failed", failure_text(exc)
    close_error = _close(plan)
    result = recorder.result(status, error or close_error)
    result.ended_by = ended_by
    control.results.put(("done", plan.key, result))
