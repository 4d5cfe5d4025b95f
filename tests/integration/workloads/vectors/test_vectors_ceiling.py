"""The capacity experiment's tool ceiling for vectors on real servers, at the test profile's dataset size: pgbench
runs the harness's pgvector query on stored query vectors (its plan checked: the HNSW index) and
vegeta Qdrant's REST search, and each tool point is a valid run record (QPS > 0, the tool's name,
version and command lines, the plan, the server's CPU, the tool's processes as the client side)."""

from __future__ import annotations

import json
import shutil
import uuid

import pandas as pd
import pytest

from pglimits_core.record.validate import validate_run_dir
from pglimits_core.servers.fleet import Fleet
from pglimits_core.studies.runner import build_context
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.vectors.ceiling import ceiling_point
from pglimits_core.workloads.vectors.points import VARIANTS, Setup
from tests.conftest import TEST_ROOT, server_processes

pytestmark = pytest.mark.integration

KNOBS = {"clients": 2, "repetition": 0, "duration_s": 2, "warmup_s": 1, "recorded_as": "capacity"}
EF = 40


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    from pglimits_core.profiles import load_profile

    root = TEST_ROOT / f"vceiling-{uuid.uuid4().hex[:8]}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PGLIMITS_DATA_DIR", str(tmp_path_factory.mktemp("data")))  # the dataset, not data/
        fleet = Fleet(["postgres", "qdrant"], data_root=root).start()
        try:
            ctx = build_context(fleet, ceilings=False, runs_root=tmp_path_factory.mktemp("runs"))
            profile = load_profile("test")
            section = profile.section("vectors")
            setup = Setup(profile.datasets.vectors, section.m, section.ef_construction, section.recall_epsilon)
            yield StudyRun(ctx, fleet, seed=7), setup
        finally:
            pids = [pid for server in fleet.servers.values() if server.endpoint for pid in server.endpoint.pids]
            fleet.stop()
            assert not server_processes(pids), "fleet left server processes behind"
            shutil.rmtree(root, ignore_errors=True)


def check_record(run, tool: str) -> tuple[dict, dict]:
    assert run.status == "complete", run.error
    assert validate_run_dir(run.path) == []
    manifest = json.loads((run.path / "manifest.json").read_text())
    params = manifest["params"]
    assert params["experiment"] == "capacity" and params["tool"] == tool and params["ef"] == EF
    assert params["tool_version"] and manifest["client_versions"][tool] == params["tool_version"]
    assert all(command["argv"][0].endswith(tool) for command in params["tool_commands"])
    measure = [e for e in run.summary.entries if e.phase == "measure"]
    assert measure and all(e.ops_per_s > 0 for e in measure)
    samplers = pd.read_parquet(run.path / "samplers.parquet")
    assert samplers[samplers.client_processes.notna()].client_processes.max() >= 1, "the tool was not the client"
    assert manifest["cpu"]["server_cpu_pct_median"] > 0 and manifest["client_bound_reason"]
    return manifest, params["outcome"]


def test_pgbench_runs_the_harness_query_on_the_hnsw_index(study_run):
    run, setup = study_run
    recorded = ceiling_point(run, VARIANTS["pgvector hnsw"], setup, ef=EF, **KNOBS)
    manifest, outcome = check_record(recorded, "pgbench")
    script = manifest["params"]["tool_scripts"]["pgvector_topk.sql"]
    assert "\\set i random(1, 40)" in script and "(SELECT v FROM vector_ceiling_queries WHERE id = :i)" in script
    assert manifest["params"]["tool_env"] == {"PGOPTIONS": f"-c hnsw.ef_search={EF}"}
    assert outcome["ef_search_seen"] == str(EF)  # the PGOPTIONS connection's own setting
    assert "vectors_items_hnsw" in outcome["plan"] and "vectors_items_hnsw" in outcome["plan_custom"]
    assert outcome["tool_reported"]["tps"] > 0 and outcome["query_vectors"] == 40
    print(f"pgbench ef={EF}: {recorded.summary.entries[-1].ops_per_s:,.0f} QPS; {manifest['client_bound_reason']}")


def test_vegeta_runs_qdrants_rest_search(study_run):
    run, setup = study_run
    recorded = ceiling_point(run, VARIANTS["qdrant hnsw"], setup, ef=EF, **KNOBS)
    manifest, outcome = check_record(recorded, "vegeta")
    body = json.loads(manifest["params"]["tool_target_example"]["body"])
    assert body["params"] == {"hnsw_ef": EF, "exact": False} and body["limit"] == 10 and len(body["vector"]) == 32
    assert manifest["params"]["tool_targets"] == 40 and outcome["check_search_points"] == 10
    assert outcome["tool_reported"]["failed"] == 0 and outcome["tool_reported"]["ok"] > 0
    print(f"vegeta ef={EF}: {recorded.summary.entries[-1].ops_per_s:,.0f} QPS; {manifest['client_bound_reason']}")
