"""The vector workload's capacity designs: (engine, ef) pairs from the profile, the reading of an
open-loop query point (p99 from the intended start), and the table's recall at each design's ef,
read back from the records alone."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pglimits_core.datasets.vectors import VectorSpec
from pglimits_core.errors import PGLimitsError
from pglimits_core.experiments.capacity import CEILING, CONFIRM, PROBE
from pglimits_core.record.summary import LatencyStats, OpSummary, Summary
from pglimits_core.workloads.vectors.capacity import (
    capacity_table_of,
    items_per_s,
    reading,
    vectors_designs,
)
from pglimits_core.workloads.vectors.points import VARIANTS, Setup
from pglimits_core.workloads.vectors.profile import VectorsCapacity

SETUP = Setup(VectorSpec(count=100, dim=8, latent_dim=4, clusters=2, queries=10), 16, 64, 1e-5)
PROFILE = [VARIANTS[label] for label in ("pgvector hnsw", "qdrant hnsw", "pgvector exact")]


def spec(*designs: tuple[str, int, float], **knobs) -> VectorsCapacity:
    return VectorsCapacity(designs=[{"variant": v, "ef": ef, "recall": r} for v, ef, r in designs], **knobs)


def test_a_design_is_an_engine_at_an_ef_in_the_profiles_order_one_per_ef():
    chosen = spec(("pgvector hnsw", 64, 0.95), ("qdrant hnsw", 64, 0.95), ("pgvector hnsw", 64, 0.90),
                  ("qdrant hnsw", 128, 0.99))
    designs = vectors_designs(chosen, SETUP, PROFILE)
    assert [d.label for d in designs] == ["pgvector hnsw ef=64", "qdrant hnsw ef=64", "qdrant hnsw ef=128"]
    assert designs[0].recall_target == 0.95  # one ef named for two targets: the higher (it reaches both)
    assert [d.server for d in designs] == ["postgres", "qdrant", "qdrant"] and designs[0].uses_tool()
    assert designs[0].variant.label == "pgvector hnsw ef=64" and designs[0].variant.system == "pgvector"
    assert vectors_designs(None, SETUP, PROFILE) == []
    filtered = spec(("pgvector hnsw", 64, 0.95), ("qdrant hnsw", 64, 0.95), variants=["qdrant hnsw ef=64"])
    assert [d.label for d in vectors_designs(filtered, SETUP, PROFILE)] == ["qdrant hnsw ef=64"]


@pytest.mark.parametrize("label", ["pgvector exact", "pgvector 0.8 hnsw", "faiss"])
def test_a_design_names_an_approximate_variant_of_the_profile(label):
    with pytest.raises(PGLimitsError, match="capacity.designs"):
        vectors_designs(spec((label, 64, 0.95)), SETUP, PROFILE)


def test_a_filter_naming_no_design_is_an_error():
    with pytest.raises(PGLimitsError, match="capacity.variants"):
        vectors_designs(spec(("qdrant hnsw", 64, 0.95), variants=["qdrant hnsw"]), SETUP, PROFILE)


def entry(role: str, loop: str, ops_per_s: float, achieved: float | None = None, p99_us: int | None = None) -> OpSummary:
    latencies = {} if p99_us is None else {"latency": LatencyStats(count=1000, mean_us=900, max_us=p99_us, p50_us=800,
                                                                   p95_us=p99_us, p99_us=p99_us, p999_us=p99_us)}
    return OpSummary(role=role, op="query", phase="measure", loop=loop, workers=2, duration_s=2, ops=int(ops_per_s * 2),
                     items=int(ops_per_s * 2), idle_polls=0, errors=0, missed=0, ops_per_s=ops_per_s,
                     items_per_s=ops_per_s, offered_rate=achieved and 300.0, achieved_rate=achieved, latencies=latencies)


def test_a_rate_point_reads_the_clients_achieved_rate_and_p99_from_the_intended_start():
    summary = Summary(run_id="r", status="complete", entries=[entry("client", "open", 298, 297.5, 4_800)])
    point = reading(summary, 300.0)
    assert (point.offered, point.achieved, point.p50_us, point.p99_us, point.backlog_growth) == (300.0, 297.5, 800, 4_800, 0.0)
    empty = reading(Summary(run_id="r", status="complete", entries=[]), 300.0)
    assert empty.achieved == 0.0 and empty.p99_us is None


def test_a_ceiling_is_the_tools_or_the_harness_queries_per_second():
    assert items_per_s(Summary(run_id="c", status="complete", entries=[entry("tool", "closed", 1234.0)])) == 1234.0
    assert items_per_s(Summary(run_id="c", status="complete", entries=[entry("client", "closed", 800.0)])) == 800.0


def write(tmp_path, name: str, params: dict, summary: Summary) -> str:
    path = tmp_path / name
    path.mkdir()
    manifest = {"status": "complete", "system": "pgvector", "servers": {"postgres": {}}, "limit": {"side": "server"},
                "cpu": {"exact": {"server_cores_used": 0.6}},
                "params": {"experiment": "capacity", "variant": "pgvector hnsw ef=64", "engine": "pgvector hnsw",
                           "ef": 64, "target_recall": 0.95, **params}}
    (path / "manifest.json").write_text(json.dumps(manifest))
    (path / "summary.json").write_text(summary.model_dump_json())
    return str(path)


def test_the_table_carries_each_designs_ef_and_the_recall_measured_there(tmp_path):
    rate = {"target_p99_ms": 10.0, "offered_per_s": 300.0, "window_s": 2}
    held = Summary(run_id="p", status="complete", entries=[entry("client", "open", 300, 299.0, 4_000)])
    paths = [write(tmp_path, "ceiling", {"stage": CEILING, "clients": 8, "window_s": 2, "target_p99_ms": None},
                   Summary(run_id="c", status="complete", entries=[entry("tool", "closed", 900.0)])),
             write(tmp_path, "probe", {"stage": PROBE, **rate, "outcome": {"recall_mean": 0.962, "recall_worst5_mean": 0.7}},
                   held),
             write(tmp_path, "confirm", {"stage": CONFIRM, **rate}, held)]
    frame = pd.DataFrame({"experiment": ["capacity"] * 3, "path": paths})
    row = capacity_table_of(frame).iloc[0]
    assert list(capacity_table_of(frame).columns[:6]) == ["variant", "engine", "ef", "recall_target", "recall_mean",
                                                         "recall_worst5_mean"]
    assert (row.variant, row.engine, row.ef, row.recall_target, row.recall_mean) == ("pgvector hnsw ef=64",
                                                                                   "pgvector hnsw", 64, 0.95, 0.962)
    assert row.ceiling_per_s == 900.0 and row.capacity_per_s == 300.0 and row.confirmations == "1 of 1 held"
    assert capacity_table_of(frame.assign(experiment="sweep")).empty
