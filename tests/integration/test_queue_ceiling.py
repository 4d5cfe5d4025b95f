"""The ``ceiling`` experiment on real servers: pgbench runs the Postgres queue's statements and
redis-benchmark the Redis reliable queue's commands, and each tool point is a valid run record
(ops/s > 0, the tool's name, version and command lines in the manifest, the tool's processes as
the client side of the CPU split)."""

from __future__ import annotations

import json
import shutil
import uuid

import pandas as pd
import pytest

from pglimits_core.record.validate import validate_run_dir
from pglimits_core.servers.fleet import Fleet
from pglimits_core.studies.runner import UNSEEN_CLIENT, build_context
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.queue.ceiling import ceiling_point
from pglimits_core.workloads.queue.points import variant
from tests.conftest import TEST_ROOT, server_processes

pytestmark = pytest.mark.integration

KNOBS = {"clients": 2, "duration_s": 2, "warmup_s": 1, "prefill_count": 60_000, "requests": 20_000}


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    root = TEST_ROOT / f"ceiling-{uuid.uuid4().hex[:8]}"
    fleet = Fleet(["postgres", "redis"], data_root=root).start()
    ctx = build_context(fleet, ceilings=False, runs_root=tmp_path_factory.mktemp("runs"))
    yield StudyRun(ctx, fleet, seed=7)
    pids = [pid for server in fleet.servers.values() if server.endpoint for pid in server.endpoint.pids]
    fleet.stop()
    assert not server_processes(pids), "fleet left server processes behind"
    shutil.rmtree(root, ignore_errors=True)


def check_record(run, tool: str) -> tuple[dict, dict]:
    assert run.status == "complete", run.error
    assert validate_run_dir(run.path) == []
    manifest = json.loads((run.path / "manifest.json").read_text())
    params = manifest["params"]
    assert params["experiment"] == "ceiling" and params["tool"] == tool
    assert params["tool_version"] and manifest["client_versions"][tool] == params["tool_version"]
    assert all(command["argv"][0].endswith(tool) for command in params["tool_commands"])
    assert all(e.ops_per_s > 0 for e in run.summary.entries) and run.summary.entries
    samplers = pd.read_parquet(run.path / "samplers.parquet")
    host = samplers[samplers.client_processes.notna()]
    assert host.client_processes.max() >= 1, "the tool's process was not the client side"
    # the tool's process used CPU as the client; the server side was sampled (a slow, fsync-bound
    # point on a busy box can have a median of 0 % there)
    assert manifest["cpu"]["server_cpu_pct_median"] is not None
    if not manifest["cpu"]["client_cpu_pct_median"]:
        # commands shorter than the sampler's readings (fast pipelined redis-benchmark): no
        # client CPU was seen, so the record must draw no client-bound verdict from it
        assert manifest["client_bound"] is None and manifest["client_bound_reason"] == UNSEEN_CLIENT
    assert manifest["client_bound_reason"]
    return manifest, params["outcome"]


@pytest.mark.parametrize("system", ["pg_delete", "pg_skiplocked"])
@pytest.mark.parametrize("batch", [1, 10])
def test_pgbench_runs_the_queue_statements_as_a_run_record(study_run, system, batch):
    run = ceiling_point(study_run, variant(system, batch=batch), **KNOBS)
    manifest, outcome = check_record(run, "pgbench")
    assert "LIMIT :batch" in manifest["params"]["tool_scripts"][f"{system}.sql"]
    measure = next(e for e in run.summary.entries if e.phase == "measure")
    assert measure.items == measure.ops * batch and measure.latencies["service_time"].count == measure.ops
    # every logged transaction took a full batch: the rows gone match (a few cut off by -T)
    assert outcome["logged_jobs"] <= outcome["removed"] <= outcome["logged_jobs"] + 2 * batch
    assert outcome["left_after_run"] > 0 and outcome["tool_reported"]["tps"] > 0
    print(f"{system} batch={batch}: pgbench {measure.items_per_s:,.0f} jobs/s; {manifest['client_bound_reason']}")


@pytest.mark.parametrize("pipeline", [1, 16])
def test_redis_benchmark_runs_the_reliable_queue_commands(study_run, pipeline):
    # pipelined, 20k requests take a fraction of a second: too short for per-second CPU samples
    knobs = {**KNOBS, "requests": KNOBS["requests"] * (10 if pipeline > 1 else 1)}
    run = ceiling_point(study_run, variant("redis_reliable", pipeline=pipeline), **knobs)
    manifest, outcome = check_record(run, "redis-benchmark")
    assert [e.op for e in run.summary.entries] == ["LPUSH", "LMOVE", "LREM"]
    assert all(e.ops == knobs["requests"] for e in run.summary.entries)
    assert outcome["left_after_run"] == 0
    assert all(outcome["tool_reported"][step]["rps"] > 0 for step in ("LPUSH", "LMOVE", "LREM"))
    print(f"redis pipeline={pipeline}: " + ", ".join(f"{e.op} {e.ops_per_s:,.0f}/s" for e in run.summary.entries))
