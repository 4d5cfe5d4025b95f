"""Per-second samplers: the measuring logic, the loop that drives it, and a set of loops.

Following Rally's telemetry devices, the *logic* (``Sampler.sample(now)``: read counters, turn
them into per-second rates) is separate from the *loop* (``SamplerThread``: call it once per
interval). The loop takes an injectable ``clock`` and ``sleep`` so unit tests drive it with a
fake clock and no real waiting.

Every row is flat: ``{"t": seconds since the set started, "sampler": name, metric: value}``;
a list of rows goes straight into ``pandas.DataFrame``.
"""

from __future__ import annotations

import abc
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

log = logging.getLogger(__name__)

Number = int | float
Row = dict[str, Any]

#: seconds between samples; one second is the resolution of every timeseries in a run record
DEFAULT_INTERVAL_S = 1.0
#: seconds ``stop()`` waits for a loop; a sample blocked longer is abandoned (the thread is a
#: daemon, so it cannot keep the interpreter alive)
DEFAULT_STOP_TIMEOUT_S = 5.0


def counter_delta(previous: Number | None, current: Number | None) -> Number | None:
    """``current - previous`` for a cumulative counter, or None when it cannot be trusted.

    A negative difference means the counter was reset (``pg_stat_reset()``, a server restart,
    ``CONFIG RESETSTAT``); reporting it as a negative rate would poison averages, so it is None.
    """
    if previous is None or current is None:
        return None
    delta = current - previous
    return None if delta < 0 else delta


class CounterRates:
    """Turns cumulative counters into per-interval deltas or per-second rates.

    Remembers each counter's last value and the time it was read, per key, so counters that
    appear later (a new table, a command first called mid-run) start cleanly with None.
    """

    def __init__(self) -> None:
        self._previous: dict[str, tuple[float, Number | None]] = {}

    def rates(self, now: float, counters: Mapping[str, Number | None]) -> dict[str, float | None]:
        """``{key + "_per_s": (current - previous) / seconds}``; None on the first read or reset."""
        return {
            f"{key}_per_s": self._step(key, now, value, per_second=True)
            for key, value in counters.items()
        }

    def deltas(self, now: float, counters: Mapping[str, Number | None]) -> dict[str, Number | None]:
        """``{key + "_delta": current - previous}`` — for rare events (checkpoints, autovacuums)."""
        return {
            f"{key}_delta": self._step(key, now, value, per_second=False)
            for key, value in counters.items()
        }

    def _step(self, key: str, now: float, value: Number | None, per_second: bool) -> Any:
        previous_time, previous_value = self._previous.get(key, (None, None))
        self._previous[key] = (now, value)
        delta = counter_delta(previous_value, value)
        if delta is None or not per_second:
            return delta
        elapsed = now - previous_time
        # two reads at the same instant (a fake or coarse clock) give no rate, not a division error
        return delta / elapsed if elapsed > 0 else None


class Sampler(abc.ABC):
    """Measuring logic for one source. ``sample(now)`` returns this second's metrics.

    ``now`` is a monotonic time in seconds from the loop's clock; samplers use it for rates so
    that tests can inject time. ``sample`` may raise: the loop counts the error and goes on.
    """

    #: the value of the ``sampler`` column
    name: str = "sampler"

    @abc.abstractmethod
    def sample(self, now: float) -> dict[str, Any]:
        """Metrics for this instant: levels as read, counters as deltas or per-second rates."""

    def close(self) -> None:  # noqa: B027 — optional hook: most samplers hold nothing
        """Release connections. Called once by the loop when it ends. Idempotent."""


