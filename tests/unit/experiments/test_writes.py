"""Writes while querying, the shared experiment: the two runs it builds (queries in every phase; the
writers only while writing, at the share asked, with no drain into ``after``; the cleanup once,
under the same queries, with the grace to finish), the writers' disjoint seeded shares, and the
table and timeline read back from two records shaped as ``entry_rows`` and ``timeseries.parquet``
write them."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.experiments.writes import (
    AFTER,
    BEFORE,
    CLEANUP,
    CLEANUP_GRACE_S,
    CLEANUP_STAGE,
    EXPERIMENT,
    WRITES_STAGE,
    WRITING,
    WritesTiming,
    cleanup_spec,
    readings,
    rewrite_order,
    writes_spec,
)
from pglimits_core.experiments.writes_table import writes_columns, writes_table, writes_timeline
from pglimits_core.load.spec import ClosedLoop, OpenLoop

TIMING = WritesTiming(write_pct_per_min=6, before_s=2, writing_s=4, after_s=3, warmup_s=1, query_workers=3,
                      cleanup_s=5, writers=2)


class FakeOp:
    name = "fake"

    def open(self): ...

    def __call__(self): ...

    def close(self): ...


class FakeDesign:
    items = 10_000
    cleanup_kind = "VACUUM"

    def query_op(self):
        return FakeOp()

    def rewrite_op(self):
        return FakeOp()

    def cleanup_op(self):
        return FakeOp()

    def quality(self):
        return {"recall_mean": 0.97}

    def state(self):
        return {"dead_versions": 12}


def test_the_writes_run_queries_in_every_phase_and_writes_only_while_writing_at_the_share_asked():
    spec = writes_spec(TIMING, FakeDesign(), query_per_s=250.0, seed=7)
    assert [(p.name, p.duration_s, p.warmup) for p in spec.phases] == [
        ("warmup", 1, True), (BEFORE, 2, False), (WRITING, 4, False), (AFTER, 3, False)]
    client, writer = spec.roles
    assert client.active_phases == () and client.workers == 3 and client.loop == OpenLoop(rate=250.0, drain_s=2.0)
    # 6 % of 10,000 items per minute = 10 writes/s over 2 writers, only while writing, none run late in ``after``
    assert writer.active_phases == (WRITING,) and writer.workers == 2
    assert writer.loop.rate == pytest.approx(10.0) and writer.loop.drain_s == 0.0
    assert spec.seed == 7


def test_the_cleanup_run_keeps_the_queries_and_runs_the_cleanup_once_with_time_to_finish():
    spec = cleanup_spec(TIMING, FakeDesign(), query_per_s=250.0, seed=7)
    assert [(p.name, p.duration_s) for p in spec.phases] == [(CLEANUP, 5)]
    client, cleanup = spec.roles
    assert client.loop == OpenLoop(rate=250.0, drain_s=2.0) and client.workers == 3
    assert cleanup.max_ops == 1 and cleanup.workers == 1 and isinstance(cleanup.loop, ClosedLoop)
    assert spec.finish_timeout_s == CLEANUP_GRACE_S


def test_a_rate_of_zero_is_a_one_line_error_naming_the_fix():
    with pytest.raises(PGLimitsError, match="write_pct_per_min"):
        writes_spec(TIMING, FakeDesign(), query_per_s=0.0, seed=0)


def test_a_reading_is_the_quality_and_the_state_at_its_moment():
    assert readings(FakeDesign(), "before") == {"quality": {"before": {"recall_mean": 0.97}},
                                                "state": {"before": {"dead_versions": 12}}}


def test_writers_take_disjoint_shares_each_in_its_own_seeded_order():
    shares = [rewrite_order(1000, SimpleNamespace(index=i, workers=3, seed=10)) for i in range(3)]
    assert sorted(int(x) for share in shares for x in share) == list(range(1000))  # every id once, by one writer
    assert all((share % 3 == i).all() for i, share in enumerate(shares))
    assert list(shares[0][:5]) != sorted(shares[0][:5])  # not in id order
    assert list(rewrite_order(1000, SimpleNamespace(index=0, workers=3, seed=10))) == list(shares[0])  # seeded
    assert list(rewrite_order(1000, SimpleNamespace(index=0, workers=3, seed=11))) != list(shares[0])


KEYS = {"variant": "pgvector hnsw", "write_pct_per_min": 6, "repetition": 0}
WRITES_OUTCOME = {"query_per_s": 250.0, "write_per_s": 10.0,
                  "quality": {"before": {"recall_mean": 0.97}, "after_writes": {"recall_mean": 0.8}},
                  "state": {"before": {"index_bytes": 2**21, "server_pss_bytes": 3 * 2**20, "autovacuum_count": 4,
                                       "autoanalyze_count": 1, "deleted_total": 100},
                            "after_writes": {"dead_versions": 600, "index_bytes": 2**22, "autovacuum_count": 4,
                                             "autoanalyze_count": 2, "deleted_total": 700, "segments": None}}}
CLEANUP_OUTCOME = {"quality": {"after_cleanup": {"recall_mean": 0.96}}, "cleanup_kind": "VACUUM",
                   "state": {"after_cleanup": {"dead_versions": 0, "index_bytes": 2**22}}}


def _run(tmp_path, stage, run_id, outcome, rows, seconds):
    path = tmp_path / run_id
    path.mkdir(exist_ok=True)
    pd.DataFrame(seconds, columns=["role", "phase", "second", "ops", "latency_p99_us"]).to_parquet(
        path / "timeseries.parquet")
    run = {"run_id": run_id, "experiment": EXPERIMENT, "stage": stage, "status": "complete", "limit": "neither",
           "path": str(path), "warmup_s": 1, "before_s": 2, "writing_s": 4, "after_s": 3, "cleanup_s": 5, **KEYS,
           **writes_columns({"params": {"experiment": EXPERIMENT, "outcome": outcome}})}
    return [{**run, **row} for row in rows]


def _host_samples(path):
    """The host sampler a writes run records: its measured window 1-10 s on the samplers' axis
    (after the warm-up), the load's core 90 % busy while writing (3-7 s), 20 % otherwise."""
    import json

    path.mkdir()
    (path / "manifest.json").write_text(json.dumps({"cpu": {"window_t_s": [1.0, 10.0]}}))
    rows = [{"t": float(t), "sampler": "host", "client_cpu_pct": 90.0 if 3 < t <= 7 else 20.0,
             "server_cpu_pct": 50.0} for t in range(0, 11)]
    pd.DataFrame(rows).to_parquet(path / "samplers.parquet")


