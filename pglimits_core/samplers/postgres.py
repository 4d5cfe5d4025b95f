"""Per-second PostgreSQL statistics, in the spirit of BenchBase's ``PostgresCollector``.

One autocommit connection of its own, a small ``statement_timeout``, one round trip per view
(six statements per second). Counters become per-second rates (``wal_bytes_per_s``) or, for rare
events, per-interval deltas (``checkpoints_req_delta``); levels are reported as read.

The sampler's own statements are transactions too: they add about six commits per second to
``xact_commit_per_s``, negligible against the thousands a workload drives but visible when idle.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

from pglimits_core.samplers.base import CounterRates, Sampler

#: milliseconds; a stats query slower than this is a symptom (lock pile-up, overloaded box)
#: and must not stall the one-second cadence — the sample fails and is counted instead
STATEMENT_TIMEOUT_MS = 500
#: seconds to wait for a connection before this second's sample counts as failed
CONNECT_TIMEOUT_S = 2
#: characters of an autovacuum worker's query kept per worker (it names the table)
QUERY_TEXT_CHARS = 120

WAL_SQL = "SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal"

DATABASE_COUNTERS = (
    "xact_commit",
    "xact_rollback",
    "blks_hit",
    "blks_read",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "deadlocks",
    "temp_bytes",
)
DATABASE_SQL = (
    f"SELECT {', '.join(DATABASE_COUNTERS)} FROM pg_stat_database "
    "WHERE datname = current_database()"
)

# PG 16 still keeps checkpoint counters in pg_stat_bgwriter (PG 17 moves them out)
BGWRITER_COUNTERS = (
    "checkpoints_timed",
    "checkpoints_req",
    "buffers_checkpoint",
    "buffers_clean",
    "buffers_backend",
)
BGWRITER_SQL = f"SELECT {', '.join(BGWRITER_COUNTERS)} FROM pg_stat_bgwriter"

TABLES_SQL = """
SELECT relname, n_live_tup, n_dead_tup, autovacuum_count, autoanalyze_count,
       extract(epoch FROM last_autovacuum)::float8, pg_total_relation_size(relid)
FROM pg_stat_user_tables
WHERE %(tables)s::text[] IS NULL OR relname = ANY(%(tables)s::text[])
"""

VACUUM_PROGRESS_SQL = """
SELECT count(*), string_agg(DISTINCT phase, ','),
       string_agg(relid::regclass::text, ','), sum(heap_blks_scanned)
FROM pg_stat_progress_vacuum
"""

# one pass over pg_stat_activity answers autovacuum workers and the oldest snapshot; the
# notification queue rides along because it is a single function call. An xmin age of 0 means
# no other session holds a snapshot right now (idle autocommit clients hold none).
ACTIVITY_SQL = f"""
SELECT count(*) FILTER (WHERE backend_type = 'autovacuum worker'),
       string_agg(left(query, {QUERY_TEXT_CHARS}), ' | ')
           FILTER (WHERE backend_type = 'autovacuum worker'),
       coalesce(max(age(backend_xmin)) FILTER (WHERE pid <> pg_backend_pid()), 0),
       pg_notification_queue_usage()
FROM pg_stat_activity
"""


def as_number(value: Any) -> int | float | None:
    """Postgres ``numeric`` arrives as ``Decimal``; rates and DataFrames want int/float."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def default_connect(dsn: str) -> Any:
    """An autocommit psycopg 3 connection with a short statement timeout, named in pg_stat_activity."""
    import psycopg

    connection = psycopg.connect(
        dsn,
        autocommit=True,
        connect_timeout=CONNECT_TIMEOUT_S,
        application_name="pglimits-sampler",
    )
    connection.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
    return connection


