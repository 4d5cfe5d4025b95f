"""Point identity, reuse of complete records, and moving a fresh run's predecessors aside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pglimits_core.studies.resume import DoneRuns, point_identity, supersede_runs

SPEC = {"seed": 7, "phases": [{"name": "measure", "duration_s": 1.0, "warmup": False}],
        "roles": [{"name": "consumer", "workers": 2, "operation": "<ConsumeOp object at 0x7f01>"}]}


def write_run(root: Path, name: str, status: str = "complete", study: str = "queue", rate: float = 300.0,
              operation: str = "<ConsumeOp object at 0x7f99>") -> Path:
    path = root / name
    path.mkdir(parents=True)
    spec = {**SPEC, "roles": [{**SPEC["roles"][0], "operation": operation}]}
    params = {"experiment": "latency", "rate": rate, "spec": spec, "outcome": {"lost": 0}, "load": {"x": 1}}
    (path / "manifest.json").write_text(json.dumps({"study": study, "system": "sqlite_wal", "status": status,
                                                    "variant": "latency:sqlite_wal batch=1", "params": params}))
    (path / "summary.json").write_text(json.dumps({"run_id": name, "status": "complete", "entries": []}))
    return path


def ask(rate: float = 300.0) -> dict:
    return {"experiment": "latency", "rate": rate, "spec": SPEC}


def test_identity_ignores_what_is_written_after_the_run_and_object_addresses():
    recorded = {**ask(), "outcome": {"lost": 0}, "load": {"x": 1},
                "spec": {**SPEC, "roles": [{**SPEC["roles"][0], "operation": "<ConsumeOp at 0xdead>"}]}}
    assert point_identity("queue", "sqlite_wal", "v", ask()) == point_identity("queue", "sqlite_wal", "v", recorded)
    assert point_identity("queue", "sqlite_wal", "v", ask()) != point_identity("queue", "sqlite_wal", "v", ask(301.0))
    assert point_identity("queue", "sqlite_wal", "v", ask()) != point_identity("queue", "redis_reliable", "v", ask())


def test_each_complete_record_is_reused_once_and_failed_ones_never(tmp_path: Path):
    write_run(tmp_path, "20261130T000001Z-queue-sqlite_wal-a")
    write_run(tmp_path, "20261130T000002Z-queue-sqlite_wal-b", status="failed")
    write_run(tmp_path, "20261130T000003Z-queue-sqlite_wal-c", rate=600.0)
    done = DoneRuns(tmp_path, "queue")
    first = done.take("queue", "sqlite_wal", "latency:sqlite_wal batch=1", ask())
    assert first is not None and first.path.name.endswith("-a") and first.status == "complete"
    assert first.extra == {"lost": 0} and first.summary is not None
    assert done.take("queue", "sqlite_wal", "latency:sqlite_wal batch=1", ask()) is None  # b failed: measure again
    assert done.take("queue", "sqlite_wal", "latency:sqlite_wal batch=1", ask(600.0)).path.name.endswith("-c")
    assert done.reused == 2


def test_records_of_other_studies_are_not_reused(tmp_path: Path):
    write_run(tmp_path, "20261130T000001Z-search-sqlite_wal-a", study="search")
    assert DoneRuns(tmp_path, "queue").take("queue", "sqlite_wal", "latency:sqlite_wal batch=1", ask()) is None


def test_a_fresh_run_moves_only_its_own_studys_records_aside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path / "data"))
    runs = tmp_path / "data" / "runs" / "quick"
    write_run(runs, "20261130T000001Z-queue-sqlite_wal-a")
    (runs / "20261130T000002Z-queue-pg_delete-b.partial").mkdir()
    other = write_run(runs, "20261130T000003Z-search-opensearch-c", study="search")
    moved = supersede_runs(runs, "queue", "quick")
    assert moved is not None and moved.parent == tmp_path / "data" / "superseded-runs" / "quick"
    assert sorted(p.name for p in moved.iterdir()) == ["20261130T000001Z-queue-sqlite_wal-a",
                                                       "20261130T000002Z-queue-pg_delete-b.partial"]
    assert [p.name for p in runs.iterdir()] == [other.name]
    assert supersede_runs(runs, "queue", "quick") is None  # nothing left to move
