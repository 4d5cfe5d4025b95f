"""Backup/restore drill (seed 000's backup paragraph): a hot backup of a live queue, restored
into a fresh data directory on a second server instance, with every message id accounted for
across the backup point.

Per drill: empty the queue (the variant's settings applied), prefill ``queue_messages``
(the queue's stated size), bring the server to a known state (Postgres: CHECKPOINT, so the
backup's own checkpoint flushes only the load's writes), then one producer and ``CONSUMERS``
consumer child processes run at ``rate`` msg/s each side, so the queue holds its size. A
consumer holds each claim ``WORK_S`` before acknowledging it, as a job takes time, so some
claims are in flight at the backup. After ``load_s`` the backup starts (``t0``) with the load still running:

- SQLite: the online backup API (``sqlite3.Connection.backup``, all pages in one step), not
  ``VACUUM INTO``: it is what the seed's ``.backup`` runs, one read transaction gives a
  consistent snapshot that never blocks the WAL writers, and it copies pages as they are
  (``VACUUM INTO`` rebuilds every b-tree: more CPU, a compacted copy, another measurement).
- Postgres: ``pg_basebackup`` of the project's own server (its own binaries), plain format,
  WAL streamed (``-X stream``), fast checkpoint (``-c fast``: a spread checkpoint would wait up
  to 0.9 x checkpoint_timeout = 13.5 min here), over a replication connection to 127.0.0.1.
- Redis: ``BGSAVE SCHEDULE``, wait until ``rdb_saves`` grew and ``rdb_bgsave_in_progress`` is 0,
  then copy the RDB file.

The backup ends (``t_end``) when the artefact is in the backup directory; then the load stops.
Restore: copy the artefact into a fresh data directory and start a second instance there on a
free port of 127.0.0.1 (Postgres: crash recovery from the base backup's label, replaying its
streamed WAL; Redis: loads the RDB, started without an AOF; SQLite: the copied file opened).
``restore_to_first_claim_s`` runs from the start of the copy to the first claim that returned a
message. Then the claims the restored copy still holds are released (the design's reaper; pgmq:
visibility reset) and the queue is drained: its ids are what the backup kept.

The accounting (``account_backup``) compares those ids with the load's ledgers (monotonic
times of every confirmed enqueue, claim and acknowledgement):

- ``acked_reappeared``: acknowledged before ``t0``, present in the restore. Must be 0 for every
  design: an acknowledgement returned before the backup began.
- ``lost``: enqueue confirmed before ``t0``, missing from the restore and not consumed before
  ``t_end`` (a message consumed while the backup ran may be in the snapshot or not).
- ``in_flight_at_backup`` / ``in_flight_returned``: claimed and not yet acknowledged at ``t0``,
  and how many of those the restore holds. At-least-once designs keep them claimed in the
  snapshot (SQLite/Postgres rows with a claim, Redis processing lists), so they come back through
  the reaper — except those acknowledged after ``t0`` but before the snapshot point
  (``in_flight_acked_during_backup`` bounds them; a missing one not acknowledged is counted lost);
  delete-mode (at-most-once) deleted them at the claim, so none return by design.

What it can and cannot show: one backup of one size on a shared 2-core box, page cache warm,
backup and restore on the same disk; restore time is copy + start + replay of a few seconds of
WAL, not of hours of archived WAL, and the backup is not verified beyond the queue's own ids.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from pglimits_core.datasets.messages import SIZE_MIX, MessageGenerator, decode, stamp_batch
from pglimits_core.errors import PGLimitsError
from pglimits_core.load.worker import die_with_parent
from pglimits_core.servers.ownership import child_env
from pglimits_core.servers.process import ensure_private_dir
from pglimits_core.servers.registry import server_class
from pglimits_core.servers.storage import directory_bytes
from pglimits_core.studies.runner import Context, RecordedRun, open_record
from pglimits_core.workloads.queue.drills.recovery import recovery_log_lines
from pglimits_core.workloads.queue.drills.recovery_record import (
    durability_facts,
    finish_run,
    with_server_description,
)
from pglimits_core.workloads.queue.points import (
    STUDY,
    QueueVariant,
    _scratch,
    drain,
    fresh_queue,
    prefill,
)
from pglimits_core.workloads.queue.systems.registry import adapter_class, make_adapter

EXPERIMENT = "backup"
WORK_S = 0.005             # a consumer holds each claim this long before acking: jobs take time
CONSUMERS = 4              # they share the rate: one holding claims 5 ms takes ~170 msg/s at most
IDLE_SLEEP_S = 0.001
LOAD_READY_S = 30.0        # the load children must have connected before the clock starts
BACKUP_LIMIT_S = 600.0     # a backup of this study's sizes takes seconds; 10 min is a failure
RESTORE_LIMIT_S = 300.0    # start + replay + first claim
STOP_LIMIT_S = 10.0        # a load child finishes its current claim/ack within this
POLL_S = 0.01
MEAN_PAYLOAD_BYTES = sum(size * share for size, share in SIZE_MIX)
# disk a drill needs per message: payload + row/index overhead, for the source, the backup and
# the restored copy (WAL of the load on top); deliberately generous
DISK_BYTES_PER_MESSAGE = 3 * (MEAN_PAYLOAD_BYTES + 200)
DRAIN_S_PER_MESSAGE = 0.001  # drain bound: 1 ms per message (drains run at >= 5k/s here)
METHODS = {"sqlite": "online backup API (sqlite3.Connection.backup, all pages in one step)",
           "postgres": "pg_basebackup -X stream -c fast -F p over a replication connection to 127.0.0.1",
           "redis": "BGSAVE SCHEDULE, wait for rdb_saves to grow, copy the RDB file"}
SCOPE = ("one hot backup under a moderate producer+consumer load, restored by copying the artefact "
         "into a fresh data directory on the same disk and starting a second instance there (page "
         "cache warm); restore time is copy + start + replay of the WAL streamed during the backup, "
         "not of archived WAL; the restore is checked through the queue's own ids only")


# --- the load: one producer and one consumer child, every event in a ledger ------------------------
def _write(out, kind: str, ids: list[str]) -> None:
    """One ledger line per event, stamped after the system answered (so a time before t0 means
    the event had happened before t0); flushed, so a killed child leaves whole lines."""
    out.write(f"{kind} {time.monotonic_ns()} {' '.join(ids)}\n")
    out.flush()


def _paced(start: float, done: int, interval: float) -> None:
    time.sleep(max(0.0, start + done * interval - time.monotonic()))


def _child_adapter(v: QueueVariant, url: str, parent: int, name: str) -> Any:
    """A load child's own connection; the child ignores Ctrl-C (the parent's, it stops the
    children) and dies with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    adapter = make_adapter(v.system, url, **v.options, worker_id=name)
    adapter.open()
    return adapter


