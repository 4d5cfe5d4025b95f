"""The crash drill against real servers: durable configurations lose no acknowledged message and
come back within a bound; Redis without persistence really loses what it acknowledged, and
Redis with an AOF comes back with it; the killed incarnation leaves no process behind and the
fleet still stops cleanly; repeated drills are records of their own."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest

from pglimits_core.record.validate import validate_run_dir
from pglimits_core.servers.fleet import Fleet
from pglimits_core.studies.runner import build_context
from pglimits_core.studies.study import StudyRun, run_points
from pglimits_core.workloads.queue.drills.recovery import recovery_point
from pglimits_core.workloads.queue.plan import recovery_points
from pglimits_core.workloads.queue.points import variant
from pglimits_core.workloads.queue.profile import RecoveryDrill
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
    run = recovery_point(StudyRun(ctx, fleet, seed=3), v, load_s=LOAD_S, rate=RATE)
    assert run.status == "complete", run.error
    assert not [p for p in old_tree if p.is_running() and p.status() != "zombie"], "orphans left"
    assert fleet.servers[v.server].health(), "restarted server does not answer"
    assert validate_run_dir(run.path) == []
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert manifest["params"]["experiment"] == "recovery" and manifest["params"]["variant"] == v.label
    assert manifest["servers"][v.server]["version"] and manifest["host"]
    outcome = run.extra
    # every record names its class and says that this drill is no durability result
    assert outcome["durability_class"] in {"per_commit", "periodic", "none"}
    assert "page cache" in outcome["drill_scope"]
    assert outcome["offered_rate"] == RATE and outcome["rate_reached"] in (True, False)
    return outcome


def test_postgres_loses_nothing_and_comes_back(fleet_and_context):
    outcome = run_drill(fleet_and_context, "pg_delete", batch=1)
    assert outcome["kill_target"] == "postgres server" and outcome["durable_config"]
    assert outcome["durability_class"] == "per_commit"
    assert outcome["confirmed"] > 0 and outcome["lost"] == 0
    # a checkpoint before the load: the WAL to replay is the load's, recorded at the kill
    assert outcome["before_load"]["checkpoint"] is True
    assert 0 < outcome["state_at_kill"]["wal_to_replay_bytes"] < 64 * 2**20
    assert outcome["present_after"] >= outcome["confirmed"]
    assert outcome["first_claim_s"] is not None and outcome["first_claim_s"] < RECOVERY_BOUND_S
    # the server's own account of the restart is kept as evidence: it replayed WAL after a crash
    assert any("automatic recovery in progress" in line for line in outcome["server_log"]), outcome["server_log"]


def test_an_unlogged_postgres_queue_loses_what_it_acknowledged_and_the_next_variant_is_logged_again(fleet_and_context):
    """The durability class "none" on Postgres: crash recovery truncates an UNLOGGED table, so
    every acknowledged enqueue is gone; the logged variant after it keeps everything again."""
    gone = run_drill(fleet_and_context, "pg_delete", batch=1, persistence="unlogged")
    assert gone["durability_class"] == "none" and not gone["durable_config"]
    assert gone["confirmed"] > 0 and gone["lost"] == gone["confirmed"]
    kept = run_drill(fleet_and_context, "pg_delete", batch=1)
    assert kept["durability_class"] == "per_commit" and kept["confirmed"] > 0 and kept["lost"] == 0


def test_sqlite_normal_loses_nothing_after_its_process_is_killed(fleet_and_context):
    outcome = run_drill(fleet_and_context, "sqlite_wal", synchronous="normal")
    assert outcome["kill_target"] == "sqlite producer" and outcome["durable_config"]
    assert outcome["durability_class"] == "periodic"
    assert outcome["confirmed"] > 0 and outcome["lost"] == 0
    assert outcome["first_claim_s"] is not None and outcome["first_claim_s"] < RECOVERY_BOUND_S


def test_redis_without_persistence_loses_what_it_acknowledged(fleet_and_context):
    outcome = run_drill(fleet_and_context, "redis_reliable")
    assert outcome["kill_target"] == "redis server" and not outcome["durable_config"]
    assert outcome["confirmed"] > 0 and outcome["lost"] == outcome["confirmed"]
    assert outcome["first_claim_s"] is None and outcome["recovery_s"] < RECOVERY_BOUND_S


def test_redis_aof_always_keeps_what_it_acknowledged_and_the_next_variant_runs_in_memory(fleet_and_context):
    """The restart after the kill must run with the AOF the variant wrote; the next variant (no
    option) on the same server must run without persistence again, and lose everything."""
    kept = run_drill(fleet_and_context, "redis_reliable", appendfsync="always")
    assert kept["durability_class"] == "per_commit" and kept["durable_config"]
    assert kept["restart_settings"] == {"appendonly": "yes", "appendfsync": "always"}
    assert kept["confirmed"] > 0 and kept["lost"] == 0
    assert kept["first_claim_s"] is not None
    assert any("AOF" in line or "loaded" in line for line in kept["server_log"]), kept["server_log"]

    gone = run_drill(fleet_and_context, "redis_reliable")
    assert gone["restart_settings"]["appendonly"] == "no" and gone["durability_class"] == "none"
    assert gone["confirmed"] > 0 and gone["lost"] == gone["confirmed"]


def test_repeated_drills_are_records_of_their_own(fleet_and_context):
    fleet, ctx = fleet_and_context
    spec = RecoveryDrill(variants=["sqlite_wal batch=1"], load_s=0.3, rate=RATE)
    spec = spec.model_copy(update={"drills": 2})
    outcome = run_points(recovery_points(spec, []), StudyRun(ctx, fleet, seed=5), "drills", progress=False)
    assert outcome.failures == []
    drills = [json.loads((run.path / "manifest.json").read_text())["params"]["drill"] for run in outcome.runs]
    assert drills == [0, 1] and len({run.path for run in outcome.runs}) == 2


def test_context_follows_the_restarted_servers(fleet_and_context):
    """Later points must reach the new incarnations (the port can change on restart)."""
    fleet, ctx = fleet_and_context
    for name in ("postgres", "redis"):
        assert ctx.endpoints[name] is fleet.servers[name].endpoint
