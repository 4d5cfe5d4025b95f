"""Summary: warmup excluded, offered vs achieved, sustained flag, missing percentiles."""

from pglimits_core.record.recorder import Recorder
from pglimits_core.record.results import PhaseInfo, RoleInfo, WorkerStatus, merge_worker_results
from pglimits_core.record.summary import build_summary

PHASES = [PhaseInfo("warmup", 1.0, warmup=True), PhaseInfo("measure", 2.0)]
MS = 1_000_000


def run_with(measure_ops, warmup_latency_ns=900 * MS, offered=100.0):
    recorder = Recorder("p", 0, "enqueue", 0)
    for k in range(50):  # slow warmup: must not leak into the summary
        recorder.record_op("warmup", k * MS, 1, {"latency": warmup_latency_ns, "service_time": MS})
    for k in range(measure_ops):
        recorder.record_op("measure", 10**9 + k * MS, 1, {"latency": 2 * MS, "service_time": MS})
    role = RoleInfo("p", "enqueue", "open", 1, offered_rate=offered)
    return merge_worker_results([recorder.result()], PHASES, [role], [WorkerStatus("p", 0, "ok")])


def test_warmup_is_recorded_but_excluded_from_the_summary():
    run = run_with(measure_ops=200)
    summary = build_summary(run, "run-1")
    assert [entry.phase for entry in summary.entries] == ["measure"]
    entry = summary.entries[0]
    assert entry.ops == 200 and entry.latencies["latency"].max_us < 3000
    assert "warmup" in set(run.timeseries["phase"])  # still recorded, labelled


def test_offered_vs_achieved_and_sustained_flag():
    sustained = build_summary(run_with(measure_ops=195), "a").entries[0]
    assert sustained.offered_rate == 100.0 and sustained.achieved_rate == 97.5
    assert sustained.sustained is True
    falling_behind = build_summary(run_with(measure_ops=150), "b").entries[0]
    assert falling_behind.achieved_rate == 75.0 and falling_behind.sustained is False


def test_too_few_samples_are_none_with_a_reason_in_the_summary():
    latency = build_summary(run_with(measure_ops=150), "c").entries[0].latencies["latency"]
    assert latency.p99_us is not None and latency.p999_us is None
    assert "150 samples" in latency.missing["p999"]
