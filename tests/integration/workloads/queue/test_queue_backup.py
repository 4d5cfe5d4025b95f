"""The backup/restore drill against real servers: a hot backup of a live queue (producer and
consumer running) restored on a second instance loses no confirmed message, brings back no
acknowledged one, returns the claims in flight by the design's rule, and leaves no restored
server or directory behind; a sharded SQLite queue consumed by several processes delivers every
id exactly once."""

from __future__ import annotations

import json
import multiprocessing
import shutil
import uuid
from pathlib import Path

import pytest

from pglimits_core.record.validate import validate_run_dir
from pglimits_core.servers.fleet import Fleet
from pglimits_core.studies.runner import build_context
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.queue.drills.backup import backup_point
from pglimits_core.workloads.queue.points import variant
from pglimits_core.workloads.queue.systems.registry import make_adapter
from tests.conftest import TEST_ROOT, processes_using, server_processes

pytestmark = pytest.mark.integration

QUEUE_MESSAGES, RATE, LOAD_S = 2000, 100, 1.0
RESTORE_BOUND_S = 60.0  # a 2,000-message restore takes seconds; generous on a shared box


@pytest.fixture(scope="module")
def fleet_and_context(tmp_path_factory):
    root = TEST_ROOT / f"backup-{uuid.uuid4().hex[:8]}"
    fleet = Fleet(["postgres", "redis", "sqlite"], data_root=root,
                  options={"postgres": {"settings": {"shared_buffers": "256MB"}}}).start()
    ctx = build_context(fleet, ceilings=False, runs_root=tmp_path_factory.mktemp("runs"))
    yield fleet, ctx, root
    pids = [pid for server in fleet.servers.values() if server.endpoint for pid in server.endpoint.pids]
    fleet.stop()
    assert not server_processes(pids), "fleet left server processes behind"
    shutil.rmtree(root, ignore_errors=True)


def run_drill(fleet_and_context, system: str, **options) -> dict:
    fleet, ctx, root = fleet_and_context
    v = variant(system, **options)
    run = backup_point(StudyRun(ctx, fleet, seed=7), v, queue_messages=QUEUE_MESSAGES, rate=RATE, load_s=LOAD_S)
    assert run.status == "complete", run.error
    assert validate_run_dir(run.path) == []
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert manifest["params"]["experiment"] == "backup" and manifest["params"]["variant"] == v.label
    assert manifest["params"]["queue_messages"] == QUEUE_MESSAGES
    outcome = run.extra
    # the restored instance is gone, with its directory and every process that used it
    restored = Path(outcome["restore_dir"])
    assert not restored.exists() and not processes_using(restored), "restored server left behind"
    assert not Path(outcome["backup_dir"]).exists()
    assert fleet.servers[v.server].health(), "the source server must keep running"
    # the queue had its stated size, the load ran, and the accounting covers every id
    assert outcome["queue_messages"] == QUEUE_MESSAGES and outcome["queue_bytes"] > 0
    assert outcome["confirmed_before_backup"] > QUEUE_MESSAGES  # the prefill + the producer's
    assert outcome["acked_before_backup"] > 0
    assert outcome["backup_s"] > 0 and outcome["backup_bytes"] > 0
    assert 0 < outcome["restore_to_first_claim_s"] < RESTORE_BOUND_S
    assert outcome["drain_complete"] and outcome["duplicates"] == 0 and outcome["unknown_ids"] == 0
    assert outcome["acked_reappeared"] == 0, outcome["acked_reappeared_sample"]
    assert outcome["lost"] == 0, outcome["lost_sample"]
    assert outcome["durability_class"] in {"per_commit", "periodic", "none"}
    return outcome


def returned_unless_acked_meanwhile(outcome: dict) -> bool:
    """At-least-once: a claim in flight at the backup's start is in the restore, unless its
    acknowledgement came after the start but before the snapshot point."""
    expected_at_least = outcome["in_flight_at_backup"] - outcome["in_flight_acked_during_backup"]
    return expected_at_least <= outcome["in_flight_returned"] <= outcome["in_flight_at_backup"]


def test_postgres_two_phase_base_backup_restores_with_its_claims_in_flight(fleet_and_context):
    outcome = run_drill(fleet_and_context, "pg_skiplocked", batch=1)
    assert outcome["method"].startswith("pg_basebackup") and "-X stream" in outcome["backup"]["command"]
    # the replication connection it needed, read back from the server and recorded
    replication = outcome["replication"]
    assert replication["wal_level"] in ("replica", "logical") and int(replication["max_wal_senders"]) >= 2
    assert any(rule["address"] == "127.0.0.1" for rule in replication["pg_hba_replication"])
    # at-least-once: what was claimed and not acked at the backup is claimed in the copy too
    assert returned_unless_acked_meanwhile(outcome), outcome
    assert outcome["cluster_bytes"] >= outcome["queue_bytes"]
    # the restored server replayed the base backup's WAL (its own log says so)
    assert any("redo" in line or "ready to accept" in line for line in outcome["restored_server_log"]), \
        outcome["restored_server_log"]


