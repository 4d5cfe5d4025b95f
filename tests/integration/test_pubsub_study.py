"""The pub/sub study on the test profile against real Postgres and Redis, through run_workload:
every record valid and complete, every message of every fan-out, ceiling, idle-listener and
commit-serialization point delivered exactly once to every subscriber, the stuck-subscriber
drill bounded in time with nothing left running, Postgres's payload limit with its exact error.
And, on live servers, a message published before a subscriber listened is not counted lost."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from pglimits_core.load.driver import active_worker_pids
from pglimits_core.record.rundir import finished_runs
from pglimits_core.studies.pubsub import PUBLISH_DRAIN_S, variant
from pglimits_core.studies.pubsub_ledger import account, read_json
from pglimits_core.studies.pubsub_ops import DRAIN_LIMIT_S, PublishOp, SubscribeOp
from pglimits_core.studies.study import run_workload
from pglimits_core.workloads.registry import workload
from tests.conftest import processes_using

pytestmark = pytest.mark.integration

EXACT = ("fanout", "cliff", "idle_listeners", "commit_serialization", "payload_limit")


def _seconds(manifest: dict) -> float:
    started, ended = (datetime.fromisoformat(manifest[k]) for k in ("created_utc", "finished_utc"))
    return (ended - started).total_seconds()


def test_the_test_profile_runs_and_accounts_for_every_message(tmp_path: Path, isolated_state: Path):
    runs = tmp_path / "runs"
    outcome = run_workload(workload("pubsub"), "test", runs_root=runs, progress=False)
    assert not outcome.failures and not outcome.unavailable, (outcome.failures, outcome.unavailable)
    manifests = [json.loads((p / "manifest.json").read_text()) for p in finished_runs(runs)]
    experiments = {m["params"]["experiment"] for m in manifests}
    assert set(EXACT) | {"stuck_subscriber"} <= experiments
    assert {m["system"] for m in manifests} == {"pg_notify", "redis_publish"}
    for manifest in manifests:
        assert manifest["status"] == "complete", manifest["error"]
        result = manifest["params"]["outcome"]
        assert manifest["servers"] and manifest["harness_ceiling"]["ops_per_s"] > 0
        if manifest["params"]["experiment"] in EXACT:
            publishes = manifest["params"].get("mode") != "alone"  # writers alone notify nothing
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
    assert not active_worker_pids() and not processes_using(isolated_state)


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
