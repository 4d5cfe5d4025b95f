"""A consumer that dies holding claims, against real servers: the crash-safe ledger keeps what it
acknowledged; every at-least-once design brings its claims back (reaper / visibility timeout)
and loses nothing; delete-mode loses exactly the batch the dead consumer held, labelled
at-most-once; each drill is a valid run record with its outcome in the manifest."""

from __future__ import annotations

import json

import pytest

from pglimits_core.load import ClosedLoop, Phase, Role, RunSpec, run_load
from pglimits_core.record.validate import validate_run_dir
from pglimits_core.servers.sqlite import SQLiteServer
from pglimits_core.studies.runner import Context
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.queue.drills.consumer_crash import (
    AT_MOST_ONCE_LOSS,
    DRAIN_GRACE_S,
    consumer_crash_point,
    read_killed,
)
from pglimits_core.workloads.queue.ops import ConsumeOp
from pglimits_core.workloads.queue.points import prefill, read_ledger, variant
from pglimits_core.workloads.queue.systems.registry import make_adapter

pytestmark = pytest.mark.integration

#: a backlog that outlasts the window: SQLite's two consumers can empty 600 messages in well under a
#: second, and a consumer that the other starved of the writer lock then never reaches its 10 acks
DRILL = {"consumers": 2, "prefill_count": 5000, "kill_after_acks": 10, "visibility_timeout_s": 1,
         "duration_s": 2.5}


@pytest.fixture
def ctx(request, server_dir, tmp_path):
    """Endpoints by server name, started only when a case needs them."""
    class Endpoints(dict):
        def __missing__(self, name):
            if name == "sqlite":
                self[name] = SQLiteServer(data_dir=server_dir).start()
            else:
                self[name] = request.getfixturevalue(f"{name}_endpoint")
            return self[name]

    return Context(Endpoints(), {}, {}, runs_root=tmp_path / "runs")


def test_a_worker_killed_after_n_acknowledgements_leaves_those_n_ids_in_the_ledger(server_dir, tmp_path):
    url = SQLiteServer(data_dir=server_dir).start().url
    with make_adapter("sqlite_wal", url) as admin:
        admin.setup()
        admin.reset()
        prefill(admin, 100, seed=1)
        consumer = ConsumeOp("sqlite_wal", url, {}, 1, str(tmp_path), 1, die_after_acks=7)
        spec = RunSpec(phases=[Phase("measure", 5.0)], roles=[
            Role("consumer", consumer, workers=1, may_die=True, loop=ClosedLoop(idle_sleep_s=0.001))],
            seed=1, start_method="fork")
        result = run_load(spec)
        assert [w.status for w in result.workers] == ["died"] and "SIGKILL" in result.workers[0].error
        assert result.status == "complete"  # an expected death is no failure
        acked = read_ledger(tmp_path, "consume")
        assert len(acked) == 7 == len(set(acked))
        held = read_killed(tmp_path)[0]["held"]
        assert len(held) == 1 and held[0] not in acked
        assert admin.depth() == 100 - 7  # the held message is still claimed, not gone


def drill(ctx, system, **options):
    v = variant(system, **options)
    run = consumer_crash_point(StudyRun(ctx, None, seed=3), v, **DRILL)
    assert run.status == "complete", run.error
    assert validate_run_dir(run.path) == []
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert manifest["params"]["experiment"] == "consumer_crash" and manifest["params"]["variant"] == v.label
    outcome = manifest["params"]["outcome"]
    assert outcome["killed_consumers"] == 1 and outcome["held_by_killed"] == v.batch
    assert outcome["in_doubt"] == 0 and outcome["unexpected"] == 0 and outcome["drain_complete"]
    return outcome


@pytest.mark.parametrize("system", ["pg_skiplocked", "pgmq", "redis_reliable", "sqlite_wal"])
def test_an_at_least_once_design_loses_nothing_when_a_consumer_dies_holding_claims(ctx, system):
    outcome = drill(ctx, system)
    assert outcome["lost"] == 0 and outcome["shown"] == "at-least-once"
    assert outcome["redelivered"] == outcome["held_by_killed"]
    # back within the visibility timeout + a reaper period + the drain's grace (Redis judges by
    # the dead connection, not age, so it may come back before the vt)
    assert 0 < outcome["redelivery_s"] < DRILL["visibility_timeout_s"] + 0.5 + DRAIN_GRACE_S
    assert outcome["produced"] == DRILL["prefill_count"]


def test_delete_mode_loses_exactly_the_batch_the_dead_consumer_held(ctx):
    outcome = drill(ctx, "pg_delete", batch=3)
    assert outcome["guarantee"] == "at-most-once" and outcome["shown"] == AT_MOST_ONCE_LOSS
    assert outcome["lost"] == outcome["lost_held"] == outcome["held_by_killed"] == 3
    assert outcome["redelivered"] == 0 and outcome["redelivery_s"] is None