def _frame(tmp_path):
    """A point's two runs as ``entry_rows`` gives them (a row per role and measured phase) and their
    per-second series on disk, beside a run of another experiment."""
    _host_samples(tmp_path / "r1-writes")
    writes = _run(tmp_path, WRITES_STAGE, "r1-writes", WRITES_OUTCOME, [
        {"role": "client", "phase": BEFORE, "latency_p99_ms": 2.0, "achieved_rate": 249.0},
        {"role": "client", "phase": WRITING, "latency_p99_ms": 9.5, "achieved_rate": 248.0},
        {"role": "client", "phase": AFTER, "latency_p99_ms": 3.0, "achieved_rate": 250.0},
        {"role": "writer", "phase": WRITING, "achieved_rate": 9.9, "missed": 0, "errors": 0,
         "service_time_p99_ms": 4.0}],
        [("client", BEFORE, 1, 250, 2000.0), ("client", WRITING, 3, 250, 9000.0), ("writer", WRITING, 3, 10, 4000.0),
         ("client", WRITING, 6, 120, 9500.0), ("client", AFTER, 6, 130, 3500.0), ("client", AFTER, 9, 250, 3000.0)])
    cleanup = _run(tmp_path, CLEANUP_STAGE, "r2-cleanup", CLEANUP_OUTCOME, [
        {"role": "client", "phase": CLEANUP, "latency_p99_ms": 30.0, "achieved_rate": 247.0},
        {"role": "cleanup", "phase": CLEANUP, "service_time_max_ms": 4200.0}],
        [("client", CLEANUP, 0, 250, 30000.0), ("client", CLEANUP, 2, 250, 4000.0)])
    other = [{"run_id": "other", "experiment": "sweep", "variant": "pgvector hnsw", "status": "complete"}]
    return pd.DataFrame(writes + cleanup + other)


