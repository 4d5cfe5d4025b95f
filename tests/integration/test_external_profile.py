"""A profile's ``external`` endpoints: the study attaches to servers it did not start (here:
servers the project started separately, standing in for a docker compose stack)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pglimits_core.config import PROFILES_DIR
from pglimits_core.record.rundir import finished_runs
from pglimits_core.registry import workload
from pglimits_core.studies.study import run_workload

pytestmark = pytest.mark.integration


def test_study_attaches_to_external_servers_and_leaves_them_running(
        postgres_endpoint, redis_endpoint, isolated_state, tmp_path, monkeypatch):
    spec = yaml.safe_load((PROFILES_DIR / "test.yaml").read_text())
    spec["queue"]["variants"] = [{"system": "pg_delete", "batch": 1}, {"system": "redis_reliable"}]
    # attaching is the point here, not every experiment (the crash and backup drills need servers
    # the study started: they kill them, or restore their files into a second instance)
    for experiment in ("recovery", "backup"):
        spec["queue"].pop(experiment)
    spec["external"] = {"postgres": postgres_endpoint.url, "redis": redis_endpoint.url}
    (tmp_path / "ext.yaml").write_text(yaml.safe_dump(spec))
    monkeypatch.setenv("PGLIMITS_PROFILES_DIR", str(tmp_path))

    outcome = run_workload(workload("queue"), "ext", tmp_path / "runs", progress=False)

    assert outcome.failures == [] and outcome.unavailable == {}
    manifests = [json.loads((p / "manifest.json").read_text()) for p in finished_runs(tmp_path / "runs")]
    assert manifests and all(m["status"] == "complete" for m in manifests)
    urls = {m["system"]: next(iter(m["servers"].values()))["settings"]["external_url"] for m in manifests}
    assert urls == {"pg_delete": postgres_endpoint.url, "redis_reliable": redis_endpoint.url}
    # attached, not owned: both servers still answer after the study stopped "its" fleet
    from pglimits_core.servers.postgres import PostgresServer
    from pglimits_core.servers.redis import RedisServer

    assert PostgresServer.probe(postgres_endpoint.url) and RedisServer.probe(redis_endpoint.url)
    assert not any(Path(isolated_state, "study").glob("postgres*"))
