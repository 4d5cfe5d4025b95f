"""The crash drill against real servers: durable configurations lose no acknowledged message and
come back within a bound; Redis without persistence really loses what it acknowledged; the
killed incarnation leaves no process behind and the fleet still stops cleanly."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest

from pglimits_core.record.validate import validate_run_dir
from pglimits_core.servers.fleet import Fleet
from pglimits_core.studies.queue import variant
from pglimits_core.studies.queue_recovery import drill
from pglimits_core.studies.runner import build_context
from tests.conftest import TEST_ROOT, server_processes

pytestmark = pytest.mark.integration

LOAD_S, RATE = 1.0, 300
RECOVERY_BOUND_S = 60.0  # generous on a shared 2-core box; the seed's Postgres took 28-41 s


@pytest.fixture(scope="module")
def fleet_and_context(tmp_path_factory):
    root = TEST_ROOT / f"recovery-{uuid.uuid4().hex[:8]}"
    fleet = Fleet(["postgres", "redis", "sqlite"], data_root=root).start()
    ctx = build_context(fleet, ceilings=False, runs_root=tmp_path_factory.mktemp("runs"))
    yield fleet, ctx
    pids = [pid for server in fleet.servers.values() if server.endpoint for pid in server.endpoint.pids]
    fleet.stop()
    assert not server_processes(pids), "fleet left server processes behind"
    shutil.rmtree(root, ignore_errors=True)


def run_drill(fleet_and_context, system: str, **options):
    fleet, ctx = fleet_and_context
    v = variant(system, **options)
    old_pids = list(ctx.endpoints[v.server].pids)
    old_tree = server_processes(old_pids)  # postmaster + backends of the incarnation to kill
    run = drill(ctx, fleet.servers, v, LOAD_S, RATE, seed=3)
    assert run.status == "complete", run.error
    assert not [p for p in old_tree if p.is_running() and p.status() != "zombie"], "orphans left"
    assert fleet.servers[v.server].health(), "restarted server does not answer"
    assert validate_run_dir(run.path) == []
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert manifest["params"]["experiment"] == "recovery" and manifest["params"]["variant"] == v.label
    assert manifest["servers"][v.server]["version"] and manifest["host"]
    return run.extra


def test_postgres_loses_nothing_and_comes_back(fleet_and_context):
    outcome = run_drill(fleet_and_context, "pg_delete", batch=1)
    assert outcome["kill_target"] == "postgres server" and outcome["durable_config"]
    assert outcome["confirmed"] > 0 and outcome["lost"] == 0
    assert outcome["present_after"] >= outcome["confirmed"]
    assert outcome["first_claim_s"] is not None and outcome["first_claim_s"] < RECOVERY_BOUND_S
    # the server's own account of the restart is kept as evidence: it replayed WAL after a crash
    assert any("automatic recovery in progress" in line for line in outcome["server_log"]), outcome["server_log"]


def test_sqlite_normal_loses_nothing_after_its_process_is_killed(fleet_and_context):
    outcome = run_drill(fleet_and_context, "sqlite_wal", synchronous="normal")
    assert outcome["kill_target"] == "sqlite producer" and outcome["durable_config"]
    assert outcome["confirmed"] > 0 and outcome["lost"] == 0
    assert outcome["first_claim_s"] is not None and outcome["first_claim_s"] < RECOVERY_BOUND_S


def test_redis_without_persistence_loses_what_it_acknowledged(fleet_and_context):
    outcome = run_drill(fleet_and_context, "redis_reliable")
    assert outcome["kill_target"] == "redis server" and not outcome["durable_config"]
    assert outcome["confirmed"] > 0 and outcome["lost"] == outcome["confirmed"]
    assert outcome["first_claim_s"] is None and outcome["recovery_s"] < RECOVERY_BOUND_S


def test_context_follows_the_restarted_servers(fleet_and_context):
    """Later points must reach the new incarnations (the port can change on restart)."""
    fleet, ctx = fleet_and_context
    for name in ("postgres", "redis"):
        assert ctx.endpoints[name] is fleet.servers[name].endpoint
