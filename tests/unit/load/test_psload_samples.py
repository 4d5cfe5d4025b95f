"""psload's raw sends and deliveries into the harness's summary shape, and its report into the
fan-out study's outcome (``load.tools.psload``), from synthetic logs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pglimits_core.load.tools.psload import outcome_of, read_samples, samples_result

MS = 1_000_000  # ns


def test_publishes_fall_in_the_phase_of_their_intended_time_and_deliveries_are_timed_from_it():
    sends = np.array([[100 * MS, 100 * MS + 5_000, 100 * MS + 205_000],   # warm-up
                      [600 * MS, 600 * MS + 1_000, 600 * MS + 101_000],   # measured
                      [1_499 * MS, 1_500 * MS + 10, 1_500 * MS + 300]])   # measured, began after the window: late
    deliveries = np.array([[600, 2_000], [600, 3_000], [1_499, 4_000]])   # intended ms, delivery µs
    result = samples_result(sends, deliveries, rate=2.0, publishers=1, subscribers=2, warmup_s=0.5, duration_s=1.0)
    assert [p.name for p in result.phases] == ["warmup", "measure"]
    measure = result.counts[("publisher", "publish", "measure")]
    assert (measure["ops"], measure["late"]) == (2, 1)
    assert result.counts[("publisher", "publish", "warmup")]["ops"] == 1
    latency = result.histograms[("publisher", "publish", "latency", "measure")]
    assert latency.get_total_count() == 2 and latency.get_max_value() >= 1_000
    delivery = result.histograms[("subscriber", "receive", "delivery", "measure")]
    assert delivery.get_total_count() == 3 and 3_990 <= delivery.get_max_value() <= 4_010
    # a delivery counts as received in the phase of its receipt: 1,499 ms + 4 ms is past the window
    assert result.counts[("subscriber", "receive", "measure")]["items"] == 2
    roles = {r.name: r for r in result.roles}
    assert roles["publisher"].loop == "open" and roles["publisher"].offered_rate == 2.0
    assert roles["subscriber"].workers == 2


def test_the_report_becomes_the_fan_out_studys_outcome():
    reported = {"published": 1000, "published_in_window": 800, "published_per_s": 400.0, "deliveries_per_s": 4000.0,
                "delivery": {"count": 8000, "p50_us": 900, "p99_us": 4200, "p999_us": 9000, "max_us": 12000},
                "accounting": {"expected": 10000, "delivered": 9990, "lost": 6, "not_received_by_cutoff": 4,
                               "duplicates": 0, "delivered_ratio": 0.999,
                               "per_subscriber": [{"subscriber": "s0", "lost": 6, "error": "conn reset"},
                                                  {"subscriber": "s1", "lost": 4, "error": ""}]}}
    outcome = outcome_of(reported, subscribers=10)
    assert outcome["delivery"] == {"count": 8000, "p50_ms": 0.9, "p99_ms": 4.2, "p999_ms": 9.0, "max_ms": 12.0}
    assert (outcome["lost"], outcome["not_received_by_cutoff"], outcome["subscribers"]) == (6, 4, 10)
    assert outcome["deliveries_per_s"] == 4000.0 and outcome["subscriber_errors"] == {"s0": "conn reset"}


def test_the_raw_logs_are_read_back_as_written(tmp_path):
    np.array([[1, 2, 3], [4, 5, 6]], dtype="<i8").tofile(tmp_path / "sends.bin")
    np.array([[7, 8], [9, 10]], dtype="<i4").tofile(tmp_path / "deliveries.bin")
    sends, deliveries = read_samples(tmp_path)
    assert sends.tolist() == [[1, 2, 3], [4, 5, 6]] and deliveries.tolist() == [[7, 8], [9, 10]]


def test_an_unknown_system_is_refused():
    from pglimits_core.load.tools.psload import PsloadLoad

    with pytest.raises(ValueError, match="psload drives postgres and redis"):
        PsloadLoad("kafka", "x", "c", 1, 1, 1, 64, 1, 1, binary="/bin/true")


def test_a_closed_loop_run_is_a_ceiling_with_no_offered_rate():
    sends = np.array([[600 * MS, 600 * MS, 600 * MS + 100_000]])
    result = samples_result(sends, np.zeros((0, 2), dtype=np.int64), rate=0.0, publishers=2, subscribers=1,
                            warmup_s=0.5, duration_s=1.0)
    publisher = next(r for r in result.roles if r.name == "publisher")
    assert publisher.loop == "closed" and publisher.offered_rate is None


def _one_by_one(sends: np.ndarray, deliveries: np.ndarray, warmup_s: float, duration_s: float):
    """The tally as it was kept event by event (the reference the whole-log tally must equal)."""
    from pglimits_core.load.tools.tally import PhaseTally

    tally = PhaseTally(warmup_s, duration_s, (("publisher", "publish"), ("subscriber", "receive")))
    for intended, began, done in sends.tolist():
        tally.open_loop_send("publisher", "publish", intended, began, done)
    for intended_ms, delivery_us in deliveries.tolist():
        tally.record_us("subscriber", "receive", "delivery", "measure", delivery_us)
        received_ns = intended_ms * 1e6 + delivery_us * 1e3
        if (phase := tally.phase_of(received_ns)) is not None:
            tally.counts[("subscriber", "receive", phase)]["ops"] += 1
            tally.counts[("subscriber", "receive", phase)]["items"] += 1
            tally.per_second[("subscriber", "receive", phase, int(received_ns // 1e9))]["items"] += 1
    return tally


def test_the_whole_log_tally_equals_the_event_by_event_one_value_for_value():
    """A fast server gives psload millions of events a window: the log is tallied with numpy,
    and every count, per-second row and histogram equals what the per-event tally gives —
    including latencies past the histogram's 30-min ceiling and events outside both phases."""
    rng = np.random.default_rng(3)
    intended = np.sort(rng.integers(-10**8, 2_700_000_000, 20_000))
    began = intended + rng.integers(0, 3_000_000, intended.size)
    done = began + rng.integers(0, 2_000_000, intended.size)
    done[:3] = began[:3] + 2_000_000_000_000  # clamped to 30 min
    sends = np.stack([intended, began, done], axis=1)
    deliveries = np.stack([rng.integers(0, 2_700, 50_000), rng.integers(0, 400_000, 50_000)], axis=1)
    deliveries[:2, 1] = 1_900_000_000
    fast = samples_result(sends, deliveries, rate=5000.0, publishers=2, subscribers=3, warmup_s=0.5, duration_s=2.0)
    slow = _one_by_one(sends, deliveries, 0.5, 2.0)
    assert fast.counts == slow.counts
    pd.testing.assert_frame_equal(fast.timeseries.reset_index(drop=True), slow.frame().reset_index(drop=True),
                                  check_dtype=False)
    assert set(fast.histograms) == set(slow.histograms)
    for key, histogram in slow.histograms.items():
        assert fast.histograms[key].get_total_count() == histogram.get_total_count(), key
        for percentile in (1, 50, 90, 99, 99.9, 100):
            assert fast.histograms[key].get_value_at_percentile(percentile) == \
                histogram.get_value_at_percentile(percentile), (key, percentile)