def produce(v: QueueVariant, url: str, ledger: str, rate: float, seed: int, stop: Any,
            ready: Any, parent: int, name: str) -> None:
    """Enqueue one message at a time at ``rate``; an id is written once the system confirmed it."""
    adapter = _child_adapter(v, url, parent, name)
    messages = MessageGenerator(seed, producer="backup")
    with open(ledger, "a") as out:
        ready.set()
        start, sent = time.monotonic(), 0
        while not stop.is_set():
            _paced(start, sent, 1.0 / rate)
            payload = stamp_batch(messages.templates(1))[0]
            adapter.enqueue([payload])
            _write(out, "enq", [decode(payload)[0]])
            sent += 1
    adapter.close()


def consume(v: QueueVariant, url: str, ledger: str, rate: float, seed: int, stop: Any,
            ready: Any, parent: int, name: str) -> None:
    """Claim the variant's batch at ``rate`` msg/s, hold it ``WORK_S``, acknowledge it."""
    adapter = _child_adapter(v, url, parent, name)
    with open(ledger, "a") as out:
        ready.set()
        start, taken = time.monotonic(), 0
        while not stop.is_set():
            _paced(start, taken, 1.0 / rate)
            claimed = adapter.claim(v.batch)
            if not claimed:
                time.sleep(IDLE_SLEEP_S)
                continue
            ids = [decode(m.payload)[0] for m in claimed]
            _write(out, "claim", ids)
            time.sleep(WORK_S)
            adapter.ack([m.id for m in claimed])
            _write(out, "ack", ids)
            taken += len(claimed)
    adapter.close()


