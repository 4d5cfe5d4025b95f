"""The vectors study's Postgres 17 variants on a real ``postgres_ext`` server at the test
profile's dataset size: pgvector 0.8.2's HNSW and pgvectorscale 0.9's DiskANN each answer the
dataset's queries against the exact ground truth (recall above a floor), and a filtered query
on the tag column takes the path recorded for it (the tag's B-tree, or the HNSW index with the
iterative scan) and returns the exact filtered neighbours."""

from __future__ import annotations

import shutil
import uuid

import numpy as np
import pytest

from pglimits_core.servers.fleet import Fleet
from pglimits_core.workloads.vectors.points import (
    VARIANTS,
    Setup,
    answers,
    dataset,
    ensure_index,
    recall_outcome,
    score_filtered,
    system_for,
)
from pglimits_core.workloads.vectors.systems.base import filter_mask
from tests.conftest import TEST_ROOT, server_processes

pytestmark = pytest.mark.integration

EF = 100  # a generous search knob: the floor below asks each index to work, not the knob's low end
FLOOR = 0.9
SELECTIVITY = 10  # % of the vectors: 200 of the test profile's 2,000


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    from types import SimpleNamespace

    from pglimits_core.profiles import load_profile

    root = TEST_ROOT / f"vext-{uuid.uuid4().hex[:8]}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PGLIMITS_DATA_DIR", str(tmp_path_factory.mktemp("data")))  # the dataset, not data/
        fleet = Fleet(["postgres_ext"], data_root=root).start()
        try:
            profile = load_profile("test")
            section = profile.section("vectors")
            setup = Setup(profile.datasets.vectors, section.m, section.ef_construction, section.recall_epsilon)
            yield SimpleNamespace(ctx=SimpleNamespace(endpoints=dict(fleet.endpoints)), setup=setup)
        finally:
            pids = [pid for server in fleet.servers.values() if server.endpoint for pid in server.endpoint.pids]
            fleet.stop()
            assert not server_processes(pids), "fleet left server processes behind"
            shutil.rmtree(root, ignore_errors=True)


def _query(ext, label: str, below: int | None = None):
    """Build (if missing) and query ``label``'s index at EF: its answers, its plan, the data."""
    _, data = dataset(ext.setup)
    with system_for(ext.ctx, VARIANTS[label], ext.setup) as system:
        ensure_index(system, data.base)
        built = system.has_index(len(data.base))
        system.set_search_params(EF, 10, below)
        found = answers(system, data.queries)
        plan = system.search_plan(data.queries[0])
    assert built
    return data, found, plan


@pytest.mark.parametrize("label, index, versions", [
    ("pgvector 0.8 hnsw", "vectors_items_hnsw", {"vector_version": "0.8.2"}),
    ("pgvectorscale diskann", "vectors_items_diskann_idx", {"vector_version": "0.8.2", "vectorscale_version": "0.9.0"}),
])
def test_each_index_answers_near_the_exact_truth(ext, label, index, versions):
    data, found, plan = _query(ext, label)
    recall = recall_outcome(data, found, ext.setup.epsilon)
    print(f"{label} at ef {EF}: recall@10 {recall['recall_mean']:.3f} (worst 5 % {recall['recall_worst5_mean']:.3f})")
    assert recall["recall_mean"] > FLOOR and recall["rows_min"] == 10
    assert f"Index Scan using {index}" in plan["plan"] and plan["plan_path"] == "vector index scan"
    assert plan["versions"]["server_version"].startswith("17.") and plan["versions"] | versions == plan["versions"]
    assert str(EF) in plan["search_settings"].values()  # the knob is what the point set


def test_a_filtered_query_takes_the_recorded_path_and_finds_the_filtered_truth(ext):
    data, found, plan = _query(ext, "pgvector 0.8 hnsw iterative", below=SELECTIVITY)
    print(f"filtered {SELECTIVITY} %: {plan['plan_path']}\n{plan['plan']}")
    assert plan["search_settings"]["hnsw.iterative_scan"] == "relaxed_order"
    assert "tag < 10" in plan["plan"]  # the column, not mod(id, 100)
    paths = {"tag B-tree + top-k sort": "vectors_items_tag", "vector index scan + filter": "vectors_items_hnsw"}
    assert plan["plan_path"] in paths and paths[plan["plan_path"]] in plan["plan"]
    mask = filter_mask(len(data.base), SELECTIVITY)
    scored = score_filtered(data, found, mask, ext.setup.epsilon)
    assert scored["filter_violations"] == 0 and scored["short_answers"] == 0
    assert scored["recall_mean"] >= FLOOR and scored["filter_kept"] == int(np.sum(mask))
