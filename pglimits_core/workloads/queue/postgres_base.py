"""What every Postgres queue variant shares: the connection, its settings, statement helpers.

One psycopg 3 connection per worker, autocommit, because in every variant a single statement
is the whole transaction (claim commit, ack commit) — an explicit BEGIN/COMMIT would add two
round trips per operation. Statements run with ``prepare=True`` so the server plans each once
per connection, as pgbench ``-M prepared`` does.
"""

from __future__ import annotations

from typing import Any

import psycopg

from pglimits_core.workloads.queue.base import QueueAdapter

# Server settings a queue run's durability depends on; recorded in describe().
DURABILITY_SETTINGS = ("synchronous_commit", "fsync", "wal_level", "full_page_writes")


class PostgresQueueBase(QueueAdapter):
    """Connection + settings for SKIP LOCKED (two-phase, delete-mode) and pgmq."""

    conn: psycopg.Connection | None = None

    def _connect(self) -> None:
        self.conn = psycopg.connect(self.url, autocommit=True,
                                    application_name=f"pglimits-queue-{self.system}")
        if "synchronous_commit" in self.options:
            # A session setting, so a variant can trade durability without restarting the server.
            self.conn.execute(f"SET synchronous_commit = {self.options['synchronous_commit']}")

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

    def server_settings(self) -> dict[str, str]:
        return {name: self.conn.execute(f"SHOW {name}").fetchone()[0] for name in DURABILITY_SETTINGS}

    def durability(self) -> str:
        sync = self.server_settings()["synchronous_commit"]
        return f"WAL fsync on commit (synchronous_commit={sync})" if sync != "off" else \
            "commit returns before WAL fsync (synchronous_commit=off): last commits can be lost"

    def base_description(self, **extra: Any) -> dict[str, Any]:
        return super().base_description(client=f"psycopg {psycopg.__version__} (prepared, autocommit)",
                                        server_settings=self.server_settings(),
                                        durability=self.durability(), **extra)