class Load:
    """The producer and the consumers' children; ``stop()`` ends them (bounded, SIGKILL after)."""

    def __init__(self, v: QueueVariant, url: str, ledger_dir: Path, rate: float, seed: int):
        context = multiprocessing.get_context("fork")  # as the study's load driver starts workers
        self.stop_event = context.Event()
        roles = [("backup-producer", produce, rate)]
        roles += [(f"backup-consumer-{i}", consume, rate / CONSUMERS) for i in range(CONSUMERS)]
        self.ledgers = [ledger_dir / f"{name}.events" for name, _, _ in roles]
        self.children, readies = [], []
        for (name, target, share), ledger in zip(roles, self.ledgers, strict=True):
            ready = context.Event()
            child = context.Process(target=target, name=name, daemon=True,
                                    args=(v, url, str(ledger), share, seed, self.stop_event,
                                          ready, os.getpid(), name))
            self.children.append(child)
            readies.append(ready)
        try:
            for child in self.children:
                child.start()
            self._wait_ready(readies)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, readies: list[Any]) -> None:
        deadline = time.monotonic() + LOAD_READY_S
        for child, ready in zip(self.children, readies, strict=True):
            if not ready.wait(max(0.0, deadline - time.monotonic())):
                raise RuntimeError(f"{child.name} did not connect within {LOAD_READY_S:.0f}s "
                                   f"(exit code {child.exitcode})")

    def stop(self) -> list[str]:
        """Ask the children to finish their current step, then SIGKILL what is left; their
        failures (a non-zero exit) as text."""
        self.stop_event.set()
        problems = []
        for child in self.children:
            if child.pid is None:
                continue
            child.join(STOP_LIMIT_S)
            if child.is_alive():
                child.kill()
                child.join(5)
                problems.append(f"{child.name} did not stop within {STOP_LIMIT_S:.0f}s: killed")
            elif child.exitcode:
                problems.append(f"{child.name} exited with code {child.exitcode}")
        return problems


def read_events(path: Path) -> list[tuple[str, int, list[str]]]:
    """``(kind, monotonic ns, ids)`` per whole line; a line cut by a kill was never confirmed."""
    text = path.read_text() if path.exists() else ""
    events = []
    for line in text.split("\n")[:-1]:
        kind, stamp, *ids = line.split(" ")
        events.append((kind, int(stamp), ids))
    return events


# --- the accounting across the backup point --------------------------------------------------------
def account_backup(prefilled: list[str], events: list[tuple[str, int, list[str]]], t0: int, t_end: int,
                   restored: list[str], at_most_once: bool) -> dict[str, Any]:
    """Every id against the backup point ``t0`` and the backup's end ``t_end`` (see the module doc)."""
    def ids(kind: str, before: int | None = None) -> set[str]:
        return {i for k, t, batch in events if k == kind and (before is None or t < before) for i in batch}

    confirmed = list(prefilled) + [i for k, t, batch in events if k == "enq" and t < t0 for i in batch]
    acked_before, claimed_before = ids("ack", t0), ids("claim", t0)
    in_flight = claimed_before - acked_before
    # a message consumed while the backup ran may be in the snapshot or not: neither is a loss
    taken_by_end = ids("claim", t_end) if at_most_once else ids("ack", t_end)
    present = set(restored)
    lost = [i for i in confirmed if i not in present and i not in taken_by_end]
    confirmed_during = ids("enq", t_end) - set(confirmed)
    known = set(prefilled) | ids("enq")
    return {"confirmed_before_backup": len(confirmed), "acked_before_backup": len(acked_before),
            "acked_reappeared": len(acked_before & present),
            "acked_reappeared_sample": sorted(acked_before & present)[:5],
            "lost": len(lost), "lost_sample": lost[:5],
            "in_flight_at_backup": len(in_flight), "in_flight_returned": len(in_flight & present),
            # acknowledged while the backup ran: back in the restore only if the snapshot came first
            "in_flight_acked_during_backup": len(in_flight & ids("ack", t_end)),
            # every message a consumer had been handed (by the backup's end) that the restore
            # hands out again: the claims the snapshot caught, whenever its point lay
            "claimed_returned": len((ids("claim", t_end) - acked_before) & present),
            "acked_during_backup_present": len((ids("ack", t_end) - acked_before) & present),
            "confirmed_during_backup_present": len(confirmed_during & present),
            "restored_messages": len(present), "duplicates": len(restored) - len(present),
            "unknown_ids": len(present - known)}


