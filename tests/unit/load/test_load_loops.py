"""Closed and open loops on a fake clock: intended-start accounting, idle polls, bounds."""

import pytest

from pglimits_core.load.loops import (
    ENDED_BY_DURATION,
    ENDED_BY_MAX_OPS,
    ENDED_BY_STOP,
    Executor,
    TooManyErrors,
    run_closed_loop,
    run_open_loop,
)
from pglimits_core.load.operation import OpOutcome
from pglimits_core.load.schedule import Window, intended_starts
from pglimits_core.record.recorder import Recorder
from tests.unit.fake_clock import ManualClock

MS = 1_000_000
S = 1_000_000_000
never = lambda: False  # noqa: E731


class SpyRecorder(Recorder):
    """Keeps every operation's latencies (ns) besides the histograms."""

    def __init__(self):
        super().__init__("role", 0, "op", 0)
        self.ops = []

    def record_op(self, phase, done_ns, items, latencies_ns):
        self.ops.append((phase, latencies_ns))
        super().record_op(phase, done_ns, items, latencies_ns)


class TimedOp:
    """Takes ``service_ns`` of fake time, except the first call at/after ``stall_at_ns``."""

    name = "timed"

    def __init__(self, clock, service_ns=100_000, stall_at_ns=None, stall_ns=0, returns=None):
        self.clock, self.service_ns = clock, service_ns
        self.stall_at_ns, self.stall_ns, self.returns = stall_at_ns, stall_ns, returns
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.stall_at_ns is not None and self.clock.now >= self.stall_at_ns:
            self.stall_at_ns = None
            self.clock.advance(self.stall_ns)
        self.clock.advance(self.service_ns)
        return self.returns(self.calls) if self.returns else None


def open_loop(op, clock, recorder, windows, rate=1000.0, max_ops=10**9, drain_ns=5 * S):
    schedules = [(w, intended_starts(w, rate, "uniform", 0, 1, 0, "r")) for w in windows]
    executor = Executor(op, recorder, clock)
    ended = run_open_loop(executor, schedules, max_ops, windows[-1].end_ns + drain_ns, never)
    return ended, executor


def test_a_stall_shows_up_as_latency_of_every_op_queued_behind_it():
    clock, recorder = ManualClock(), SpyRecorder()
    op = TimedOp(clock, service_ns=100_000, stall_at_ns=1 * S, stall_ns=1 * S)
    ended, _ = open_loop(op, clock, recorder, [Window("measure", 0, 3 * S)])
    assert ended == ENDED_BY_DURATION
    assert len(recorder.ops) == 3000  # nothing skipped: every intended start was run
    stall_end = 2 * S + 100_000
    for index, (_, lat) in enumerate(recorder.ops):
        intended = index * MS
        if 1 * S <= intended < 2 * S:
            assert lat["latency"] >= stall_end - intended - 100_000  # at least the remaining stall
        if intended != 1 * S:
            assert lat["service_time"] == 100_000  # the server was only slow once
    assert max(lat["latency"] for _, lat in recorder.ops) >= 1 * S
    late = [lat["schedule_lag"] for _, lat in recorder.ops[1001:1900]]
    assert min(late) > 0  # queued ops started late, and that lag is recorded


def test_an_op_that_is_on_time_has_no_schedule_lag():
    clock, recorder = ManualClock(), SpyRecorder()
    open_loop(TimedOp(clock), clock, recorder, [Window("measure", 0, S)])
    assert {lat["schedule_lag"] for _, lat in recorder.ops} == {0}
    assert {lat["latency"] for _, lat in recorder.ops} == {100_000}


def test_ops_are_tagged_with_the_phase_of_their_intended_start():
    clock, recorder = ManualClock(), SpyRecorder()
    windows = [Window("warmup", 0, S), Window("measure", S, 2 * S)]
    # stall at 0.9 s: ops intended before 1 s run during "measure" time but stay warmup ops
    open_loop(TimedOp(clock, stall_at_ns=900 * MS, stall_ns=300 * MS), clock, recorder, windows)
    phases = [phase for phase, _ in recorder.ops]
    assert phases.count("warmup") == 1000 and phases.count("measure") == 1000


def test_ops_started_after_their_window_ended_are_timed_and_counted_late():
    clock, recorder = ManualClock(), SpyRecorder()
    # a 400 ms stall at 0.8 s: the ops intended in 0.8-1.0 s start after the window's end
    open_loop(TimedOp(clock, stall_at_ns=800 * MS, stall_ns=400 * MS), clock, recorder,
              [Window("measure", 0, S)])
    assert len(recorder.ops) == 1000  # every one ran and was timed (its latency is real) ...
    assert 150 <= recorder.late["measure"] <= 200  # ... but these did not start in the window


