"""The sampler loop and counter arithmetic, driven by a fake clock (no real waiting)."""

import threading
import time

import pytest

from pglimits_core.samplers.base import (
    CounterRates,
    Sampler,
    SamplerSet,
    SamplerThread,
    counter_delta,
)


class FakeClock:
    """A monotonic clock that only moves when ``sleep`` is called."""

    def __init__(self, start=100.0):
        self.now = start
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


class CountingSampler(Sampler):
    name = "counting"

    def __init__(self, clock=None, cost_s=0.0, fail_on=()):
        self.calls = 0
        self.closed = 0
        self.clock = clock
        self.cost_s = cost_s
        self.fail_on = set(fail_on)

    def sample(self, now):
        self.calls += 1
        if self.clock is not None:
            self.clock.now += self.cost_s  # the sample itself takes time
        if self.calls in self.fail_on:
            raise ConnectionError("transient")
        return {"calls": self.calls}

    def close(self):
        self.closed += 1


def test_counter_delta_handles_missing_and_reset():
    assert counter_delta(10, 15) == 5
    assert counter_delta(None, 15) is None
    assert counter_delta(10, None) is None
    assert counter_delta(15, 10) is None  # reset: never a negative delta


def test_rates_across_two_samples_divide_by_elapsed_seconds():
    counters = CounterRates()
    assert counters.rates(10.0, {"wal_bytes": 1000}) == {"wal_bytes_per_s": None}
    assert counters.rates(12.0, {"wal_bytes": 5000}) == {"wal_bytes_per_s": 2000.0}


def test_rate_after_counter_reset_is_none_then_recovers():
    counters = CounterRates()
    counters.rates(1.0, {"x": 500})
    assert counters.rates(2.0, {"x": 20}) == {"x_per_s": None}
    assert counters.rates(3.0, {"x": 70}) == {"x_per_s": 50.0}


def test_deltas_are_per_interval_and_zero_elapsed_gives_no_rate():
    counters = CounterRates()
    counters.deltas(1.0, {"checkpoints_req": 3})
    assert counters.deltas(1.5, {"checkpoints_req": 4}) == {"checkpoints_req_delta": 1}
    counters.rates(5.0, {"y": 1})
    assert counters.rates(5.0, {"y": 2}) == {"y_per_s": None}


def test_loop_calls_sample_n_times_on_a_one_second_grid():
    clock = FakeClock()
    sampler = CountingSampler(clock, cost_s=0.2)
    loop = SamplerThread(sampler, clock=clock, sleep=clock.sleep, max_samples=4)
    loop.run()  # synchronously: the logic, not the thread
    assert sampler.calls == 4
    assert [row["t"] for row in loop.rows] == pytest.approx([0.0, 1.0, 2.0, 3.0])
    assert clock.sleeps == pytest.approx([0.8] * 4)
    assert loop.rows[0] == {"t": 0.0, "sampler": "counting", "calls": 1}
    assert sampler.closed == 1


def test_loop_skips_missed_slots_when_a_sample_overruns():
    clock = FakeClock()
    sampler = CountingSampler(clock, cost_s=2.5)
    loop = SamplerThread(sampler, clock=clock, sleep=clock.sleep, max_samples=2)
    loop.run()
    assert [row["t"] for row in loop.rows] == pytest.approx([0.0, 3.0])


def test_loop_survives_errors_and_counts_them():
    clock = FakeClock()
    sampler = CountingSampler(fail_on={2, 3})
    loop = SamplerThread(sampler, clock=clock, sleep=clock.sleep, max_samples=5)
    loop.run()
    assert sampler.calls == 5
    assert loop.error_count == 2
    assert loop.last_error == "ConnectionError: transient"
    assert [row["calls"] for row in loop.rows] == [1, 4, 5]


def test_t_is_relative_to_a_shared_start_time():
    clock = FakeClock(start=50.0)
    loop = SamplerThread(
        CountingSampler(), clock=clock, sleep=clock.sleep, start_time=48.5, max_samples=1
    )
    loop.run()
    assert loop.rows[0]["t"] == pytest.approx(1.5)


def test_real_thread_stops_promptly_and_closes_the_sampler():
    sampler = CountingSampler()
    loop = SamplerThread(sampler, interval_s=60.0)
    loop.start()
    time.sleep(0.05)
    started = time.monotonic()
    assert loop.stop(timeout=2.0)
    assert time.monotonic() - started < 1.0  # the wait is interrupted, not slept out
    assert sampler.calls == 1 and sampler.closed == 1


def test_stop_is_bounded_when_a_sample_hangs():
    release = threading.Event()

    class HangingSampler(Sampler):
        name = "hang"

        def sample(self, now):
            release.wait(5.0)
            return {}

    loop = SamplerThread(HangingSampler())
    loop.start()
    assert loop.stop(timeout=0.1) is False
    release.set()
    loop.join(2.0)


def test_sampler_set_runs_several_and_collects_a_dataframe():
    class Named(CountingSampler):
        def __init__(self, name):
            super().__init__()
            self.name = name

    with SamplerSet([Named("a"), Named("b")], interval_s=0.02) as samplers:
        time.sleep(0.15)
    frame = samplers.dataframe()
    assert set(frame["sampler"]) == {"a", "b"}
    assert {"t", "sampler", "calls"} <= set(frame.columns)
    assert frame["t"].is_monotonic_increasing
    assert samplers.errors() == {"a": 0, "b": 0}
    assert not any(thread.is_alive() for thread in samplers.threads)
