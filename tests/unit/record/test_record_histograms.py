"""HDR histograms: merge across workers vs numpy on the same samples, too-few-samples rule."""

import numpy as np
import pytest

from pglimits_core.record import histograms as hist
from pglimits_core.record.recorder import Recorder
from pglimits_core.record.results import PhaseInfo, RoleInfo, WorkerStatus, merge_worker_results

HDR_RELATIVE_ERROR = 1e-3  # 3 significant digits


def worker_samples(seed, size):
    return np.random.default_rng(seed).lognormal(mean=7, sigma=1.0, size=size).astype(int) + 1


def encoded_worker_histogram(samples):
    histogram = hist.new_histogram()
    for value in samples:
        hist.record_us(histogram, int(value))
    return hist.encode(histogram)


def test_merged_percentiles_match_numpy_within_hdr_precision():
    per_worker = [worker_samples(seed, 20_000 + 1000 * seed) for seed in range(4)]
    merged = hist.merge_encoded([encoded_worker_histogram(s) for s in per_worker])
    everything = np.concatenate(per_worker)
    assert merged.get_total_count() == everything.size
    values, missing = hist.percentiles_us(merged)
    assert missing == {}
    for field, percentile in hist.PERCENTILES.items():
        exact = np.percentile(everything, percentile, method="inverted_cdf")
        assert values[field] == pytest.approx(exact, rel=2 * HDR_RELATIVE_ERROR, abs=1)
    assert merged.get_max_value() == pytest.approx(everything.max(), rel=2 * HDR_RELATIVE_ERROR)
    assert merged.get_mean_value() == pytest.approx(everything.mean(), rel=2 * HDR_RELATIVE_ERROR)


@pytest.mark.parametrize(("count", "expected_missing"), [
    (1, {"p95", "p99", "p999"}), (19, {"p95", "p99", "p999"}), (99, {"p99", "p999"}),
    (100, {"p999"}), (999, {"p999"}), (1000, set()),
])
def test_too_few_samples_rule(count, expected_missing):
    histogram = hist.new_histogram()
    for value in range(1, count + 1):
        histogram.record_value(value)
    values, missing = hist.percentiles_us(histogram)
    assert set(missing) == expected_missing
    assert {f for f, v in values.items() if v is None} == expected_missing
    for field in expected_missing:
        assert f"{count} samples" in missing[field] and str(hist.MIN_SAMPLES[field]) in missing[field]


def test_values_above_the_ceiling_are_clamped_and_counted_and_minutes_are_kept():
    """A job a 300-s hold kept waiting is kept as waited (six minutes); past 30 min, clamped."""
    recorder = Recorder("r", 0, "op", 0)
    recorder.record_op("m", 1, 1, {"latency": 360 * 10**9})
    assert recorder.clamped == 0
    assert recorder.phase_hists[("latency", "m")].get_max_value() >= 359_000_000
    recorder.record_op("m", 2, 2, {"latency": 3_600 * 10**9})
    assert recorder.clamped == 1
    assert recorder.phase_hists[("latency", "m")].get_max_value() >= 1_790_000_000


def test_nanoseconds_round_to_microseconds():
    assert [hist.ns_to_us(v) for v in (0, 499, 500, 1_499, 1_500, -5)] == [0, 0, 1, 1, 2, 0]


def test_worker_records_merge_into_run_histograms_counts_and_seconds():
    recorders = [Recorder("r", i, "op", 0) for i in range(3)]
    for i, recorder in enumerate(recorders):
        for k in range(100):
            recorder.record_op("measure", k * 10_000_000, 2, {"service_time": (i + 1) * 1000})
        recorder.record_idle("measure", 0)
    run = merge_worker_results([r.result() for r in recorders], [PhaseInfo("measure", 1.0)],
                               [RoleInfo("r", "op", "closed", 3)],
                               [WorkerStatus("r", i, "ok") for i in range(3)])
    assert run.status == "complete"
    assert run.counts[("r", "op", "measure")] == {"ops": 300, "items": 600, "idle_polls": 3,
                                                  "errors": 0, "missed": 0, "late": 0}
    merged = run.histograms[("r", "op", "service_time", "measure")]
    assert merged.get_total_count() == 300 and merged.get_max_value() == pytest.approx(3, abs=0.01)
    assert list(run.timeseries["ops"]) == [300] and list(run.timeseries["second"]) == [0]
    assert run.timeseries["service_time_count"].iloc[0] == 300


def test_a_failed_worker_fails_the_merged_run_with_its_reason():
    ok, bad = Recorder("r", 0, "op", 0), Recorder("r", 1, "op", 0)
    statuses = [WorkerStatus("r", 0, "ok"), WorkerStatus("r", 1, "failed", "boom")]
    run = merge_worker_results([ok.result(), bad.result("failed", "boom")],
                               [PhaseInfo("m", 1.0)], [RoleInfo("r", "op", "closed", 2)], statuses)
    assert run.status == "failed" and "r[1]: boom" in run.error
