"""The SQLite WAL queue exactly as seed 000 specifies: schema, claim, ack, nack, reaper.

Every statement below is the seed's text. Two additions, both said where they are: the
batched claim takes its LIMIT as a parameter (the seed hard-codes 50; batch=50 reproduces it)
and also returns ``attempts``, which nack's exponential backoff needs. Times are Unix ns, as
in the seed. ``shards`` > 1 spreads the queue over that many files, each with its own writer;
a message id is then ``rowid * shards + shard`` so ack/nack find the file.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from pglimits_core.servers.sqlite import connect, read_pragmas
from pglimits_core.workloads.queue.systems.base import BULK_BATCH, Message, QueueAdapter
from pglimits_core.workloads.queue.systems.durability import NONE, PER_COMMIT, PERIODIC, Promise
from pglimits_core.workloads.queue.systems.sqlite_busy import (
    DEFAULT_BUDGET_MS,
    BusyWaiter,
    busy_handling,
    in_transaction,
)

SCHEMA_SQL = ["""CREATE TABLE IF NOT EXISTS queue (
    id          INTEGER PRIMARY KEY,
    payload     BLOB NOT NULL,
    visible_at  INTEGER NOT NULL,        -- unix nanoseconds
    claimed_by  TEXT,                     -- NULL = available
    claimed_at  INTEGER,                  -- unix nanoseconds
    attempts    INTEGER NOT NULL DEFAULT 0,
    enqueued_at INTEGER NOT NULL          -- unix nanoseconds
);""", """CREATE INDEX IF NOT EXISTS queue_visible
    ON queue(visible_at)
    WHERE claimed_by IS NULL;"""]

ENQUEUE_SQL = """INSERT INTO queue (payload, visible_at, enqueued_at)
VALUES (?, ?, ?);"""

CLAIM_SQL = """UPDATE queue
SET claimed_by = ?,
    claimed_at = ?,
    attempts   = attempts + 1
WHERE id = (
    SELECT id FROM queue
    WHERE claimed_by IS NULL
      AND visible_at <= ?
    ORDER BY visible_at
    LIMIT 1
)
RETURNING id, payload, attempts;"""

CLAIM_BATCH_SQL = """UPDATE queue
SET claimed_by = ?,
    claimed_at = ?,
    attempts   = attempts + 1
WHERE id IN (
    SELECT id FROM queue
    WHERE claimed_by IS NULL
      AND visible_at <= ?
    ORDER BY visible_at
    LIMIT ?
)
RETURNING id, payload, attempts;"""

ACK_SQL = "DELETE FROM queue WHERE id = ? AND claimed_by = ?;"

NACK_SQL = """UPDATE queue
SET claimed_by = NULL,
    claimed_at = NULL,
    visible_at = ?
WHERE id = ? AND claimed_by = ?;"""

REAPER_SQL = """UPDATE queue
SET claimed_by = NULL,
    claimed_at = NULL
