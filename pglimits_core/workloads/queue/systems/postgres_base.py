"""What every Postgres queue variant shares: the connection, its settings, statement helpers.

One psycopg 3 connection per worker, autocommit, because in every variant a single statement
is the whole transaction (claim commit, ack commit) — an explicit BEGIN/COMMIT would add two
round trips per operation. Statements run with ``prepare=True`` so the server plans each once
per connection, as pgbench ``-M prepared`` does.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg import sql

from pglimits_core.workloads.queue.systems.base import QueueAdapter
from pglimits_core.workloads.queue.systems.durability import NONE, PER_COMMIT, PERIODIC, Promise

# Server settings a queue run's durability depends on; read back on the variant's own session
# (synchronous_commit is set per session) and recorded in describe().
DURABILITY_SETTINGS = ("synchronous_commit", "fsync", "wal_level", "full_page_writes",
                       "wal_writer_delay", "synchronous_standby_names")

_FLUSHED = Promise(PER_COMMIT, True, "a commit returns after its WAL is written and fsynced")
# With no synchronous standby (ours: synchronous_standby_names is empty) every level above
# "off" waits for the local WAL flush, so they are all one class here.
PROMISES: dict[str, Promise] = {
    "on": _FLUSHED, "local": _FLUSHED, "remote_write": _FLUSHED, "remote_apply": _FLUSHED,
    # The WAL sits in shared memory until the WAL writer writes it (within 3 x wal_writer_delay),
    # and shared memory dies with the server's processes: even a process kill can lose commits.
    "off": Promise(PERIODIC, False, "a commit returns before its WAL is written; the WAL writer "
                                    "writes and fsyncs it within 3 x wal_writer_delay"),
}
FSYNC_OFF = Promise(NONE, False, "fsync=off: Postgres never fsyncs (and synchronous_commit "
                                 "decides whether the WAL even reached the kernel)")
UNLOGGED = Promise(NONE, False, "UNLOGGED table: its rows write no WAL, and crash recovery truncates "
                                "it, so every job waiting or claimed at a server crash is lost")
PERSISTENCE_SQL = "SELECT relpersistence FROM pg_class WHERE oid = %s::regclass"


class PostgresQueueBase(QueueAdapter):
    """Connection + settings for SKIP LOCKED (two-phase, delete-mode) and pgmq."""

    conn: psycopg.Connection | None = None
    durability_option = "synchronous_commit"
    durability_default = "on"  # Postgres' default, and configs/servers/postgres.conf's
    promises = PROMISES

    def _connect(self) -> None:
        self.conn = psycopg.connect(self.url, autocommit=True,
                                    application_name=f"pglimits-queue-{self.system}")
        if "synchronous_commit" in self.options:
            # A session setting, so a variant can trade durability without restarting the server;
            # set_config takes it as a parameter (the registry validated the value anyway).
            self.conn.execute("SELECT set_config('synchronous_commit', %s, false)",
                              (self.options["synchronous_commit"],))

    def queue_tables(self) -> list[str]:
        """The tables this queue writes, schema-qualified where not in the search path."""
        raise NotImplementedError

    def settle(self) -> dict[str, Any]:
        """VACUUM ANALYZE the queue's tables: dead tuples of the prefill (and of the previous
        point's TRUNCATE) gone, planner statistics fresh, the visibility map set. Without it,
        autovacuum ran inside most measured windows and points started from different states."""
        started = time.monotonic()
        tables = self.queue_tables()
        for table in tables:
            self.conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(*table.split("."))))
        return {"settle": f"VACUUM ANALYZE {', '.join(tables)}", "settle_s": round(time.monotonic() - started, 3)}

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Rows of one prepared, autocommitted statement."""
        return self.conn.execute(sql, params, prepare=True).fetchall()

    def run(self, sql: str, params: tuple = ()) -> None:
        self.conn.execute(sql, params, prepare=True)

    def run_script(self, statements: list[str]) -> None:
        """DDL in one transaction so a half-created schema is never left behind."""
        with self.conn.transaction():
            for statement in statements:
                self.conn.execute(statement)

    def queue_bytes(self) -> int:
        with psycopg.connect(self.url) as conn:
            return sum(conn.execute("SELECT pg_total_relation_size(%s::regclass)", (t,)).fetchone()[0]
                       for t in self.queue_tables())

    def server_settings(self) -> dict[str, str]:
        return {name: self.conn.execute(f"SHOW {name}").fetchone()[0] for name in DURABILITY_SETTINGS}

    def durability_setting(self) -> str:
        return self.server_settings()["synchronous_commit"]

    def durability_description(self) -> dict[str, Any]:
        if self.server_settings()["fsync"] == "off":
            return FSYNC_OFF.describe("fsync=off")
        if self.unlogged_tables():
            return UNLOGGED.describe(f"persistence=unlogged ({', '.join(self.unlogged_tables())})")
        return super().durability_description()

    def unlogged_tables(self) -> list[str]:
        """The queue's tables the server holds UNLOGGED right now (read back, not assumed)."""
        return [t for t in self.queue_tables() if self.conn.execute(PERSISTENCE_SQL, (t,)).fetchone()[0] == "u"]

    def set_persistence(self) -> None:
        """The queue's tables LOGGED or UNLOGGED as the variant asks (the same table serves every
        variant, so a logged variant after an unlogged one turns it back)."""
        want = "unlogged" if self.options.get("persistence") == "unlogged" else "logged"
        for table in self.queue_tables():
            if (table in self.unlogged_tables()) != (want == "unlogged"):
                self.conn.execute(sql.SQL("ALTER TABLE {} SET " + want.upper()).format(sql.Identifier(*table.split("."))))

    def base_description(self, **extra: Any) -> dict[str, Any]:
        return super().base_description(client=f"psycopg {psycopg.__version__} (prepared, autocommit)",
                                        server_settings=self.server_settings(), **extra)


def copy_rows(conn: psycopg.Connection, statement: str | sql.Composable, rows: Iterable[tuple]) -> None:
    """``COPY ... FROM STDIN`` of ``rows`` in one transaction (a prefill's fast path)."""
    with conn.transaction(), conn.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)
