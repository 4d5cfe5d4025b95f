"""The pub/sub study on the test profile against real Postgres and Redis, through run_workload:
every record valid and complete, every message of every fan-out, idle-listener and
commit-serialization point delivered exactly once to every subscriber, the stuck-subscriber
drill bounded in time with nothing left running, Postgres's payload limit with its exact error.
And, on live servers, a message published before a subscriber listened is not counted lost."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime

import pytest

from pglimits_core.load.driver import active_worker_pids
from pglimits_core.record.rundir import finished_runs
from pglimits_core.workloads.pubsub.ledger import account, read_json
from pglimits_core.workloads.pubsub.ops import DRAIN_LIMIT_S, PublishOp, SubscribeOp
from pglimits_core.workloads.pubsub.points import PUBLISH_DRAIN_S, variant
from tests.conftest import ExecutedNotebook

pytestmark = pytest.mark.integration

EXACT = ("fanout", "idle_listeners", "commit_serialization", "payload_limit")


def _seconds(manifest: dict) -> float:
    started, ended = (datetime.fromisoformat(manifest[k]) for k in ("created_utc", "finished_utc"))
    return (ended - started).total_seconds()


def test_the_test_profile_runs_and_accounts_for_every_message(pubsub_notebook: ExecutedNotebook):
    """The records the pub/sub notebook's own test reads (the test profile, measured once a session)."""
    runs = pubsub_notebook.runs
    outcome = pubsub_notebook.outcome("pubsub")
    assert not outcome["failures"] and not outcome["unavailable"], (outcome["failures"], outcome["unavailable"])
    manifests = [json.loads((p / "manifest.json").read_text()) for p in finished_runs(runs)]
    experiments = {m["params"]["experiment"] for m in manifests}
    assert set(EXACT) | {"stuck_subscriber"} <= experiments
    assert {m["system"] for m in manifests} == {"pg_notify", "redis_publish"}
    for manifest in manifests:
        assert manifest["status"] == "complete", manifest["error"]
        result = manifest["params"]["outcome"]
        assert manifest["servers"] and manifest["harness_ceiling"]["ops_per_s"] > 0
        if manifest["params"]["experiment"] in EXACT:
            # writers alone and the round-trip control notify nothing
            publishes = manifest["params"].get("mode") not in ("alone", "txn_without_notify")
            assert (result["expected"] > 0) == publishes and result["delivered"] == result["expected"], result
            assert result["lost"] == result["duplicates"] == result["unexpected"] == 0
            assert result["not_received_by_cutoff"] == 0
        else:  # the stuck drill: the others lose nothing; the drill ends within its bound
            assert all(s["lost"] == 0 for s in result["per_subscriber"] if s["subscriber"] != "s0")
            params = manifest["params"]
            bound = params["spec"]["phases"][0]["duration_s"] + params["spec"]["phases"][1]["duration_s"] \
                + PUBLISH_DRAIN_S + DRAIN_LIMIT_S + 15
            assert _seconds(manifest) < bound
    payload = {m["system"]: m["params"]["outcome"]["payload_sizes"] for m in manifests
               if m["params"]["experiment"] == "payload_limit"}
    refused = [p for p in payload["pg_notify"] if not p["accepted"]]
    assert refused[0]["bytes"] == 8000 and "payload string too long" in refused[0]["error"]
    assert all(p["accepted"] for p in payload["redis_publish"])
    validate = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate", str(runs)],
                              capture_output=True, text=True)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert not active_worker_pids() and not pubsub_notebook.leaked