WHERE claimed_by IS NOT NULL
  AND claimed_at < ?;"""

DEPTH_SQL = "SELECT count(*) FROM queue"
PENDING_SQL = "SELECT payload FROM queue WHERE claimed_by IS NULL AND visible_at <= ?"
# The untimed drain (ours, not the seed's): the claim's rows, deleted in one statement.
TAKE_SQL = """DELETE FROM queue
WHERE id IN (
    SELECT id FROM queue
    WHERE claimed_by IS NULL
      AND visible_at <= ?
    ORDER BY visible_at
    LIMIT ?
)
RETURNING id, payload;"""
RESET_SQL = "DELETE FROM queue"
#: after the reset, the file gives its freed pages back (Postgres's TRUNCATE starts a new, empty
#: relation file): without it every point after the first starts from a file grown by the points
#: before it — a hot backup copied 3.2 GB of free pages for 200,000 messages where Postgres's
#: and Redis's held ~190 MB
COMPACT_SQL = ("VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)")

DEFAULT_BACKOFF_BASE_S = 1.0  # the seed's 2^attempts seconds

# PRAGMA synchronous reads back as a number. In WAL mode every commit is write()n to the WAL
# before it returns, so at every level an acknowledged message is in the kernel and survives a
# process kill; the levels differ in when it is fsynced.
SYNCHRONOUS_NAMES = {0: "off", 1: "normal", 2: "full", 3: "extra"}
_FSYNC_EACH_COMMIT = Promise(PER_COMMIT, True, "WAL mode: the WAL is fsynced on every commit")
PROMISES: dict[str, Promise] = {
    "full": _FSYNC_EACH_COMMIT, "extra": _FSYNC_EACH_COMMIT,
    "normal": Promise(PERIODIC, True, "WAL mode: the WAL is fsynced only at a checkpoint "
                                      "(wal_autocheckpoint), so a power loss can lose recent commits"),
    "off": Promise(NONE, True, "no fsync at all: an OS crash or power loss can lose or corrupt data"),
}


def shard_paths(path: str | Path, shards: int) -> list[Path]:
    path = Path(path)
    if shards == 1:
        return [path]
    return [path.with_name(f"{path.stem}.shard{i}{path.suffix}") for i in range(shards)]


class SQLiteWalQueue(QueueAdapter):
    system = "sqlite_wal"
    durability_option = "synchronous"
    durability_default = "normal"  # the seed's
    promises = PROMISES

    def __init__(self, url: str, **options: Any):
        super().__init__(url, **options)
        self.synchronous = options.get("synchronous", self.durability_default)
        self.shards = int(options.get("shards", 1))
        self.backoff_base_s = float(options.get("backoff_base_s", DEFAULT_BACKOFF_BASE_S))
        self.busy_budget_ms = int(options.get("busy_budget_ms", DEFAULT_BUDGET_MS))
        self.offset = int(options.get("worker_index", os.getpid())) % self.shards
        self.conns: list[sqlite3.Connection] = []

    # --- connection -------------------------------------------------------------------
    def _connect(self) -> None:
        self.busy = BusyWaiter(self.busy_budget_ms)
        # busy_timeout 0: SQLite returns BUSY at once and BusyWaiter does (and counts) the waiting.
        overrides = {"synchronous": self.synchronous.upper(), "busy_timeout": "0"}
        self.conns = [self.busy.run(lambda p=p: connect(p, overrides, timeout_s=0))
                      for p in shard_paths(self.url, self.shards)]
        self.attempts: dict[int, int] = {}
        self.next_shard = self.offset
        self.stale_acks = 0

    def close(self) -> None:
        for conn in self.conns:
            conn.close()
        self.conns = []

    def setup(self) -> None:
        for conn in self.conns:
            for statement in SCHEMA_SQL:
                self.busy.run(lambda c=conn, s=statement: c.execute(s))

    def reset(self) -> None:
        for conn in self.conns:
            self.busy.run(lambda c=conn: c.execute(RESET_SQL))
            for statement in COMPACT_SQL:
                self.busy.run(lambda c=conn, s=statement: c.execute(s))
        self.attempts.clear()

    # --- verbs --------------------------------------------------------------------------
    def enqueue(self, payloads: list[bytes]) -> list[int]:
        """One transaction per batch, on the next shard in round-robin order."""
        shard = self.next_shard
        self.next_shard = (shard + 1) % self.shards
        conn = self.conns[shard]

        def insert_all() -> list[int]:
            now = time.time_ns()
            return [conn.execute(ENQUEUE_SQL, (p, now, now)).lastrowid for p in payloads]

        rowids = self.busy.run(lambda: in_transaction(conn, insert_all) if len(payloads) > 1
                               else insert_all())
        return [self._global_id(r, shard) for r in rowids]

    def bulk_load(self, payloads: list[bytes]) -> None:
        """The prefill: batches of ``BULK_BATCH`` dealt round-robin over the shards as
        ``enqueue`` deals them, then one transaction per shard (not one per batch)."""
        batches = [payloads[start:start + BULK_BATCH] for start in range(0, len(payloads), BULK_BATCH)]
        now = time.time_ns()
        for step in range(min(self.shards, len(batches))):
            conn = self.conns[(self.next_shard + step) % self.shards]
            rows = [(p, now, now) for batch in batches[step::self.shards] for p in batch]
            self.busy.run(lambda c=conn, r=rows: in_transaction(c, lambda: c.executemany(ENQUEUE_SQL, r)))
        self.next_shard = (self.next_shard + len(batches)) % self.shards

    def claim(self, n: int) -> list[Message]:
        """Tries shards from this worker's offset; returns the first non-empty claim."""
        for step in range(self.shards):
            shard = (self.offset + step) % self.shards
            rows = self.busy.run(lambda s=shard: self._claim_rows(self.conns[s], n))
            if rows:
                return self._remember(rows, shard)
        return []

    def pending(self) -> list[bytes]:
        now = time.time_ns()
        return [row[0] for conn in self.conns for row in conn.execute(PENDING_SQL, (now,)).fetchall()]

    def take(self, n: int) -> list[Message]:
        """The untimed drain: available messages deleted in one statement per shard (a message
        left claimed is not taken, so it still shows in depth())."""
        for shard, conn in enumerate(self.conns):
            rows = self.busy.run(lambda c=conn: c.execute(TAKE_SQL, (time.time_ns(), n)).fetchall())
            if rows:
                return [Message(self._global_id(rowid, shard), payload) for rowid, payload in rows]
        return []

    def ack(self, ids: list[int]) -> None:
        for shard, rowids in self._by_shard(ids).items():
            params = [(r, self.worker_id) for r in rowids]
            deleted = self._write_many(self.conns[shard], ACK_SQL, params)
            self.stale_acks += len(params) - deleted  # reaped and re-claimed by someone else
        for i in ids:
            self.attempts.pop(i, None)

    def nack(self, ids: list[int], delay_s: float | None = None) -> None:
        """Release with the seed's backoff: visible again after base * 2^attempts seconds."""
        now = time.time_ns()
        for shard, rowids in self._by_shard(ids).items():
            params = [(now + self._delay_ns(self._global_id(r, shard), delay_s), r, self.worker_id)
                      for r in rowids]
            self._write_many(self.conns[shard], NACK_SQL, params)
        for i in ids:
            self.attempts.pop(i, None)

    def reap(self, older_than_s: float) -> int:
        """The seed's reaper: claims older than ``older_than_s`` become available; how many."""
        cutoff = time.time_ns() - int(older_than_s * 1e9)
        return sum(self.busy.run(lambda c=c: c.execute(REAPER_SQL, (cutoff,)).rowcount)
                   for c in self.conns)

    def depth(self) -> int:
        return sum(c.execute(DEPTH_SQL).fetchone()[0] for c in self.conns)

    def database_files(self) -> list[Path]:
        return shard_paths(self.url, self.shards)

    def queue_bytes(self) -> int:
        return sum(p.stat().st_size for path in self.database_files()
                   for p in (path, Path(f"{path}-wal")) if p.exists())

    def stats(self) -> dict[str, Any]:
        return {**self.busy.stats(), "stale_acks": self.stale_acks}

    def durability_setting(self) -> str:
        """PRAGMA synchronous of the queue's own connection; the classes assume WAL mode."""
        conn = self.conns[0]
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if journal.lower() != "wal":
            raise ValueError(f"sqlite_wal runs in journal_mode={journal}, not WAL: its durability "
                             "classes do not apply")
        return SYNCHRONOUS_NAMES[conn.execute("PRAGMA synchronous").fetchone()[0]]

    def describe(self) -> dict[str, Any]:
        pragmas = read_pragmas(self.conns[0], ["journal_mode", "synchronous", "busy_timeout",
                                               "cache_size", "mmap_size", "wal_autocheckpoint",
                                               "temp_store"])
        return self.base_description(
            variant=f"synchronous={self.synchronous.upper()}, shards={self.shards}",
            sqlite_version=sqlite3.sqlite_version, pragmas=pragmas,
            busy_handler=busy_handling(pragmas["busy_timeout"], self.busy_budget_ms),
            delivery="at-least-once (claimed_by until ack; the reaper frees dead consumers' claims)",
            recovery=self.recovery, backoff=f"{self.backoff_base_s} s * 2^attempts",
            files=[str(p) for p in shard_paths(self.url, self.shards)],
            sql={"schema": SCHEMA_SQL, "enqueue": ENQUEUE_SQL,
                 "claim": CLAIM_SQL if self.batch == 1 else CLAIM_BATCH_SQL,
                 "ack": ACK_SQL, "nack": NACK_SQL, "reaper": REAPER_SQL})

    # --- helpers -----------------------------------------------------------------------
    def _claim_rows(self, conn: sqlite3.Connection, n: int) -> list[tuple]:
        now = time.time_ns()
        if n == 1:
            return conn.execute(CLAIM_SQL, (self.worker_id, now, now)).fetchall()
        return conn.execute(CLAIM_BATCH_SQL, (self.worker_id, now, now, n)).fetchall()

    def _remember(self, rows: list[tuple], shard: int) -> list[Message]:
        messages = []
        for rowid, payload, attempts in rows:
            message_id = self._global_id(rowid, shard)
            self.attempts[message_id] = attempts
            messages.append(Message(message_id, payload))
        return messages

    def _write_many(self, conn: sqlite3.Connection, sql: str, params: list[tuple]) -> int:
        """Rows changed; a single row autocommits, several share one transaction."""
        if len(params) == 1:
            return self.busy.run(lambda: conn.execute(sql, params[0]).rowcount)
        return self.busy.run(lambda: in_transaction(conn, lambda: conn.executemany(sql, params).rowcount))

    def _delay_ns(self, message_id: int, delay_s: float | None) -> int:
        if delay_s is None:
            delay_s = self.backoff_base_s * 2 ** self.attempts.get(message_id, 1)
        return int(delay_s * 1e9)

    def _global_id(self, rowid: int, shard: int) -> int:
        return rowid * self.shards + shard

    def _by_shard(self, ids: list[int]) -> dict[int, list[int]]:
        grouped: dict[int, list[int]] = {}
        for i in ids:
            grouped.setdefault(i % self.shards, []).append(i // self.shards)
        return grouped
