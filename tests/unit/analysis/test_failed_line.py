"""A workload's results block names its failed runs and why, since their points count k of n."""

from pglimits_core.analysis.readme_results import failed_line


def record(status: str, error: str | None = None, **params) -> dict:
    return {"manifest": {"status": status, "error": error, "params": params}}


def test_failed_runs_are_named_by_reason_with_their_points():
    records = [record("complete", experiment="throughput", variant="pg_delete batch=1", consumers=4),
               record("failed", "sampler check failed: client + server CPU exceeds ...",
                      experiment="throughput", variant="pg_delete batch=1", consumers=64),
               record("failed", "sampler check failed: client + server CPU exceeds ...",
                      experiment="throughput", variant="pgmq batch=1", consumers=64),
               record("failed", "server died: postgres exited", experiment="sweep", variant="qdrant hnsw", clients=8)]
    line = failed_line(records)
    assert line.startswith("**Failed runs: 3 of 4**")
    assert "2 × sampler check failed (throughput pg_delete batch=1 @64, throughput pgmq batch=1 @64)" in line
    assert "1 × server died (sweep qdrant hnsw @8)" in line


def test_no_failed_run_adds_no_line():
    assert failed_line([record("complete", experiment="load", variant="pg_gin")]) is None
