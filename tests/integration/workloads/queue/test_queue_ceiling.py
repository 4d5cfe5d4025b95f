"""The queue's C tools on real servers (the capacity ceilings and the harness benchmark run them):
pgbench runs the Postgres queue's statements and redis-benchmark the Redis reliable queue's
commands, and each tool point is a valid run record
(ops/s > 0, the tool's name, version and command lines in the manifest, the tool's processes as
the client side of the CPU split)."""

from __future__ import annotations

import json
import shutil
import uuid

import pandas as pd
import pytest

from pglimits_core.analysis.runs import entry_rows
from pglimits_core.record.records import load_records
from pglimits_core.record.validate import validate_run_dir
from pglimits_core.servers.fleet import Fleet
from pglimits_core.studies.runner import UNSEEN_CLIENT, build_context
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.queue.ceiling import ceiling_point
from pglimits_core.workloads.queue.points import throughput_point, variant
from pglimits_core.workloads.queue.tables import queue_run_columns
from pglimits_core.workloads.queue.tool_tables import harness_bench_table
from tests.conftest import TEST_ROOT, server_processes

pytestmark = pytest.mark.integration

KNOBS = {"clients": 2, "duration_s": 2, "warmup_s": 1, "prefill_count": 60_000, "requests": 20_000,
         "recorded_as": "harness_bench"}
#: a backlog that outlasts warm-up + window on a fast box: 10 per claim took 77,000 jobs in those
#: 3 s on a CI machine (a run that drains the queue fails, as it must)
BACKLOG_PER_BATCH = {1: 60_000, 10: 300_000}
#: LPUSH, LMOVE and LREM each run this many: ~1 s apiece at 100,000 commands/s
REDIS_REQUESTS_PER_COMMAND = 100_000


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
    assert params["experiment"] == "harness_bench" and params["tool"] == tool
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
    run = ceiling_point(study_run, variant(system, batch=batch), **{**KNOBS, "prefill_count": BACKLOG_PER_BATCH[batch]})
    manifest, outcome = check_record(run, "pgbench")
    assert "LIMIT :batch" in manifest["params"]["tool_scripts"][f"{system}.sql"]
    measure = next(e for e in run.summary.entries if e.phase == "measure")
    assert measure.items == measure.ops * batch and measure.latencies["service_time"].count == measure.ops
    # every logged transaction took a full batch: the rows gone match (a few cut off by -T)
    assert outcome["logged_jobs"] <= outcome["removed"] <= outcome["logged_jobs"] + 2 * batch
    assert outcome["left_after_run"] > 0 and outcome["tool_reported"]["tps"] > 0
    print(f"{system} batch={batch}: pgbench {measure.items_per_s:,.0f} jobs/s; {manifest['client_bound_reason']}")


@pytest.mark.parametrize("options", [{"batch": 1}, {"batch": 10, "mode": "archive"}])
def test_pgbench_runs_pgmqs_own_calls(study_run, options):
    # pgmq's send_batch prefills slower than the SKIP LOCKED table: as small a backlog as will do
    backlog = {1: 20_000, 10: 200_000}[options["batch"]]
    run = ceiling_point(study_run, variant("pgmq", **options), **{**KNOBS, "prefill_count": backlog})
    manifest, outcome = check_record(run, "pgbench")
    script = manifest["params"]["tool_scripts"]["pgmq.sql"]
    assert "pgmq.read('pglimits_jobs', :vt, :batch)" in script and f"pgmq.{options.get('mode', 'delete')}(" in script
    measure = next(e for e in run.summary.entries if e.phase == "measure")
    assert measure.items == measure.ops * options["batch"]
    assert outcome["logged_jobs"] <= outcome["removed"] <= outcome["logged_jobs"] + 2 * options["batch"]
    print(f"pgmq {options}: pgbench {measure.items_per_s:,.0f} jobs/s; {manifest['client_bound_reason']}")


def test_pgbench_sessions_take_the_variants_synchronous_commit(study_run):
    # 50 per claim without waiting for the WAL flush claims ~40,000 jobs/s on a quiet box: a deeper backlog
    run = ceiling_point(study_run, variant("pg_delete", batch=50, synchronous_commit="off"),
                        **{**KNOBS, "prefill_count": 400_000})
    manifest, outcome = check_record(run, "pgbench")
    assert manifest["params"]["tool_session_settings"] == {"synchronous_commit": "off"}
    assert outcome["left_after_run"] > 0
    measure = next(e for e in run.summary.entries if e.phase == "measure")
    print(f"pg_delete batch=50 synchronous_commit=off: pgbench {measure.items_per_s:,.0f} jobs/s")


def test_harness_bench_pairs_the_harness_with_the_tool(study_run):
    """The ``harness_bench`` experiment's two records, back to back, make one row: the ratio of
    this machine and both sides' server CPU per job, checked against each other."""
    v, knobs = variant("pg_delete"), {"duration_s": 2, "warmup_s": 1, "prefill_count": 20_000}
    harness = throughput_point(study_run, v, consumers=2, recorded_as="harness_bench", **knobs)
    tool = ceiling_point(study_run, v, clients=2, requests=1, recorded_as="harness_bench", **knobs)
    assert harness.status == "complete" and tool.status == "complete", (harness.error, tool.error)
    records = [r for r in load_records("queue", study_run.ctx.runs_root) if r["path"] in (harness.path, tool.path)]
    table = harness_bench_table(entry_rows(records, queue_run_columns))
    row = table.iloc[0]
    assert len(table) == 1 and row.harness_over_tool > 0 and row.tool == "pgbench"
    assert row.server_cpu_agrees == "—" or row.server_cpu_agrees.split(";")[0] in (
        "yes", "NO (beyond 25%: check the sampler's process set)",
        "cannot tell (a run's CPU split is untrusted: busy machine or unseen client)")
    print(f"harness_bench pg_delete @2: harness {row.harness_consume_per_s:,.0f} / pgbench {row.tool_consume_per_s:,.0f} "
          f"= {row.harness_over_tool:.2f}; server CPU µs/job {row.harness_server_cpu_us_per_job} vs "
          f"{row.tool_server_cpu_us_per_job}: {row.server_cpu_agrees}")


@pytest.mark.parametrize("pipeline", [1, 16])
def test_redis_benchmark_runs_the_reliable_queue_commands(study_run, pipeline):
    # the tool's processes must live across several of the sampler's one-second readings to be
    # seen as the client: 20,000 unpipelined requests per command took under a second in all on a
    # fast CI box (one reading, at t=0, before the tool started); pipelined, ~10x the rate
    knobs = {**KNOBS, "requests": REDIS_REQUESTS_PER_COMMAND * (10 if pipeline > 1 else 1)}
    run = ceiling_point(study_run, variant("redis_reliable", pipeline=pipeline), **knobs)
    manifest, outcome = check_record(run, "redis-benchmark")
    assert [e.op for e in run.summary.entries] == ["LPUSH", "LMOVE", "LREM"]
    assert all(e.ops == knobs["requests"] for e in run.summary.entries)
    assert outcome["left_after_run"] == 0
    assert all(outcome["tool_reported"][step]["rps"] > 0 for step in ("LPUSH", "LMOVE", "LREM"))
    print(f"redis pipeline={pipeline}: " + ", ".join(f"{e.op} {e.ops_per_s:,.0f}/s" for e in run.summary.entries))
