"""The clock's inner loops: closed loop and open loop, for one worker, with injectable time.

Every timing decision of the project happens here, around the operation (the template
method: the operation does the verb, ``Executor.run_one`` times it). Kinds recorded (ns in,
µs in the histograms):

* ``service_time`` = completion − actual start (both loops);
* open loop only: ``latency`` = completion − *intended* start and ``schedule_lag`` = actual
  start − intended start. A worker that falls behind never skips an intended start, so a
  server stall shows up as latency of every operation queued behind it; one whose actual
  start falls after its window's end is counted *late* (not achieved: "sustained" counts only
  operations that started inside the window);
* any kind an ``OpOutcome`` carries (e.g. ``end_to_end``).

An operation is tagged with the phase its (intended, for open loop) start falls in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from pglimits_core.load.clock import Clock
from pglimits_core.load.operation import Operation, normalize_outcome, set_intended_start
from pglimits_core.load.schedule import Window
from pglimits_core.record.recorder import Recorder

#: How a loop ended: its schedule/duration ran out, it hit max_ops, or it was told to stop.
ENDED_BY_DURATION, ENDED_BY_MAX_OPS, ENDED_BY_STOP = "duration", "max_ops", "stop"


class TooManyErrors(RuntimeError):
    """An operation failed more often than its role tolerates (``Role.max_errors``)."""


class Executor:
    """Runs and times one operation at a time for one worker; counts what it did."""

    def __init__(self, operation: Operation, recorder: Recorder, clock: Clock,
                 max_errors: int = 0):
        self.operation, self.recorder, self.clock = operation, recorder, clock
        self.max_errors = max_errors
        self.errors = 0
        self.started = 0  # operations started (done, idle or failed) — what max_ops bounds

    def run_one(self, phase: str, intended_ns: int | None = None, window_end_ns: int | None = None) -> int:
        """Run the operation once; returns items done (0: idle poll or error).

        An open-loop operation that actually starts after ``window_end_ns`` (its intended start
        was inside the window, but the worker was that far behind) is still timed — its latency
        is real — and also counted *late*: it does not count toward the achieved rate."""
        self.started += 1
        started_ns = self.clock.now_ns()
        set_intended_start(started_ns if intended_ns is None else intended_ns)
        try:
            outcome = normalize_outcome(self.operation())
        except Exception as error:
            self._count_error(phase, error)
            return 0
        done_ns = self.clock.now_ns()
        if window_end_ns is not None and started_ns > window_end_ns:
            self.recorder.record_late(phase)
        if outcome.items == 0:
            self.recorder.record_idle(phase, done_ns)
        else:
            self.recorder.record_op(phase, done_ns, outcome.items,
                                    _latencies(intended_ns, started_ns, done_ns))
        if outcome.extra_latencies_ns:
            self.recorder.record_extra(phase, done_ns, outcome.extra_latencies_ns)
        return outcome.items

    def _count_error(self, phase: str, error: Exception) -> None:
        self.errors += 1
        self.recorder.record_error(phase, self.clock.now_ns(), error)
        if self.errors > self.max_errors:
            raise TooManyErrors(f"{self.errors} failed operations (max_errors={self.max_errors}); "
                                f"last: {type(error).__name__}: {error}") from error


def _latencies(intended_ns: int | None, started_ns: int, done_ns: int) -> dict[str, int]:
    latencies = {"service_time": done_ns - started_ns}
    if intended_ns is not None:
        latencies["latency"] = done_ns - intended_ns
        latencies["schedule_lag"] = started_ns - intended_ns
    return latencies


def run_closed_loop(executor: Executor, windows: list[Window], max_ops: int,
                    idle_sleep_ns: int, should_stop: Callable[[], bool]) -> str:
    """Back to back through each window; sleeps ``idle_sleep_ns`` after an idle poll."""
    clock = executor.clock
    for window in windows:
        clock.sleep_until(window.start_ns)
        while clock.now_ns() < window.end_ns:
            if executor.started >= max_ops:
                return ENDED_BY_MAX_OPS
            if should_stop():
                return ENDED_BY_STOP
            if executor.run_one(window.phase) == 0 and idle_sleep_ns:
                clock.sleep_until(clock.now_ns() + idle_sleep_ns)
    return ENDED_BY_DURATION


def run_open_loop(executor: Executor, schedules: list[tuple[Window, Iterator[int]]],
                  max_ops: int, drain_deadline_ns: int, should_stop: Callable[[], bool]) -> str:
    """Start each operation at its intended time, or at once when late (never skip one).

    ``schedules`` pairs each window with the worker's intended starts in it. Once the clock
    passes ``drain_deadline_ns`` the remaining intended starts are counted as missed.
    """
    clock = executor.clock
    for index, (window, starts) in enumerate(schedules):
        for intended_ns in starts:
            if executor.started >= max_ops:
                return ENDED_BY_MAX_OPS
            if should_stop():
                return ENDED_BY_STOP
            if clock.now_ns() > drain_deadline_ns:
                _count_missed(executor.recorder, window, starts, schedules[index + 1:])
                return ENDED_BY_DURATION
            clock.sleep_until(intended_ns)
            executor.run_one(window.phase, intended_ns, window.end_ns)
    return ENDED_BY_DURATION


def _count_missed(recorder: Recorder, window: Window, starts: Iterator[int],
                  later: list[tuple[Window, Iterator[int]]]) -> None:
    recorder.record_missed(window.phase, 1 + sum(1 for _ in starts))
    for later_window, later_starts in later:
        recorder.record_missed(later_window.phase, sum(1 for _ in later_starts))
