"""LISTEN/NOTIFY: Postgres pub/sub on psycopg 3.

A publish is ``SELECT pg_notify(channel, payload)`` in autocommit — one publish = one
transaction — or, batched, one statement ``SELECT pg_notify(channel, p) FROM unnest(array)``:
``batch`` notifications in one transaction, one round trip. A NOTIFY is transactional: it is
delivered only once its transaction commits, so it can share one with a write (the
commit-serialization rows). A subscriber is ``LISTEN`` on its own session (no pooler can share
it) and reads with psycopg's ``notifies()``. Statements run with ``prepare=True``, so the
server plans each once per connection.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import psycopg
from psycopg import sql

from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.pubsub.systems.base import PubsubSystem

NOTIFY_ONE = "SELECT pg_notify(%s, %s)"
NOTIFY_MANY = "SELECT pg_notify(%s, p) FROM unnest(%s::text[]) AS p"
WRITES_TABLE = "pubsub_writes"
INSERT = f"INSERT INTO {WRITES_TABLE} (payload) VALUES (repeat('w', 64))"
#: the settings that bound a pub/sub point on Postgres, read back per point
LIMIT_SETTINGS = ("max_connections", "synchronous_commit", "server_version")
#: connections a Postgres point needs beyond its workers and idle listeners: the samplers, the
#: server watch, the study's own, and superuser_reserved_connections
SPARE_CONNECTIONS = 10


class PostgresNotify(PubsubSystem):
    system = "pg_notify"
    transactional = True
    conn: psycopg.Connection | None = None

    def open(self) -> None:
        self.conn = self._connect()

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(self.url, autocommit=True)

    def close(self) -> None:
        self.conn.close()

    # --- publishing ---------------------------------------------------------------------
    def publish(self, channel: str, payloads: list[str]) -> None:
        if len(payloads) == 1:
            self.conn.execute(NOTIFY_ONE, (channel, payloads[0]), prepare=True)
        else:
            self.conn.execute(NOTIFY_MANY, (channel, payloads), prepare=True)

    def publish_once(self, channel: str, payload: str) -> None:
        # unprepared, the channel a literal: the probe's statement as it always was
        with self._connect() as conn:
            conn.execute(sql.SQL("SELECT pg_notify({}, %s)").format(sql.Literal(channel)), (payload,))

    # --- subscribing --------------------------------------------------------------------
    def listen(self, channel: str) -> None:
        self.conn.execute(f'LISTEN "{channel}"')  # confirmed once execute returns

    def receive(self, batch: int, wait_s: float) -> Iterator[str]:
        for notify in self.conn.notifies(timeout=wait_s, stop_after=batch):
            yield notify.payload

    def stall(self, seconds: float) -> None:
        """Inside an open transaction: a listener in a transaction reads no notification until
        it ends, so the shared notification queue holds them meanwhile."""
        with self.conn.transaction():
            self.conn.execute("SELECT txid_current()")
            time.sleep(seconds)

    def listen_idle(self, stack: ExitStack, channel: str) -> None:
        conn = stack.enter_context(self._connect())
        conn.execute(f'LISTEN "{channel}"')

    # --- the server ---------------------------------------------------------------------
    def limits(self) -> dict[str, Any]:
        with self._connect() as conn:
            return {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in LIMIT_SETTINGS}

    @classmethod
    def check_room(cls, limits: dict[str, Any], connections: int) -> None:
        """A point that needs more connections than ``max_connections`` allows is not run: the
        reason (and the fix) is its failure, listed under what could not be run."""
        allowed = int(limits.get("max_connections", 0) or 0)
        if allowed and connections + SPARE_CONNECTIONS > allowed:
            raise PGLimitsError(f"postgres max_connections={allowed} leaves no room for {connections} connections "
                                f"(workers + idle listeners; LISTEN needs a session of its own, no pooler shares it)",
                                "set pubsub.postgres_max_connections in the profile (the study's Postgres starts "
                                "with it; servers already running keep theirs) to run this point")

    def watcher(self) -> Callable[[], dict[str, Any]]:
        conn = self._connect()
        return lambda: {"queue_usage": conn.execute("SELECT pg_notification_queue_usage()").fetchone()[0]}

    # --- the commit-serialization writers -----------------------------------------------
    def reset_writes(self) -> None:
        with self._connect() as conn:
            conn.execute(f"DROP TABLE IF EXISTS {WRITES_TABLE}")
            conn.execute(f"CREATE TABLE {WRITES_TABLE} (id bigserial PRIMARY KEY, at timestamptz DEFAULT now(), "
                         "payload text)")

    def write(self) -> None:
        self.conn.execute(INSERT, prepare=True)

    def write_then_select(self, payload: str) -> None:
        with self.conn.transaction():
            self.conn.execute(INSERT, prepare=True)
            self.conn.execute("SELECT length(%s)", (payload,), prepare=True)

    def publish_after_write(self, channel: str, payloads: list[str]) -> None:
        with self.conn.transaction():
            self.conn.execute(INSERT, prepare=True)
            self.publish(channel, payloads)
