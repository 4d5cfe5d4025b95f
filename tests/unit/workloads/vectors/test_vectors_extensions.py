"""The vectors study's Postgres 17 variants without a server: each variant's server and options,
the SQL and knobs of pgvector 0.8 and pgvectorscale DiskANN, the filtered search's own variant
list, the plan paths a filtered point records (Postgres's EXPLAIN, Qdrant's full-scan rule),
and tables built from records that lack all of it."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from pglimits_core.datasets.vectors import VectorSpec
from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.vectors.points import VARIANTS
from pglimits_core.workloads.vectors.systems.base import Index
from pglimits_core.workloads.vectors.systems.pgvector import plan_path, query_sql
from pglimits_core.workloads.vectors.systems.pgvectorscale import BUILD_PARAMS
from pglimits_core.workloads.vectors.systems.qdrant import filter_path
from pglimits_core.workloads.vectors.systems.registry import make_system, validate_options


class FakeConn:
    """Records every statement; SHOW answers with the value last SET."""

    def __init__(self):
        self.sql, self.set = [], {}

    def execute(self, sql, params=None):
        self.sql.append(sql)
        if sql.startswith("SET "):
            name, value = sql[4:].split(" = ")
            self.set[name] = value
        row = (self.set.get(sql[5:], "?"),) if sql.startswith("SHOW ") else None
        return SimpleNamespace(fetchone=lambda: row)

    def cursor(self):
        return None


def _system(label):
    v = VARIANTS[label]
    system = make_system(v.system, SimpleNamespace(url="postgresql://x"), Index("d-m16-efc64", 16, 64), label,
                         **v.options)
    system.conn = FakeConn()
    return system


def test_each_variant_runs_on_its_own_server():
    assert {label: v.server for label, v in VARIANTS.items()} == {
        "pgvector hnsw": "postgres", "qdrant hnsw": "qdrant", "pgvector exact": "postgres",
        "pgvector 0.8 hnsw": "postgres_ext", "pgvector 0.8 hnsw iterative": "postgres_ext",
        "pgvectorscale diskann": "postgres_ext"}
    with pytest.raises(PGLimitsError, match="server"):
        validate_options("pgvector", {"server": "redis"})
    with pytest.raises(PGLimitsError, match="iterative_scan"):
        validate_options("pgvector", {"iterative_scan": "on"})


def test_pgvector_08_is_the_same_index_and_query_and_the_iterative_scan_is_its_own_setting():
    plain, iterative = _system("pgvector 0.8 hnsw"), _system("pgvector 0.8 hnsw iterative")
    plain.set_search_params(40, 10, 5)
    iterative.set_search_params(40, 10, 5)
    assert plain.conn.sql == ["SET hnsw.ef_search = 40"] and plain.sql == query_sql(10, 5)
    assert iterative.conn.sql == ["SET hnsw.ef_search = 40", "SET hnsw.iterative_scan = relaxed_order"]
    assert iterative.search_settings()["hnsw.iterative_scan"] == "relaxed_order"
    assert plain.table_tag == iterative.table_tag == "d-m16-efc64"  # one table serves both


def test_diskann_has_its_own_table_build_parameters_and_one_knob_for_ef():
    diskann = _system("pgvectorscale diskann")
    diskann.build()
    assert diskann.conn.sql[-1] == ("CREATE INDEX vectors_items_diskann_idx ON vectors_items_diskann USING diskann "
                                    "(embedding vector_ip_ops) WITH (storage_layout = memory_optimized, num_neighbors = "
                                    "32, search_list_size = 64, max_alpha = 1.2, num_bits_per_dimension = 2)")
    diskann.set_search_params(64, 10)
    assert diskann.sql == query_sql(10, None, "vectors_items_diskann")
    assert diskann.search_settings() == {"diskann.query_search_list_size": "64", "diskann.query_rescore": "64"}
    assert diskann.describe()["index"] == {"method": "diskann", "opclass": "vector_ip_ops", **BUILD_PARAMS}
    assert diskann.table_tag.startswith("d-m16-efc64-diskann-storage_layoutmemory_optimized")


EXPLAINED = {
    "vector index scan + filter": "Limit\n  ->  Index Scan using vectors_items_hnsw on vectors_items\n"
                                  "        Order By: (embedding <#> $1)\n        Filter: (tag < 10)",
    "tag B-tree + top-k sort": "Limit\n  ->  Sort\n        ->  Bitmap Heap Scan on vectors_items\n"
                               "              ->  Bitmap Index Scan on vectors_items_tag",
    "sequential scan + top-k sort": "Limit\n  ->  Sort\n        ->  Seq Scan on vectors_items",
    "vector index scan": "Limit\n  ->  Index Scan using vectors_items_hnsw on vectors_items",
}


@pytest.mark.parametrize("path", EXPLAINED)
def test_a_plan_names_its_path(path):
    assert plan_path(EXPLAINED[path], "vectors_items_hnsw", "vectors_items_tag") == path


def test_qdrant_scans_a_filtered_set_under_its_full_scan_threshold_exactly():
    # 10,000 KB holds 6,667 vectors of 384 float32 per segment
    assert filter_path(2_000, 2, 384, 10_000)["plan_path"] == "exact scan of the filtered set (expected)"
    graph = filter_path(100_000, 2, 384, 10_000)
    assert graph["plan_path"] == "HNSW graph with the filter (expected)" and graph["threshold_vectors"] == 6667
    assert graph["filtered_per_segment"] == 50_000
    # 5,000 and 8,000 per segment (50 and 80 % of 20,000 vectors): Qdrant's estimate decides
    for kept in (10_000, 16_000):
        assert filter_path(kept, 2, 384, 10_000)["plan_path"] == "near full_scan_threshold: exact or graph"


def _section(**filtered):
    from pglimits_core.workloads.vectors.profile import VectorsProfile

    return VectorsProfile(variants=["pgvector hnsw", "qdrant hnsw", "pgvector 0.8 hnsw"], ef=[40], clients=[1],
                          duration_s=1, filtered={"selectivity_pct": [10], "ef": [40], "duration_s": 1, **filtered})


def test_the_filtered_search_takes_its_own_variants_and_refuses_an_exact_one():
    from pglimits_core.workloads.vectors.plan import plan

    profile = SimpleNamespace(name="t", datasets=SimpleNamespace(vectors=VectorSpec(count=100, dim=8)))
    default = [p.label for p in plan(_section(), profile) if p.experiment == "filtered"]
    assert default == ["pgvector hnsw", "qdrant hnsw", "pgvector 0.8 hnsw"]
    points = plan(_section(variants=["pgvector 0.8 hnsw iterative", "qdrant hnsw"]), profile)
    filtered = [p for p in points if p.experiment == "filtered"]
    assert [p.label for p in filtered] == ["pgvector 0.8 hnsw iterative", "qdrant hnsw"]
    assert filtered[0].server == "postgres_ext"
    assert "pgvector 0.8 hnsw iterative" not in {p.label for p in points if p.experiment == "sweep"}
    with pytest.raises(PGLimitsError, match="filtered.variants names 'pgvector exact'"):
        plan(_section(variants=["pgvector exact"]), profile)


def _filtered_record(variant, system, plan=None):
    row = {"experiment": "filtered", "variant": variant, "system": system, "selectivity_pct": 10, "ef": 40,
           "clients": 1, "ops_per_s": 100.0, "recall_mean": 0.5, "recall_worst5_mean": 0.1, "rows_mean": 9.0,
           "rows_min": 3, "short_answers": 4, "recall_queries": 40, "filter_violations": 0, "client_bound": False}
    return {**row, "plan_path": plan} if plan else row


def test_the_filtered_table_says_which_points_recorded_no_plan():
    from pglimits_core.workloads.vectors.tables import PLAN_NOT_RECORDED, filtered_table

    old = filtered_table(pd.DataFrame([_filtered_record("pgvector hnsw", "pgvector"),
                                       _filtered_record("qdrant hnsw", "qdrant")])).set_index("variant")
    assert old.loc["pgvector hnsw", "plan"] == PLAN_NOT_RECORDED and old.loc["qdrant hnsw", "plan"] is None
    new = filtered_table(pd.DataFrame([_filtered_record("pgvector 0.8 hnsw", "pgvector", "tag B-tree + top-k sort")]))
    assert new.plan.tolist() == ["tag B-tree + top-k sort"]


def test_a_build_row_names_the_versions_its_record_holds():
    from pglimits_core.workloads.vectors.tables import versions

    assert versions(pd.DataFrame([{"pgvector_version": "0.6.2"}])) == "pgvector 0.6.2"
    assert versions(pd.DataFrame([{"server_version": "17.9", "pgvector_version": "0.8.2",
                                   "vectorscale_version": "0.9.0"}])) == "PostgreSQL 17.9, pgvector 0.8.2, pgvectorscale 0.9.0"
    assert versions(pd.DataFrame([{"rows": 5}])) is None


def test_every_postgres_index_gets_its_gap_to_qdrant_at_matched_recall():
    from pglimits_core.workloads.vectors.matched import matched_table

    def point(variant, ef, qps, recall):
        return {"variant": variant, "ef": ef, "clients": 1, "qps": qps, "qps_min": qps, "qps_max": qps,
                "recall_mean": recall}

    sweep = pd.DataFrame([point("qdrant hnsw", 10, 3000, 0.96), point("pgvector hnsw", 10, 1000, 0.96),
                          point("pgvectorscale diskann", 10, 1500, 0.96), point("pgvector 0.8 hnsw", 10, 900, 0.5)])
    matched = matched_table(sweep).set_index(["target_recall", "variant"])
    assert matched.loc[(0.95, "pgvector hnsw"), "qdrant_over_this"] == 3.0
    assert matched.loc[(0.95, "pgvectorscale diskann"), "qdrant_over_this"] == 2.0
    assert pd.isna(matched.loc[(0.95, "pgvector 0.8 hnsw"), "qdrant_over_this"])  # not reached: no gap
    assert pd.isna(matched.loc[(0.95, "qdrant hnsw"), "qdrant_over_this"])
    assert pd.isna(matched.loc[(0.99, "pgvector hnsw"), "qdrant_over_this"])  # nobody reached 0.99


def test_only_the_exact_scan_scores_its_recall_on_the_first_queries():
    from pglimits_core.workloads.vectors.plan import plan
    from pglimits_core.workloads.vectors.profile import VectorsProfile

    profile = SimpleNamespace(name="t", datasets=SimpleNamespace(vectors=VectorSpec(count=100, dim=8)))
    section = VectorsProfile(variants=["pgvector hnsw", "pgvector exact"], ef=[16, 40], clients=[1, 8],
                             repetitions=2, duration_s=1, exact_recall_queries=100)
    sweep = [p for p in plan(section, profile) if p.experiment == "sweep"]
    scored = {(p.label, p.params["ef"]): p.params["recall_queries"] for p in sweep if p.params["with_recall"]}
    assert scored == {("pgvector hnsw", 16): None, ("pgvector hnsw", 40): None, ("pgvector exact", None): 100}
