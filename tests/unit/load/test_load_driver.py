"""Real worker processes with trivial in-memory operations: plumbing, failures, bounds.

No timing targets here (the machine is shared): only counts, statuses and reasons.
"""

import os
import time

import pytest

from pglimits_core.load import ClosedLoop, OpenLoop, Phase, Role, RunSpec, current_worker, run_load


class Counter:
    """Counts in memory; fails or dies on its ``n``-th call when asked to."""

    name = "count"

    def __init__(self, fail_at=None, die_at=None, fail_open=False, hang_at=None):
        self.fail_at, self.die_at, self.fail_open, self.hang_at = fail_at, die_at, fail_open, hang_at
        self.calls = 0

    def open(self):
        if self.fail_open:
            raise ConnectionRefusedError("no server here")
        self.worker = current_worker()

    def __call__(self):
        self.calls += 1
        if self.calls == self.fail_at:
            raise ValueError("bad row")
        if self.calls == self.die_at:
            os._exit(3)
        if self.calls == self.hang_at:
            time.sleep(3600)
        return 2 if self.worker.index == 0 else 0  # worker 1 only ever idles

    def close(self):
        pass


PHASES = [Phase("warmup", 0.3, warmup=True), Phase("measure", 0.5)]


def run(*roles, **kwargs):
    kwargs.setdefault("start_method", "fork")
    return run_load(RunSpec(phases=PHASES, roles=list(roles), seed=1, **kwargs))


def test_multi_role_closed_and_open_loop_run_in_processes():
    result = run(Role("busy", Counter(), workers=2, loop=ClosedLoop(idle_sleep_s=0.01)),
                 Role("paced", Counter(), workers=1, loop=OpenLoop(rate=200)))
    assert result.status == "complete", result.error
    assert {(w.role, w.worker, w.status) for w in result.workers} == {
        ("busy", 0, "ok"), ("busy", 1, "ok"), ("paced", 0, "ok")}
    busy = result.counts[("busy", "count", "measure")]
    assert busy["ops"] > 0 and busy["items"] == 2 * busy["ops"] and busy["idle_polls"] > 0
    paced = result.counts[("paced", "count", "measure")]
    assert paced["ops"] + paced["missed"] == 100  # 200/s for 0.5 s, every start accounted for
    assert ("paced", "count", "latency", "measure") in result.histograms
    assert ("busy", "count", "latency", "measure") not in result.histograms  # closed loop
    assert set(result.timeseries["phase"]) == {"warmup", "measure"}


def test_spawned_workers_work_too():
    result = run(Role("busy", Counter(), workers=2), start_method="spawn")
    assert result.status == "complete", result.error


def test_max_ops_bounds_the_role_across_workers():
    result = run(Role("busy", Counter(), workers=2, max_ops=51, loop=ClosedLoop(idle_sleep_s=0)))
    started = sum(c["ops"] + c["idle_polls"] for c in result.counts.values())
    assert started == 51
    assert {w.ended_by for w in result.workers} == {"max_ops"}


def test_an_operation_that_raises_fails_its_worker_and_the_run():
    result = run(Role("busy", Counter(fail_at=5), workers=1),
                 Role("other", Counter(), workers=1))
    assert result.status == "failed"
    worker = next(w for w in result.workers if w.role == "busy")
    assert worker.status == "failed" and "ValueError: bad row" in worker.error
    assert "busy[0]" in result.error
    assert result.counts[("busy", "count", "warmup")]["errors"] == 1


def test_a_worker_that_dies_is_reported_and_the_parent_does_not_hang():
    started = time.monotonic()
    result = run(Role("busy", Counter(die_at=10), workers=2))
    assert time.monotonic() - started < 60  # bounded by the collector, not by luck
    dead = [w for w in result.workers if w.status == "failed"]
    assert dead and all("exited with code 3" in w.error for w in dead)
    assert result.status == "failed"


def test_a_worker_that_cannot_open_aborts_the_run_with_the_reason():
    result = run(Role("busy", Counter(), workers=1), Role("db", Counter(fail_open=True)))
    assert result.status == "failed"
    db = next(w for w in result.workers if w.role == "db")
    assert "open: ConnectionRefusedError: no server here" in db.error
    busy = next(w for w in result.workers if w.role == "busy")
    assert busy.status == "failed" and "never started" in busy.error


def test_a_stuck_worker_is_terminated_at_the_deadline():
    result = run(Role("busy", Counter(hang_at=3)), finish_timeout_s=1.0)
    assert result.status == "failed" and "run deadline" in result.workers[0].error


@pytest.mark.parametrize("method", ["nonsense"])
def test_unknown_start_method_is_a_user_error(method):
    from pglimits_core.errors import PGLimitsError

    with pytest.raises(PGLimitsError):
        run(Role("busy", Counter()), start_method=method)