# --- per server: how to back up and how to restore ----------------------------------------------
class SQLiteBackup:
    method = METHODS["sqlite"]

    def prepare(self, server: Any, url: str, v: QueueVariant) -> dict[str, Any]:
        return {"files": [str(p) for p in self.files(url, v)], "backup_covers": "the queue's file(s)"}

    @staticmethod
    def files(url: str, v: QueueVariant) -> list[Path]:
        from pglimits_core.workloads.queue.systems.sqlite_wal import shard_paths

        return shard_paths(url, int(v.options.get("shards", 1)))

    def backup(self, server: Any, url: str, v: QueueVariant, target: Path) -> dict[str, Any]:
        """One backup per shard file, each one read transaction (a consistent snapshot of it)."""
        from pglimits_core.servers.sqlite import connect

        for path in self.files(url, v):
            source = connect(path)
            destination = sqlite3.connect(str(target / path.name))
            try:
                source.backup(destination, pages=-1)
            finally:
                destination.close()
                source.close()
        return {"shards_backed_up": len(self.files(url, v))}

    def restore(self, server: Any, url: str, backup_dir: Path, restore_dir: Path) -> Any:
        from pglimits_core.servers.sqlite import SQLiteServer

        shutil.copytree(backup_dir, restore_dir, dirs_exist_ok=True)
        return SQLiteServer(data_dir=restore_dir, filename=Path(url).name)

    def queue_bytes(self, url: str, v: QueueVariant) -> int:
        return sum(p.stat().st_size for path in self.files(url, v)
                   for p in (path, Path(f"{path}-wal")) if p.exists())