class PostgresSampler(Sampler):
    """pg_stat_* once per second for the current database and the tables of interest.

    ``tables``: relation names to report per table (None = every user table; pass a list in
    real runs so the column count stays small). ``connect`` builds the connection from the DSN
    (injectable: tests pass a fake). A broken connection is dropped and reopened next second.
    """

    name = "postgres"

    def __init__(
        self,
        dsn: str,
        tables: Sequence[str] | None = None,
        connect: Callable[[str], Any] = default_connect,
    ) -> None:
        self.dsn = dsn
        self.tables = list(tables) if tables is not None else None
        self.connect = connect
        self.connection: Any = None
        self.counters = CounterRates()

    def sample(self, now: float) -> dict[str, Any]:
        """One row: WAL, database, bgwriter, per-table, vacuum-progress and activity metrics."""
        if self.connection is None:
            self.connection = self.connect(self.dsn)
        try:
            with self.connection.cursor() as cursor:
                return self._read_all(cursor, now)
        except Exception:
            self.close()  # reconnect next second: the session may be broken or mid-timeout
            raise

    def _read_all(self, cursor: Any, now: float) -> dict[str, Any]:
        row: dict[str, Any] = {}
        row.update(self._wal(cursor, now))
        row.update(self._database(cursor, now))
        row.update(self._bgwriter(cursor, now))
        row.update(self._tables(cursor, now))
        row.update(self._vacuum_progress(cursor))
        row.update(self._activity(cursor))
        return row

    def _fetch_counters(self, cursor: Any, sql: str, names: Iterable[str]) -> dict[str, Any]:
        cursor.execute(sql)
        values = cursor.fetchone() or (None,) * len(tuple(names))
        return {name: as_number(value) for name, value in zip(names, values, strict=True)}

    def _wal(self, cursor: Any, now: float) -> dict[str, Any]:
        counters = self._fetch_counters(cursor, WAL_SQL, ("wal_records", "wal_fpi", "wal_bytes"))
        return self.counters.rates(now, counters)

    def _database(self, cursor: Any, now: float) -> dict[str, Any]:
        counters = self._fetch_counters(cursor, DATABASE_SQL, DATABASE_COUNTERS)
        rare = {key: counters.pop(key) for key in ("deadlocks",)}
        return {**self.counters.rates(now, counters), **self.counters.deltas(now, rare)}

    def _bgwriter(self, cursor: Any, now: float) -> dict[str, Any]:
        counters = self._fetch_counters(cursor, BGWRITER_SQL, BGWRITER_COUNTERS)
        checkpoints = {key: counters.pop(key) for key in ("checkpoints_timed", "checkpoints_req")}
        return {**self.counters.rates(now, counters), **self.counters.deltas(now, checkpoints)}

    def _tables(self, cursor: Any, now: float) -> dict[str, Any]:
        cursor.execute(TABLES_SQL, {"tables": self.tables})
        row: dict[str, Any] = {}
        for record in cursor.fetchall():
            row.update(self._one_table(now, *record))
        return row

    def _one_table(
        self,
        now: float,
        table: str,
        live: int,
        dead: int,
        autovacuums: int,
        autoanalyzes: int,
        last_autovacuum: float | None,
        size: int,
    ) -> dict[str, Any]:
        """Columns ``<table>.<metric>``; ``last_autovacuum`` in Unix epoch seconds (or None)."""
        events = self.counters.deltas(
            now,
            {f"{table}.autovacuum_count": autovacuums, f"{table}.autoanalyze_count": autoanalyzes},
        )
        return {
            f"{table}.n_live_tup": live,
            f"{table}.n_dead_tup": dead,
            f"{table}.last_autovacuum": last_autovacuum,
            f"{table}.total_bytes": size,
            **events,
        }

    def _vacuum_progress(self, cursor: Any) -> dict[str, Any]:
        cursor.execute(VACUUM_PROGRESS_SQL)
        running, phases, tables, scanned = cursor.fetchone() or (0, None, None, None)
        return {
            "vacuums_running": running,
            "vacuum_phases": phases,
            "vacuum_tables": tables,
            "vacuum_heap_blks_scanned": as_number(scanned),
        }

    def _activity(self, cursor: Any) -> dict[str, Any]:
        cursor.execute(ACTIVITY_SQL)
        workers, queries, xmin_age, queue_usage = cursor.fetchone() or (0, None, None, None)
        return {
            "autovacuum_workers": workers,
            "autovacuum_queries": queries,
            "oldest_xmin_age_xacts": xmin_age,
            "notification_queue_usage": as_number(queue_usage),
        }

    def close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            # the session is being thrown away anyway
            with contextlib.suppress(Exception):
                connection.close()