def test_the_table_joins_a_point_s_two_runs(tmp_path):
    table = writes_table(_frame(tmp_path), "recall_mean")
    assert len(table) == 1
    row = table.iloc[0]
    assert (row.p99_ms_before, row.p99_ms_writing, row.p99_ms_after, row.p99_ms_cleanup) == (2.0, 9.5, 3.0, 30.0)
    assert row.write_per_s_done == 9.9 and row.write_per_s_offered == 10.0 and row.writes_sustained
    assert row.write_p99_ms == 4.0 and row.writes_missed == 0 and row.write_errors == 0
    assert (row.recall_mean_before, row.recall_mean_after_writes, row.recall_mean_after_cleanup) == (0.97, 0.8, 0.96)
    assert row.dead_versions_after_writes == 600 and row.dead_versions_after_cleanup == 0
    assert row.versions_made_dead == 600 and row.autovacuum_runs_during == 0 and row.autoanalyze_runs_during == 1
    assert (row.index_mib_before, row.index_mib_after_writes, row.server_pss_mib_before) == (2.0, 4.0, 3.0)
    assert row.cleanup_s == 4.2 and row.cleanup_within_phase and row.cleanup_kind == "VACUUM"
    # the load's core over the writing phase alone, not diluted by the quiet seconds around it
    assert row.load_cpu_pct_writing == 90.0 and row.server_cpu_pct_writing == 50.0


def test_a_writer_short_of_its_rate_is_marked_and_a_missing_cleanup_run_reads_none(tmp_path):
    frame = _frame(tmp_path)
    frame = frame[frame.stage != CLEANUP_STAGE]
    frame.loc[frame.role == "writer", "achieved_rate"] = 9.0
    row = writes_table(frame, "recall_mean").iloc[0]
    assert not row.writes_sustained
    assert row.p99_ms_cleanup is None and row.cleanup_s is None and row.recall_mean_after_cleanup is None


def test_a_study_without_the_experiment_has_no_table():
    frame = pd.DataFrame([{"run_id": "other", "experiment": "sweep", "variant": "x"}])
    assert writes_table(frame, "recall_mean").empty and writes_timeline(frame).empty
    assert writes_columns({"params": {"experiment": "sweep", "outcome": {"a": 1}}}) == {}


def test_the_timeline_puts_both_runs_on_one_axis_with_stalls_and_the_planned_windows(tmp_path):
    timeline = writes_timeline(_frame(tmp_path))
    writes = timeline[timeline.stage == WRITES_STAGE]
    assert list(writes.second) == list(range(1, 10))  # every second from the first to the last
    assert writes.set_index("second").loc[6, "query_p99_ms"] == 9.5  # two phases in one second: the higher
    assert writes.set_index("second").loc[6, "queries"] == 250
    stalled = writes[writes.queries == 0]
    assert list(stalled.second) == [2, 4, 5, 7, 8] and stalled.query_p99_ms.isna().all()
    assert writes.set_index("second").loc[3, "writes"] == 10
    cleanup = timeline[timeline.stage == CLEANUP_STAGE]
    assert list(cleanup.second) == [15, 16, 17]  # the writes run ends at 1 + 2 + 4 + 3 = 10, then a 5-s gap
    first = timeline.iloc[0]
    assert (first.writing_from, first.writing_to, first.cleanup_from, first.cleanup_to) == (3.0, 7.0, 15, 20.0)