class PostgresBackup:
    method = METHODS["postgres"]
    # pg_hba lines initdb writes for replication: local + host 127.0.0.1/32 + ::1/128, trust
    REPLICATION_QUERY = ("SELECT type, address, auth_method FROM pg_hba_file_rules "
                         "WHERE 'replication' = ANY(database) AND error IS NULL")

    def prepare(self, server: Any, url: str, v: QueueVariant) -> dict[str, Any]:
        """The replication facts pg_basebackup needs, read back (and checked) before the drill."""
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            settings = dict(conn.execute("SELECT name, setting FROM pg_settings WHERE name = ANY(%s)",
                                         (["wal_level", "max_wal_senders", "max_replication_slots",
                                           "listen_addresses"],)).fetchall())
            hba = [dict(zip(("type", "address", "auth_method"), row, strict=True))
                   for row in conn.execute(self.REPLICATION_QUERY).fetchall()]
            cluster = conn.execute("SELECT sum(pg_database_size(datname))::bigint FROM pg_database").fetchone()[0]
            checkpoint = server_class("postgres").before_crash_load(url)
        check_replication(settings, hba)
        return {"replication": {**settings, "pg_hba_replication": hba}, "before_load": checkpoint,
                "cluster_bytes": cluster,
                "backup_covers": "the whole cluster (every database; pg_basebackup cannot back up one table)"}

    def backup(self, server: Any, url: str, v: QueueVariant, target: Path) -> dict[str, Any]:
        from pglimits_core.servers import pg_install

        argv = [pg_install.locate_install().tool("pg_basebackup"), "-h", "127.0.0.1",
                "-p", str(server.endpoint.port), "-U", "postgres", "-w", "-D", str(target / "pgdata"),
                "-X", "stream", "-c", "fast", "-F", "p", "--label=pglimits-backup-drill"]
        # run() kills the child on any exception, Ctrl-C included; the marks make it findable
        result = subprocess.run(argv, capture_output=True, text=True, timeout=BACKUP_LIMIT_S, env=child_env())
        if result.returncode != 0:
            raise RuntimeError(f"pg_basebackup failed ({result.returncode}): {result.stderr.strip()[-500:]}")
        return {"command": " ".join(argv[1:]), "tool": argv[0]}

    def restore(self, server: Any, url: str, backup_dir: Path, restore_dir: Path) -> Any:
        """The base backup copied into a fresh data directory, owned by the server's OS user; the
        server started on it runs crash recovery from the backup label (its streamed WAL)."""
        from pglimits_core.servers import pg_install
        from pglimits_core.servers.postgres import PostgresServer

        user = pg_install.ensure_os_user()
        ensure_private_dir(restore_dir)
        shutil.copytree(backup_dir / "pgdata", restore_dir / "pgdata")
        chown_tree(restore_dir, user)
        return PostgresServer(data_dir=restore_dir, settings=dict(getattr(server, "overrides", {})),
                              start_timeout_s=RESTORE_LIMIT_S)

    def queue_bytes(self, url: str, v: QueueVariant) -> int:
        import psycopg

        adapter = make_adapter(v.system, url, **v.options)
        tables = adapter.queue_tables()
        with psycopg.connect(url) as conn:
            return sum(conn.execute("SELECT pg_total_relation_size(%s::regclass)", (t,)).fetchone()[0]
                       for t in tables)


class RedisBackup:
    method = METHODS["redis"]
    # the restored instance loads the RDB: with an AOF on it would read the (absent) AOF instead
    RESTORED_SETTINGS = {"appendonly": "no"}

    def prepare(self, server: Any, url: str, v: QueueVariant) -> dict[str, Any]:
        return {"restored_settings": dict(self.RESTORED_SETTINGS),
                "backup_covers": "the whole dataset (every key of the server)"}

    def backup(self, server: Any, url: str, v: QueueVariant, target: Path) -> dict[str, Any]:
        import redis

        with redis.Redis.from_url(url, decode_responses=True) as client:
            saves = int(client.info("persistence")["rdb_saves"])
            # SCHEDULE: an AOF rewrite in progress (appendfsync variants) defers it, not refuses it
            client.execute_command("BGSAVE", "SCHEDULE")
            waited = wait_for_bgsave(client, saves)
            folder, name = client.config_get("dir")["dir"], client.config_get("dbfilename")["dbfilename"]
        shutil.copy2(Path(folder) / name, target / "dump.rdb")
        # the live server keeps no RDB of its own: a later restart (the crash drill) would load this
        # snapshot and serve messages that were never in its run
        (Path(folder) / name).unlink(missing_ok=True)
        return {"bgsave": waited, "rdb": name}

    def restore(self, server: Any, url: str, backup_dir: Path, restore_dir: Path) -> Any:
        from pglimits_core.servers.redis import RedisServer

        ensure_private_dir(restore_dir)
        shutil.copy2(backup_dir / "dump.rdb", restore_dir / "dump.rdb")
        return RedisServer(data_dir=restore_dir, settings=dict(self.RESTORED_SETTINGS),
                           start_timeout_s=RESTORE_LIMIT_S)

    def queue_bytes(self, url: str, v: QueueVariant) -> int:
        import redis

        with redis.Redis.from_url(url) as client:
            return int(client.info("memory")["used_memory_dataset"])


BACKUPS: dict[str, Any] = {"sqlite": SQLiteBackup(), "postgres": PostgresBackup(), "redis": RedisBackup()}