def test_postgres_delete_mode_returns_no_claim_by_design(fleet_and_context):
    outcome = run_drill(fleet_and_context, "pg_delete", batch=1)
    assert outcome["delivery_guarantee"] == "at-most-once"
    assert outcome["in_flight_returned"] == 0  # the claim deleted them: nothing can come back


def test_redis_bgsave_restores_the_processing_lists(fleet_and_context):
    outcome = run_drill(fleet_and_context, "redis_reliable")
    assert outcome["method"].startswith("BGSAVE") and outcome["restored_settings"] == {"appendonly": "no"}
    # the consumer's processing list is in the snapshot; the reaper moves it back
    assert returned_unless_acked_meanwhile(outcome), outcome


def test_sqlite_online_backup_restores_every_confirmed_message(fleet_and_context):
    outcome = run_drill(fleet_and_context, "sqlite_wal", synchronous="full")
    assert outcome["method"].startswith("online backup API") and outcome["durability_class"] == "per_commit"
    assert returned_unless_acked_meanwhile(outcome), outcome


def test_sharded_sqlite_backup_covers_every_shard(fleet_and_context):
    outcome = run_drill(fleet_and_context, "sqlite_wal", shards=3)
    assert outcome["backup"]["shards_backed_up"] == 3 and len(outcome["files"]) == 3


# --- a sharded SQLite queue loses nothing across shards ----------------------------------------------
SHARDS, MESSAGES, CONSUMERS = 4, 3000, 3


def consume_all(path: str, index: int, out: str) -> None:
    """Claim and acknowledge until every shard is empty; every id taken, one line each."""
    adapter = make_adapter("sqlite_wal", path, shards=SHARDS, batch=5, worker_index=index)
    adapter.open()
    with open(out, "w") as ids:
        while True:
            claimed = adapter.claim(5)
            if not claimed:
                if adapter.depth() == 0:
                    break
                continue
            adapter.ack([m.id for m in claimed])
            ids.writelines(f"{m.payload.decode()}\n" for m in claimed)
    adapter.close()


def test_sharded_sqlite_queue_delivers_every_id_exactly_once(server_dir: Path):
    path = str(server_dir / "queue.db")
    producer = make_adapter("sqlite_wal", path, shards=SHARDS)
    producer.open()
    producer.setup()
    sent = [f"m{i}" for i in range(MESSAGES)]
    for start in range(0, MESSAGES, 7):  # round-robin: each batch goes to the next shard
        producer.enqueue([m.encode() for m in sent[start:start + 7]])
    per_shard = [conn.execute("SELECT count(*) FROM queue").fetchone()[0] for conn in producer.conns]
    assert sum(per_shard) == MESSAGES and all(count > MESSAGES // (2 * SHARDS) for count in per_shard), per_shard
    context = multiprocessing.get_context("fork")
    outputs = [server_dir / f"consumer-{i}.ids" for i in range(CONSUMERS)]
    children = [context.Process(target=consume_all, args=(path, i, str(out))) for i, out in enumerate(outputs)]
    for child in children:
        child.start()
    try:
        for child in children:
            child.join(120)
            assert child.exitcode == 0, f"consumer exit code {child.exitcode}"
    finally:
        for child in children:
            if child.is_alive():
                child.kill()
                child.join(5)
    taken = [line for out in outputs for line in out.read_text().splitlines()]
    assert sorted(taken) == sorted(sent)  # every id once: none lost, none twice
    assert sum(1 for out in outputs if out.read_text()) >= 2, "the consumers did not share the work"
    assert producer.depth() == 0
    producer.close()


def test_a_sqlite_queues_reset_gives_its_freed_pages_back_as_truncate_does(server_dir: Path):
    """Every point starts from an empty queue file, not one grown by the points before it (a
    backup of a reused file copied 3.2 GB of free pages for 200,000 messages)."""
    path = server_dir / "compact.db"
    adapter = make_adapter("sqlite_wal", str(path))
    adapter.open()
    try:
        adapter.fresh()
        empty = path.stat().st_size
        adapter.bulk_load([b"x" * 1000] * 20_000)
        adapter.reset()
        assert adapter.depth() == 0
        assert adapter.conns[0].execute("PRAGMA freelist_count").fetchone()[0] == 0
        assert path.stat().st_size <= 2 * empty + 64 * 1024, (empty, path.stat().st_size)
    finally:
        adapter.close()