def test_idle_listeners_past_the_default_connection_limit_run_and_their_memory_is_read(
        pubsub_notebook: ExecutedNotebook):
    """The test profile's 210 idle listeners do not fit postgres.conf's 200 connections: the
    study's Postgres started with ``postgres_max_connections`` (250) is what lets the point run;
    each idle point reads the server's PSS once its listeners are connected, and more listeners
    hold more backends (and memory) than none."""
    manifests = [json.loads((p / "manifest.json").read_text()) for p in finished_runs(pubsub_notebook.runs)]
    idle = {m["params"]["idle_listeners"]: m["params"]["outcome"] for m in manifests
            if m["params"]["experiment"] == "idle_listeners" and m["system"] == "pg_notify"}
    assert set(idle) == {0, 10, 210}
    assert {int(o["limits"]["max_connections"]) for o in idle.values()} == {250}
    held = {count: outcome["server_memory"] for count, outcome in idle.items()}
    assert all(h["idle_listeners"] == count and h["pss_mib"] > 0 for count, h in held.items())
    # a backend per listener (the study's own watcher connection may come and go between readings)
    assert held[210]["processes"] > 210 and held[210]["processes"] - held[0]["processes"] >= 205
    assert held[210]["pss_mib"] > held[0]["pss_mib"]


@pytest.mark.parametrize("system", ["pg_notify", "redis_publish"])
def test_a_message_published_before_subscribe_is_not_counted_lost(system, tmp_path, postgres_endpoint,
                                                                 redis_endpoint):
    url = (postgres_endpoint if system == "pg_notify" else redis_endpoint).url
    common = (variant(system).system, url, f"pl_early_{system}", str(tmp_path), 0.0, 60.0)
    publisher, subscriber = PublishOp(*common), SubscribeOp(*common)
    publisher.open()
    for _ in range(3):
        publisher()  # published before anyone listens: nobody can receive these
    time.sleep(0.05)
    subscriber.open()
    for _ in range(4):
        publisher()
    deadline = time.monotonic() + 5
    while subscriber.tally.publishers.get("pmain") is None or subscriber.tally.publishers["pmain"].distinct < 4:
        subscriber.receive(100, 0.1)
        assert time.monotonic() < deadline, "the four messages published after subscribe did not arrive"
    publisher.close()
    subscriber.close()
    result = account(read_json(tmp_path, "publisher-"), read_json(tmp_path, "subscriber-"))
    assert result["before_subscribe"] == 3 and result["expected"] == result["delivered"] == 4
    assert result["lost"] == 0


def test_a_subscriber_dropped_by_redis_is_counted_lost_and_the_drill_is_bounded(tmp_path, redis_endpoint):
    """Redis drops a subscriber whose output buffer passes ``client-output-buffer-limit pubsub``
    (1 MB here; the stall sends ~20 MB, past what the sockets' buffers hold): what it missed is counted lost for it alone, it rejoins, the run ends within its
    bound and leaves no worker behind."""
    import redis

    from pglimits_core.load import OpenLoop, Phase, Role, RunSpec, run_load
    from pglimits_core.workloads.pubsub.points import subscriber_role

    with redis.Redis.from_url(redis_endpoint.url, decode_responses=True) as client:
        before = client.config_get("client-output-buffer-limit")["client-output-buffer-limit"]
        client.config_set("client-output-buffer-limit", "pubsub 1mb 0 0")
        try:
            common = ("redis_publish", redis_endpoint.url, "pl_dropped", str(tmp_path), 0.3, 2.0)
            spec = RunSpec(phases=[Phase("warmup", 0.3, warmup=True), Phase("measure", 2.0)],
                           roles=[subscriber_role(common, 2, stall_s=1.5),
                                  Role("publisher", PublishOp(*common, payload_bytes=7000), workers=1,
                                       loop=OpenLoop(rate=2000, drain_s=PUBLISH_DRAIN_S))],
                           start_method="fork")
            started = time.monotonic()
            result = run_load(spec)
            took = time.monotonic() - started
        finally:
            client.config_set("client-output-buffer-limit", before)
    assert result.status == "complete", result.error
    assert took < 0.3 + 2.0 + PUBLISH_DRAIN_S + DRAIN_LIMIT_S + 10
    subscribers = read_json(tmp_path, "subscriber-")
    accounting = account(read_json(tmp_path, "publisher-"), subscribers)
    lost = {s["subscriber"]: s["lost"] for s in accounting["per_subscriber"]}
    dropped = {s["subscriber"]: s["disconnects"] for s in subscribers}
    assert lost["s0"] > 0 and dropped["s0"] >= 1
    # a loss only where Redis dropped the subscriber (on a busy box the other may fall behind too)
    assert all(dropped[name] >= 1 for name, count in lost.items() if count)
    assert not active_worker_pids()