def backup_kind(v: QueueVariant) -> Any:
    if v.server not in BACKUPS:
        raise PGLimitsError(f"no backup drill for {v.label!r} (server {v.server})",
                            f"list variants of: {', '.join(BACKUPS)} in queue.backup.variants")
    return BACKUPS[v.server]


def check_replication(settings: dict[str, str], hba: list[dict[str, Any]]) -> None:
    """pg_basebackup -X stream needs two WAL senders and a replication rule for 127.0.0.1."""
    if settings.get("wal_level") not in ("replica", "logical"):
        raise PGLimitsError(f"Postgres runs wal_level={settings.get('wal_level')}: pg_basebackup needs replica",
                            "set wal_level = replica in configs/servers/postgres.conf")
    if int(settings.get("max_wal_senders", 0)) < 2:
        raise PGLimitsError("Postgres max_wal_senders < 2: pg_basebackup -X stream needs two",
                            "set max_wal_senders = 10 in configs/servers/postgres.conf")
    if not any(rule["type"] == "host" and str(rule["address"]).startswith("127.0.0.1") for rule in hba):
        raise PGLimitsError("pg_hba has no replication rule for 127.0.0.1",
                            "re-create the data dir (initdb writes one) or add `host replication all 127.0.0.1/32 trust`")


def wait_for_bgsave(client: Any, saves_before: int) -> dict[str, Any]:
    """Until a new RDB save finished (``rdb_saves`` grew, nothing in progress), bounded."""
    deadline = time.monotonic() + BACKUP_LIMIT_S
    while time.monotonic() < deadline:
        info = client.info("persistence")
        if int(info["rdb_saves"]) > saves_before and not int(info["rdb_bgsave_in_progress"]):
            if info["rdb_last_bgsave_status"] != "ok":
                raise RuntimeError(f"Redis BGSAVE failed ({info['rdb_last_bgsave_status']}): see the server log")
            return {"rdb_last_bgsave_time_sec": info.get("rdb_last_bgsave_time_sec"),
                    "rdb_last_cow_size": info.get("rdb_last_cow_size")}
        time.sleep(POLL_S)
    raise RuntimeError(f"Redis BGSAVE still running after {BACKUP_LIMIT_S:.0f}s")


def chown_tree(root: Path, user: str | None) -> None:
    """Give a copied data directory to the server's OS user (copies made as root are root's)."""
    if not user:
        return
    import pwd

    uid, gid = pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid
    os.chown(root, uid, gid)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.lchown(os.path.join(folder, name), uid, gid)


def check_disk(queue_messages: int, where: Path) -> dict[str, Any]:
    """A queue this size must fit three times (source, backup, restored copy) with room to spare."""
    needed = int(queue_messages * DISK_BYTES_PER_MESSAGE)
    free = shutil.disk_usage(where).free
    if needed > 0.8 * free:
        raise PGLimitsError(f"a backup drill of {queue_messages:,} messages needs ~{needed / 2**30:.1f} GiB "
                            f"free under {where}; {free / 2**30:.1f} GiB are",
                            "lower queue.backup.queue_messages in the profile or free disk space")
    return {"disk_needed_estimate_bytes": needed, "disk_free_bytes": free}


# --- one drill ---------------------------------------------------------------------------------------
def backup_point(ctx: Context, servers: dict[str, Any], v: QueueVariant, queue_messages: int, rate: float,
                 load_s: float, seed: int = 0, index: int = 0) -> RecordedRun:
    """One drill of one variant (``index`` among its repetitions), one run record; a failure is
    a failed record with its reason. Only a server this study started is backed up."""
    params = {"experiment": EXPERIMENT, "variant": v.label, "options": v.options, "drill": index,
              "queue_messages": queue_messages, "rate": rate, "load_s": load_s}
    reused = ctx.reuse(STUDY, v.system, f"{EXPERIMENT}:{v.label}", params)
    if reused:  # drilled before an interruption
        return reused
    kind = backup_kind(v)
    with open_backup_run(ctx, v, params, seed) as run_dir:
        outcome = backup_and_restore(ctx, servers, v, kind, queue_messages, rate, load_s, seed)
        # the server as the variant ran it (Redis persistence is set per variant, at runtime)
        with_server_description(run_dir, v, ctx.describe_now(v.server))
        return finish_run(run_dir, v, outcome)