def test_the_operation_sees_its_intended_start_not_the_late_actual_one():
    from pglimits_core.load.operation import intended_start_ns

    clock, recorder, seen = ManualClock(), SpyRecorder(), []

    class Stamping(TimedOp):
        def __call__(self):
            seen.append((intended_start_ns(), self.clock.now))
            return super().__call__()

    open_loop(Stamping(clock, stall_at_ns=100 * MS, stall_ns=50 * MS), clock, recorder,
              [Window("measure", 0, 200 * MS)])
    assert [intended for intended, _ in seen] == [i * MS for i in range(200)]
    assert max(actual - intended for intended, actual in seen) >= 45 * MS  # late, stamped as meant


def test_hopelessly_late_ops_are_counted_missed_after_the_drain():
    clock, recorder = ManualClock(), SpyRecorder()
    op = TimedOp(clock, stall_at_ns=500 * MS, stall_ns=10 * S)
    open_loop(op, clock, recorder, [Window("measure", 0, S)], drain_ns=1 * S)
    done = len(recorder.ops)
    assert done == 501 and recorder.missed["measure"] == 1000 - done


def test_open_loop_respects_max_ops():
    clock, recorder = ManualClock(), SpyRecorder()
    ended, executor = open_loop(TimedOp(clock), clock, recorder, [Window("m", 0, S)], max_ops=10)
    assert ended == ENDED_BY_MAX_OPS and executor.started == 10


def test_closed_loop_counts_idle_polls_apart_and_backs_off():
    clock, recorder = ManualClock(), SpyRecorder()
    op = TimedOp(clock, service_ns=MS, returns=lambda n: 0 if n % 2 else 3)  # every other empty
    executor = Executor(op, recorder, clock)
    ended = run_closed_loop(executor, [Window("measure", 0, S)], 10**9, 2 * MS, never)
    assert ended == ENDED_BY_DURATION
    counts = [sum(c[i] for c in recorder.counts.values()) for i in range(3)]
    ops, items, idle = counts
    # a busy op + an empty one with 2 ms backoff = 4 ms per pair -> 250 pairs in 1 s
    assert ops == 250 and idle == 250 and items == 750
    assert len(recorder.ops) == 250  # idle polls are not timed as operations
    assert "latency" not in recorder.ops[0][1]  # closed loop: service time only


def test_closed_loop_stops_at_max_ops_and_on_request():
    clock, recorder = ManualClock(), SpyRecorder()
    executor = Executor(TimedOp(clock), recorder, clock)
    assert run_closed_loop(executor, [Window("m", 0, S)], 7, 0, never) == ENDED_BY_MAX_OPS
    assert executor.started == 7
    executor = Executor(TimedOp(clock), recorder, clock)
    assert run_closed_loop(executor, [Window("m", 0, 10 * S)], 99, 0, lambda: True) == ENDED_BY_STOP


def test_closed_loop_waits_for_its_window():
    clock, recorder = ManualClock(), SpyRecorder()
    executor = Executor(TimedOp(clock, service_ns=10 * MS), recorder, clock)
    run_closed_loop(executor, [Window("churn", 2 * S, 3 * S)], 10**9, 0, never)
    assert len(recorder.ops) == 100 and clock.now >= 3 * S
    assert {phase for phase, _ in recorder.counts} == {"churn"}
    assert min(second for _, second in recorder.counts) == 2  # nothing ran before the window


def test_extra_latencies_from_the_operation_become_their_own_kind():
    clock, recorder = ManualClock(), SpyRecorder()
    op = TimedOp(clock, returns=lambda n: OpOutcome(2, {"end_to_end": [5 * MS, 7 * MS]}))
    Executor(op, recorder, clock).run_one("measure")
    histogram = recorder.phase_hists[("end_to_end", "measure")]
    assert histogram.get_total_count() == 2
    assert histogram.get_max_value() == pytest.approx(7000, rel=1e-3)  # µs


class Failing:
    name = "failing"

    def __call__(self):
        raise ConnectionError("server went away")


def test_errors_are_counted_then_fail_the_worker_past_max_errors():
    clock, recorder = ManualClock(), SpyRecorder()
    executor = Executor(Failing(), recorder, clock, max_errors=2)
    executor.run_one("m")
    executor.run_one("m")
    with pytest.raises(TooManyErrors, match="server went away"):
        executor.run_one("m")
    assert sum(c[3] for c in recorder.counts.values()) == 3
    assert recorder.error_samples == {"ConnectionError": "server went away"}


def test_a_bad_return_value_is_an_error_not_a_silent_count():
    clock, recorder = ManualClock(), SpyRecorder()
    with pytest.raises(TooManyErrors, match="expected None"):
        Executor(TimedOp(clock, returns=lambda n: "ok"), recorder, clock).run_one("m")
