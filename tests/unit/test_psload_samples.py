"""psload's raw sends and deliveries into the harness's summary shape, and its report into the
fan-out study's outcome (``load.tools.psload``), from synthetic logs."""

from __future__ import annotations

import numpy as np
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
