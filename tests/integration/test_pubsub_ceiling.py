"""The pub/sub ``ceiling`` experiment on real servers: pgbench publishing with pg_notify and
redis-benchmark publishing with PUBLISH, each with one of the study's listeners attached, are
valid run records — the tool's name, version and command lines, the server's CPU, and how many
messages the listener received against how many were published (nothing lost here)."""

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
from pglimits_core.workloads.pubsub.ceiling import ceiling_point
from pglimits_core.workloads.pubsub.points import variant
from tests.conftest import TEST_ROOT, server_processes

pytestmark = pytest.mark.integration

KNOBS = {"publishers": 2, "listeners": 1, "duration_s": 2, "warmup_s": 1, "requests": 100_000, "payload_bytes": 64}


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    root = TEST_ROOT / f"pubsub-ceiling-{uuid.uuid4().hex[:8]}"
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
    assert params["experiment"] == "ceiling" and params["tool"] == tool and params["listeners"] == 1
    assert params["tool_version"] and manifest["client_versions"][tool] == params["tool_version"]
    # the listeners' launcher runs the tool: its exact argv follows the launcher's "--"
    argv = params["tool_commands"][0]["argv"]
    assert argv[argv.index("--") + 1].endswith(tool)
    assert run.summary.entries and all(e.ops_per_s > 0 for e in run.summary.entries)
    assert manifest["cpu"]["server_cpu_pct_median"] is not None and manifest["client_bound_reason"]
    samplers = pd.read_parquet(run.path / "samplers.parquet")
    assert samplers.client_processes.max() >= 1, "the tool and its listeners were not the client side"
    outcome = params["outcome"]
    # received vs published: every message reached the one listener
    assert outcome["published"] > 0 and outcome["expected"] == outcome["published"]
    assert outcome["received"] >= outcome["published"] and outcome["lost"] == 0
    listener = outcome["per_listener"][0]
    assert listener["reconnects"] == 0 and listener["drain_complete"] and not listener["error"]
    return manifest, outcome


def test_pgbench_publishes_with_pg_notify_to_an_attached_listener(study_run):
    run = ceiling_point(study_run, variant("pg_notify"), **KNOBS)
    manifest, outcome = check_record(run, "pgbench")
    assert "pg_notify('pl_ceiling_" in manifest["params"]["tool_scripts"]["pg_notify.sql"]
    # numbered per client like a harness publisher: the accounting found every sequence number
    assert outcome["numbered"] and outcome["delivered"] == outcome["expected"]
    assert outcome["per_listener"][0]["lost_ranges"] == {}
    measure = next(e for e in run.summary.entries if e.phase == "measure")
    print(f"pgbench pg_notify: {measure.items_per_s:,.0f} publishes/s, received {outcome['received']}"
          f"/{outcome['published']}; {manifest['client_bound_reason']}")


def test_redis_benchmark_publishes_to_an_attached_listener(study_run):
    run = ceiling_point(study_run, variant("redis_publish"), **KNOBS)
    manifest, outcome = check_record(run, "redis-benchmark")
    assert [e.op for e in run.summary.entries] == ["PUBLISH"]
    assert outcome["published"] == KNOBS["requests"] and not outcome["numbered"]
    print(f"redis-benchmark PUBLISH: {run.summary.entries[0].ops_per_s:,.0f}/s, received {outcome['received']}"
          f"/{outcome['published']}; {manifest['client_bound_reason']}")