class SamplerThread(threading.Thread):
    """Calls one sampler every ``interval_s`` seconds until stopped; collects its rows.

    The loop never raises: a failed sample increments ``error_count`` (and keeps ``last_error``)
    because a transient hiccup in monitoring must not abort a benchmark run. Samples are
    scheduled on a fixed grid from the start time; if a sample overruns, missed slots are
    skipped rather than bunched up.
    """

    def __init__(
        self,
        sampler: Sampler,
        interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] | None = None,
        start_time: float | None = None,
        max_samples: int | None = None,
    ) -> None:
        super().__init__(name=f"sampler-{sampler.name}", daemon=True)
        self.sampler = sampler
        self.interval_s = interval_s
        self.clock = clock
        self._stop_event = threading.Event()
        # waiting on the stop event (not time.sleep) lets stop() end the wait at once
        self.sleep = sleep or self._stop_event.wait
        self.start_time = start_time
        self.max_samples = max_samples
        self.error_count = 0
        self.last_error: str | None = None
        self._rows: list[Row] = []
        self._lock = threading.Lock()

    def run(self) -> None:
        """The loop. Also callable directly (synchronously) in tests with ``max_samples``."""
        try:
            self._loop()
        finally:
            self._close_sampler()

    def _loop(self) -> None:
        start = self.clock() if self.start_time is None else self.start_time
        next_due = self.clock()
        taken = 0
        while not self._stop_event.is_set() and not self._reached(taken):
            self._take_one(start)
            taken += 1
            next_due = self._next_slot(next_due)
            self.sleep(max(0.0, next_due - self.clock()))

    def _reached(self, taken: int) -> bool:
        return self.max_samples is not None and taken >= self.max_samples

    def _next_slot(self, previous_due: float) -> float:
        due = previous_due + self.interval_s
        now = self.clock()
        if due < now:  # overran: skip the missed slots instead of sampling back-to-back
            due += ((now - due) // self.interval_s + 1) * self.interval_s
        return due

    def _take_one(self, start: float) -> None:
        now = self.clock()
        try:
            metrics = self.sampler.sample(now)
        except Exception as error:  # noqa: BLE001 — monitoring must never end the run
            self.error_count += 1
            self.last_error = f"{type(error).__name__}: {error}"
            log.debug("sampler %s failed: %s", self.sampler.name, self.last_error)
            return
        with self._lock:
            self._rows.append({"t": now - start, "sampler": self.sampler.name, **metrics})

    def _close_sampler(self) -> None:
        try:
            self.sampler.close()
        except Exception as error:  # noqa: BLE001 — closing is best effort
            log.debug("closing sampler %s failed: %s", self.sampler.name, error)

    def request_stop(self) -> None:
        """Ask the loop to end after the current sample, without waiting."""
        self._stop_event.set()

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT_S) -> bool:
        """Ask the loop to end and wait up to ``timeout`` seconds. True if it has ended."""
        self.request_stop()
        if self.is_alive():
            self.join(timeout)
        return not self.is_alive()

    @property
    def rows(self) -> list[Row]:
        """A copy of the rows collected so far (safe to call while the loop runs)."""
        with self._lock:
            return list(self._rows)


class SamplerSet:
    """Several samplers, each in its own loop, sharing one start time; a context manager.

    ``with SamplerSet([...]) as samplers: run()`` then ``samplers.dataframe()`` — one row per
    sampler per second, columns the union of all metrics (NaN where a sampler lacks a metric).
    """

    def __init__(
        self,
        samplers: Iterable[Sampler],
        interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] | None = None,
    ) -> None:
        self.samplers = list(samplers)
        self.interval_s = interval_s
        self.clock = clock
        self.sleep = sleep
        self.threads: list[SamplerThread] = []

    def start(self) -> SamplerSet:
        start_time = self.clock()
        self.threads = [
            SamplerThread(s, self.interval_s, self.clock, self.sleep, start_time=start_time)
            for s in self.samplers
        ]
        for thread in self.threads:
            thread.start()
        return self

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT_S) -> bool:
        """Stop every loop (they wind down in parallel). True if all have ended in time."""
        for thread in self.threads:
            thread.request_stop()
        return all([thread.stop(timeout) for thread in self.threads])

    def __enter__(self) -> SamplerSet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def rows(self) -> list[Row]:
        """All rows of all samplers, ordered by time."""
        rows = [row for thread in self.threads for row in thread.rows]
        return sorted(rows, key=lambda row: row["t"])

    def errors(self) -> dict[str, int]:
        """Failed samples per sampler name (0 everywhere in a healthy run)."""
        return {thread.sampler.name: thread.error_count for thread in self.threads}

    def dataframe(self) -> Any:
        """The rows as a ``pandas.DataFrame`` (imported lazily: the loop itself needs no pandas)."""
        import pandas as pd

        return pd.DataFrame(self.rows())