def open_backup_run(ctx: Context, v: QueueVariant, params: dict[str, Any], seed: int):
    return open_record(ctx, STUDY, v.system, v.server, f"{EXPERIMENT}:{v.label}", params, seed)


def backup_and_restore(ctx: Context, servers: dict[str, Any], v: QueueVariant, kind: Any,
                       queue_messages: int, rate: float, load_s: float, seed: int) -> dict[str, Any]:
    server = servers.get(v.server)
    if server is None or ctx.endpoints[v.server].external:
        raise RuntimeError(f"{v.server} is not a server this study started (attached or unavailable): "
                           "the drill backs up its files, so it needs the server it started")
    url = ctx.endpoints[v.server].url
    work = Path(tempfile.mkdtemp(prefix="backup-drill-", dir=_scratch()))
    # beside the source's data dir (the fleet's data root): the server's OS user can reach it
    restore_dir = Path(server.data_dir).parent / f"backup-restore-{uuid.uuid4().hex[:8]}"
    backup_dir = work / "backup"
    try:
        backup_dir.mkdir()
        facts = {"disk": check_disk(queue_messages, restore_dir.parent),
                 "backup_dir": str(backup_dir), "restore_dir": str(restore_dir)}
        filled = fill_queue(ctx, v, kind, server, url, queue_messages, seed)
        taken = backup_under_load(server, url, v, kind, work, backup_dir, rate, load_s, seed)
        restored = restore_and_drain(server, url, v, kind, backup_dir, restore_dir, queue_messages)
        accounting = account_backup(filled["ids"], taken["events"], taken["t0"], taken["t_end"],
                                    restored.pop("present"), adapter_class(v.system).delivery_guarantee == "at-most-once")
        return drill_outcome(v, kind, queue_messages, rate, load_s, facts, filled, taken, restored, accounting)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(restore_dir, ignore_errors=True)


def fill_queue(ctx: Context, v: QueueVariant, kind: Any, server: Any, url: str, count: int,
               seed: int) -> dict[str, Any]:
    """An empty queue with the variant's settings, ``count`` messages in it, the server settled."""
    adapter = fresh_queue(ctx, v)
    try:
        started = time.monotonic()
        ids = prefill(adapter, count, seed)
        filled_s = time.monotonic() - started
        described = adapter.describe()
    finally:
        adapter.close()
    prepared = kind.prepare(server, url, v)  # Postgres: replication checked, CHECKPOINT
    return {"ids": ids, "prefill_s": round(filled_s, 3), "described": described, "prepared": prepared,
            "queue_bytes": kind.queue_bytes(url, v)}


def backup_under_load(server: Any, url: str, v: QueueVariant, kind: Any, work: Path, backup_dir: Path,
                      rate: float, load_s: float, seed: int) -> dict[str, Any]:
    """``load_s`` of producer+consumer load, then the backup with the load still running."""
    load = Load(v, url, work, rate, seed)
    try:
        time.sleep(load_s)
        t0 = time.monotonic_ns()
        facts = kind.backup(server, url, v, backup_dir)
        t_end = time.monotonic_ns()
    finally:
        problems = load.stop()
    if problems:
        raise RuntimeError("the load under the backup failed: " + "; ".join(problems))
    events = [event for ledger in load.ledgers for event in read_events(ledger)]
    return {"t0": t0, "t_end": t_end, "backup_s": (t_end - t0) / 1e9, "events": events,
            "backup_bytes": directory_bytes(backup_dir), "backup": facts,
            "confirmed_per_s": _rate_before(events, "enq", t0, load_s),
            "acked_per_s": _rate_before(events, "ack", t0, load_s)}


