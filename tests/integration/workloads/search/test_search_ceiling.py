"""The capacity experiment's tool ceiling for search on real servers at test size: pgbench runs
Postgres GIN's ranked query and vegeta the OpenSearch request bodies over the mixed stream, each point a valid
run record (queries/s > 0, the tool's name, version and command lines in the manifest, the
tool's processes as the client side, the server's CPU sampled); and a missing vegeta stops its
point with one line naming the fix."""

from __future__ import annotations

import json
import shutil
import uuid
from types import SimpleNamespace

import pandas as pd
import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools import vegeta as vegeta_module
from pglimits_core.profiles import load_profile
from pglimits_core.record.validate import validate_run_dir
from pglimits_core.servers.fleet import Fleet
from pglimits_core.studies.runner import build_context
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.search.ceiling import ceiling_point
from pglimits_core.workloads.search.ceiling_tools import QUERY_TABLE
from pglimits_core.workloads.search.correctness import correctness_point
from pglimits_core.workloads.search.mechanism import mechanism_point
from pglimits_core.workloads.search.plan import setup_of
from pglimits_core.workloads.search.prepared import prepared
from pglimits_core.workloads.search.variant import load_variant, variant
from tests.conftest import TEST_ROOT, server_processes

pytestmark = pytest.mark.integration

KNOBS = {"stream": "mixed", "clients": 2, "duration_s": 2, "warmup_s": 1, "experiment": "capacity"}


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    root = TEST_ROOT / f"search-ceiling-{uuid.uuid4().hex[:8]}"
    fleet = Fleet(["postgres", "opensearch"], options={"opensearch": {"heap": "512m"}}, data_root=root).start()
    ctx = build_context(fleet, ceilings=False, runs_root=tmp_path_factory.mktemp("runs"))
    profile = load_profile("test")
    yield StudyRun(ctx, fleet, seed=profile.seed), setup_of(profile.section("search"), profile)
    pids = [pid for server in fleet.servers.values() if server.endpoint for pid in server.endpoint.pids]
    fleet.stop()
    assert not server_processes(pids), "fleet left server processes behind"
    shutil.rmtree(root, ignore_errors=True)


def check_record(run, tool: str) -> dict:
    assert run.status == "complete", run.error
    assert validate_run_dir(run.path) == []
    manifest = json.loads((run.path / "manifest.json").read_text())
    params = manifest["params"]
    assert params["experiment"] == "capacity" and params["tool"] == tool and params["stream"] == "mixed"
    assert params["tool_version"] and manifest["client_versions"][tool] == params["tool_version"]
    assert params["tool_commands"] and all(c["argv"][0].endswith(tool) for c in params["tool_commands"])
    measure = next(e for e in run.summary.entries if e.phase == "measure")
    assert measure.ops_per_s > 0 and measure.errors == 0 and measure.latencies["service_time"].count == measure.ops
    samplers = pd.read_parquet(run.path / "samplers.parquet")
    assert samplers[samplers.client_processes.notna()].client_processes.max() >= 1, "the tool was not the client"
    assert manifest["cpu"]["server_cpu_pct_median"], "no server CPU sampled"
    assert manifest["client_bound_reason"]
    print(f"{manifest['variant']}: {tool} {measure.ops_per_s:,.0f} qps, server "
          f"{manifest['cpu']['server_cpu_pct_median']:.0f} % of a core; {manifest['client_bound_reason']}")
    return manifest


def test_pgbench_runs_the_ranked_gin_statement(study_run):
    run, setup = study_run
    v = variant("pg_gin")
    assert correctness_point(run, v, setup).status == "complete"
    manifest = check_record(ceiling_point(run, v, setup, **KNOBS), "pgbench")
    script = manifest["params"]["tool_scripts"]["pg_gin.sql"]
    assert "ORDER BY ts_rank(tsv, q) DESC, id LIMIT 10" in script and f"FROM {QUERY_TABLE} WHERE i = :i" in script
    assert manifest["params"]["tool_session_settings"] == {"plan_cache_mode": "force_generic_plan"}


def test_vegeta_sends_the_opensearch_request_bodies(study_run):
    run, setup = study_run
    v = variant("opensearch")
    assert correctness_point(run, v, setup).status == "complete"
    manifest = check_record(ceiling_point(run, v, setup, **KNOBS), "vegeta")
    params = manifest["params"]
    assert params["tool_loop"] == "closed" and params["tool_targets"] == params["queries"]
    assert params["tool_target_example"]["url"].endswith("/search_corpus/_search")
    assert json.loads(params["tool_target_example"]["body"])["query"]["match"]["body"]["operator"] == "and"


def test_a_missing_vegeta_is_one_line(monkeypatch, tmp_path):
    # the tool is looked for before any server is touched: no server needed
    profile = load_profile("test")
    setup = setup_of(profile.section("search"), profile)
    ctx = SimpleNamespace(endpoints={"opensearch": SimpleNamespace(url="http://127.0.0.1:9")})
    run = SimpleNamespace(ctx=ctx, seed=profile.seed)
    monkeypatch.setattr(vegeta_module, "PROJECT_ROOT", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PGLimitsError) as caught:
        ceiling_point(run, variant("opensearch"), setup, **KNOBS)
    assert "\n" not in str(caught.value) and "vegeta not found" in str(caught.value) and "make setup" in str(caught.value)


def test_the_mechanism_probe_shows_ranking_reads_every_match(study_run):
    run, setup = study_run
    record = mechanism_point(run, load_variant("pg_gin"), setup, repeats=1)
    assert record.status == "complete", record.error
    buckets = record.extra["buckets"]
    assert [b["bucket"] for b in buckets] == prepared(setup).queries.decades
    for bucket in buckets:
        # ts_rank needs every matching row before the top 10 is known; the unranked match stops at 10
        assert bucket["ranked_heap_rows"] == bucket["median_matches"], bucket
        assert bucket["unranked_heap_rows"] <= 10 and bucket["ranked_ms"] > 0 and bucket["unranked_ms"] > 0
        print(f"{bucket['bucket']}: ranked {bucket['ranked_ms']:.3f} ms ({bucket['ranked_us_per_match']:.2f} µs/match, "
              f"{bucket['ranked_buffers']:.0f} buffers), unranked {bucket['unranked_ms']:.3f} ms "
              f"({bucket['unranked_buffers']:.0f} buffers)")