def _rate_before(events: list[tuple[str, int, list[str]]], kind: str, t0: int, load_s: float) -> float:
    return sum(len(ids) for k, t, ids in events if k == kind and t < t0) / load_s


def restore_and_drain(server: Any, url: str, v: QueueVariant, kind: Any, backup_dir: Path,
                      restore_dir: Path, queue_messages: int) -> dict[str, Any]:
    """Copy, start the second instance, time the first claim, release held claims, drain; the
    restored instance is stopped whatever happens."""
    started = time.monotonic()
    restored = kind.restore(server, url, backup_dir, restore_dir)
    copied_s = time.monotonic() - started
    try:
        endpoint = restored.start()
        started_s = time.monotonic() - started
        adapter = make_adapter(v.system, endpoint.url, **v.options, worker_id="backup-restore")
        adapter.open()
        try:
            first, first_s = first_claim(adapter, started)
            released = release_claims(adapter, v)
            drained, emptied = drain(adapter, max(60.0, DRAIN_S_PER_MESSAGE * 2 * queue_messages))
        finally:
            adapter.close()
        log = recovery_log_lines(restored, restored.name, 0)
    finally:
        restored.stop()
    return {"present": first + drained, "copy_s": copied_s, "start_s": started_s,
            "restore_to_first_claim_s": first_s, "released_claims": released,
            "drain_complete": emptied, "restored_server_log": log,
            "restored_server": {"name": restored.name, "port": endpoint.port, "url": endpoint.url}}


def first_claim(adapter: Any, started: float) -> tuple[list[str], float | None]:
    """The first claim that returns a message (acknowledged at once); None when the restored
    queue answered empty (nothing to time a claim by)."""
    deadline = started + RESTORE_LIMIT_S
    while time.monotonic() < deadline:
        claimed = adapter.claim(1)
        if claimed:
            answered = time.monotonic() - started
            adapter.ack([m.id for m in claimed])
            return [decode(m.payload)[0] for m in claimed], answered
        if adapter.depth() == 0:
            return [], None
        time.sleep(POLL_S)
    raise RuntimeError(f"the restored queue served no claim within {RESTORE_LIMIT_S:.0f}s")


def release_claims(adapter: Any, v: QueueVariant) -> int:
    """Claims the snapshot still holds belong to consumers that do not exist on the restored
    instance: the design's reaper brings them back (pgmq: their visibility timeout reset)."""
    if v.system == "pgmq":
        held = [row[0] for row in adapter.rows(f"SELECT msg_id FROM pgmq.q_{adapter.queue} "
                                               "WHERE vt > clock_timestamp()")]
        adapter.nack(held, 0.0)
        return len(held)
    return adapter.reap(0.0)


def drill_outcome(v: QueueVariant, kind: Any, queue_messages: int, rate: float, load_s: float,
                  facts: dict[str, Any], filled: dict[str, Any], taken: dict[str, Any],
                  restored: dict[str, Any], accounting: dict[str, Any]) -> dict[str, Any]:
    described = filled["described"]
    return {"method": kind.method, "queue_messages": queue_messages, "queue_bytes": filled["queue_bytes"],
            "prefill_s": filled["prefill_s"], "offered_rate": rate, "load_s": load_s,
            "confirmed_per_s": taken["confirmed_per_s"], "acked_per_s": taken["acked_per_s"],
            "backup_s": taken["backup_s"], "backup_bytes": taken["backup_bytes"], "backup": taken["backup"],
            **filled["prepared"], **restored, **accounting, "work_s": WORK_S,
            "delivery_guarantee": adapter_class(v.system).delivery_guarantee,
            **durability_facts(described), "drill_scope": SCOPE, "adapter": described, **facts}


def backed_up_variant(label: str, variants: list[QueueVariant]) -> QueueVariant:
    """The variant a ``queue.backup.variants`` label names (as the crash drill reads its labels);
    a system with no backup method is a one-line error."""
    from pglimits_core.workloads.queue.drills.recovery import drilled_variant

    v = drilled_variant(label, variants)
    backup_kind(v)
    return v
