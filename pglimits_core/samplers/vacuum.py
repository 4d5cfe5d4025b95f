"""Per-second vacuum evidence for the interference study: is a vacuum running, on which table,
in which phase, how many dead tuples wait, who holds the oldest snapshot, what backends wait on.

Usage::

    from pglimits_core.samplers import SamplerSet
    from pglimits_core.samplers.vacuum import (ServerLogTail, VacuumSampler, parse_autovacuum_log,
                                               server_log_path, vacuum_windows, windows_from_log)

    tail = ServerLogTail(server_log_path(endpoint))
    with SamplerSet([VacuumSampler(endpoint.url, tables=["jobs"])]) as samplers:
        run_the_load()
    frame = samplers.dataframe()
    seen = vacuum_windows(frame, tables=["jobs"], auto_only=True)   # [Window(table, start_s, end_s)]
    logged = windows_from_log(parse_autovacuum_log(tail.read()), frame, tables=["jobs"])

Columns (sampler ``"vacuum"``): ``epoch_s`` (server clock, ties ``t`` to the log);
``<table>.n_dead_tup / n_live_tup / autovacuum_count / autovacuum_count_delta / last_autovacuum``
(epoch s); ``<table>.vacuum_phase / vacuum_auto / heap_blks_total / heap_blks_scanned /
heap_blks_vacuumed / index_vacuum_count`` (None when no vacuum runs on it); ``vacuums_running``
(every database), ``vacuum_tables`` and ``autovacuum_tables`` (this database, comma-joined);
``oldest_xmin_age_xacts``, ``oldest_xmin_pid``, ``oldest_xmin_state``, ``oldest_xmin_backend``;
``active_backends``, ``waiting_backends``, ``wait_events`` ("Type:Event=n;..." top five);
``wal_bytes_per_s`` (from pg_current_wal_lsn); ``checkpoints_timed_delta``,
``checkpoints_req_delta``, ``buffers_checkpoint_per_s`` (pg_stat_bgwriter on 16,
pg_stat_checkpointer on 17+); ``blks_hit_per_s``, ``blks_read_per_s``.

A vacuum shorter than the one-second interval can fall between two samples: the server log
(``vacuum_log``) sees every autovacuum run; this sampler sees the phase and the waits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from pglimits_core.samplers.base import CounterRates, Sampler
from pglimits_core.samplers.postgres import as_number, default_connect
from pglimits_core.samplers.vacuum_log import (
    LoggedVacuum,
    ServerLogTail,
    Window,
    bare_name,
    epoch_origin,
    parse_autovacuum_log,
    server_log_path,
    windows_from_log,
)

# the log side is re-exported: one import gives a caller the whole evidence kit
__all__ = ["LoggedVacuum", "ServerLogTail", "VacuumSampler", "Window", "epoch_origin",
           "format_wait_events", "parse_autovacuum_log", "parse_wait_events", "server_log_path",
           "vacuum_windows", "windows_from_log"]

#: the most frequent wait events reported per second
TOP_WAIT_EVENTS = 5
#: server_version_num from which checkpoint counters live in pg_stat_checkpointer
CHECKPOINTER_VIEW_FROM = 170000

TABLES_SQL = """
SELECT relname, n_live_tup, n_dead_tup, autovacuum_count,
       extract(epoch FROM last_autovacuum)::float8
FROM pg_stat_user_tables
WHERE %(tables)s::text[] IS NULL OR relname = ANY(%(tables)s::text[])
"""

# pg_class is per database: a vacuum in another database is counted but cannot be named here
PROGRESS_SQL = """
SELECT c.relname, p.phase, a.backend_type = 'autovacuum worker', p.heap_blks_total,
       p.heap_blks_scanned, p.heap_blks_vacuumed, p.index_vacuum_count, p.datname = current_database()
FROM pg_stat_progress_vacuum p
LEFT JOIN pg_class c ON c.oid = p.relid AND p.datname = current_database()
LEFT JOIN pg_stat_activity a ON a.pid = p.pid
ORDER BY c.relname
"""

# autovacuum workers skip each other's xmin, but every other snapshot holds back dead tuples
XMIN_SQL = """
SELECT age(backend_xmin), pid, state, backend_type
FROM pg_stat_activity
WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid()
ORDER BY age(backend_xmin) DESC LIMIT 1
"""

WAITS_SQL = f"""
SELECT wait_event_type || ':' || wait_event, count(*)
FROM pg_stat_activity
WHERE state = 'active' AND wait_event IS NOT NULL AND pid <> pg_backend_pid()
GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT {TOP_WAIT_EVENTS}
"""

BACKENDS_SQL = """
SELECT count(*) FILTER (WHERE state = 'active'),
       count(*) FILTER (WHERE state = 'active' AND wait_event IS NOT NULL)
FROM pg_stat_activity WHERE pid <> pg_backend_pid()
"""

WAL_SQL = ("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'), "
           "extract(epoch FROM clock_timestamp())::float8")

DATABASE_SQL = "SELECT blks_hit, blks_read FROM pg_stat_database WHERE datname = current_database()"

CHECKPOINT_SQL = {  # (timed, requested, buffers written) by where the server version keeps them
    "bgwriter": "SELECT checkpoints_timed, checkpoints_req, buffers_checkpoint FROM pg_stat_bgwriter",
    "checkpointer": "SELECT num_timed, num_requested, buffers_written FROM pg_stat_checkpointer",
}

PROGRESS_COLUMNS = ("heap_blks_total", "heap_blks_scanned", "heap_blks_vacuumed", "index_vacuum_count")


def checkpoint_view(server_version_num: int) -> str:
    """Which view holds the checkpoint counters: PG 17 moved them to pg_stat_checkpointer."""
    return "checkpointer" if server_version_num >= CHECKPOINTER_VIEW_FROM else "bgwriter"


def format_wait_events(rows: Sequence[tuple[str, int]]) -> str | None:
    """``[("Lock:transactionid", 3), ...]`` -> ``"Lock:transactionid=3;..."`` (None: nobody waits)."""
    return ";".join(f"{event}={count}" for event, count in rows) or None


def parse_wait_events(text: Any) -> dict[str, int]:
    """The inverse of ``format_wait_events``; {} for None/NaN (a second with no waits)."""
    if not isinstance(text, str) or not text:
        return {}
    pairs = (item.rsplit("=", 1) for item in text.split(";"))
    return {event: int(count) for event, count in pairs}


class VacuumSampler(Sampler):
    """The vacuum evidence once per second (eight small statements, one autocommit session).

    ``tables``: relation names reported per table (None = every user table). ``connect`` is
    injectable (tests pass a fake). A broken session is dropped and reopened next second.
    """

    name = "vacuum"

    def __init__(self, dsn: str, tables: Sequence[str] | None = None,
                 connect: Callable[[str], Any] = default_connect) -> None:
        self.dsn = dsn
        self.tables = list(tables) if tables is not None else None
        self.connect = connect
        self.connection: Any = None
        self.checkpoints = "bgwriter"
        self.counters = CounterRates()

    def sample(self, now: float) -> dict[str, Any]:
        if self.connection is None:
            self._open()
        try:
            with self.connection.cursor() as cursor:
                return self._read_all(cursor, now)
        except Exception:
            self.close()  # reconnect next second: the session may be broken or mid-timeout
            raise

    def _open(self) -> None:
        self.connection = self.connect(self.dsn)
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('server_version_num')::int")
            self.checkpoints = checkpoint_view(int(cursor.fetchone()[0]))

    def _read_all(self, cursor: Any, now: float) -> dict[str, Any]:
        row: dict[str, Any] = {}
        row.update(self._wal(cursor, now))
        row.update(self._tables(cursor, now))
        row.update(self._progress(cursor))
        row.update(self._oldest_xmin(cursor))
        row.update(self._waits(cursor))
        row.update(self._checkpoints(cursor, now))
        row.update(self._buffers(cursor, now))
        return row

    def _wal(self, cursor: Any, now: float) -> dict[str, Any]:
        cursor.execute(WAL_SQL)
        lsn_bytes, epoch = cursor.fetchone()
        return {"epoch_s": epoch, **self.counters.rates(now, {"wal_bytes": as_number(lsn_bytes)})}

    def _tables(self, cursor: Any, now: float) -> dict[str, Any]:
        cursor.execute(TABLES_SQL, {"tables": self.tables})
        row: dict[str, Any] = {}
        for table, live, dead, autovacuums, last in cursor.fetchall():
            counts = {f"{table}.autovacuum_count": autovacuums}
            row.update({f"{table}.n_live_tup": live, f"{table}.n_dead_tup": dead,
                        f"{table}.last_autovacuum": last, **counts,
                        **self.counters.deltas(now, counts)})
        return row

    def _progress(self, cursor: Any) -> dict[str, Any]:
        cursor.execute(PROGRESS_SQL)
        running = cursor.fetchall()
        here = [r for r in running if r[7] and r[0] is not None]
        row: dict[str, Any] = {"vacuums_running": len(running),
                               "vacuum_tables": ",".join(r[0] for r in here) or None,
                               "autovacuum_tables": ",".join(r[0] for r in here if r[2]) or None}
        for table in self.tables or []:
            row.update(_table_progress(table, None))
        for record in here:
            if self.tables is None or record[0] in self.tables:
                row.update(_table_progress(record[0], record))
        return row

    def _oldest_xmin(self, cursor: Any) -> dict[str, Any]:
        cursor.execute(XMIN_SQL)
        age, pid, state, backend = cursor.fetchone() or (0, None, None, None)
        return {"oldest_xmin_age_xacts": age, "oldest_xmin_pid": pid,
                "oldest_xmin_state": state, "oldest_xmin_backend": backend}

    def _waits(self, cursor: Any) -> dict[str, Any]:
        cursor.execute(WAITS_SQL)
        events = format_wait_events(cursor.fetchall())
        cursor.execute(BACKENDS_SQL)
        active, waiting = cursor.fetchone() or (0, 0)
        return {"active_backends": active, "waiting_backends": waiting, "wait_events": events}

    def _checkpoints(self, cursor: Any, now: float) -> dict[str, Any]:
        cursor.execute(CHECKPOINT_SQL[self.checkpoints])
        timed, requested, written = cursor.fetchone() or (None, None, None)
        deltas = self.counters.deltas(now, {"checkpoints_timed": timed, "checkpoints_req": requested})
        return {**deltas, **self.counters.rates(now, {"buffers_checkpoint": as_number(written)})}

    def _buffers(self, cursor: Any, now: float) -> dict[str, Any]:
        cursor.execute(DATABASE_SQL)
        hit, read = cursor.fetchone() or (None, None)
        return self.counters.rates(now, {"blks_hit": as_number(hit), "blks_read": as_number(read)})

    def close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            with contextlib.suppress(Exception):  # the session is being thrown away anyway
                connection.close()


def _table_progress(table: str, record: tuple | None) -> dict[str, Any]:
    """``<table>.vacuum_*`` columns from one progress row (all None when none runs on it)."""
    if record is None:
        return {f"{table}.vacuum_phase": None, f"{table}.vacuum_auto": None,
                **{f"{table}.{name}": None for name in PROGRESS_COLUMNS}}
    _, phase, auto, *progress, _ = record
    return {f"{table}.vacuum_phase": phase, f"{table}.vacuum_auto": bool(auto),
            **{f"{table}.{name}": as_number(v) for name, v in zip(PROGRESS_COLUMNS, progress, strict=True)}}


# --- windows from the samples -------------------------------------------------------------------

def sampler_rows(frame: Any) -> Any:
    """This sampler's rows of a SamplerSet frame; a PostgresSampler's when there are none (its
    ``vacuum_tables`` column names running vacuums too, so committed records can be read)."""
    if "sampler" not in frame.columns:
        return frame
    for name in (VacuumSampler.name, "postgres"):
        rows = frame[frame["sampler"] == name]
        if len(rows) and "vacuum_tables" in rows.columns:
            return rows
    return frame.iloc[0:0]


def sample_interval(times: Sequence[float]) -> float:
    """The median spacing of the samples (one second unless the set was told otherwise)."""
    gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False) if b > a)
    return gaps[len(gaps) // 2] if gaps else 1.0


def running_sets(rows: Any, column: str) -> list[set[str]]:
    """Per sample, the bare names of the tables a vacuum was running on."""
    values = rows[column] if column in rows.columns else [None] * len(rows)
    return [{bare_name(n) for n in v.split(",") if n} if isinstance(v, str) else set() for v in values]


def vacuum_windows(frame: Any, tables: Sequence[str] | None = None, auto_only: bool = False) -> list[Window]:
    """Windows where consecutive samples saw a vacuum on a table: from the first sample that saw
    it to one interval after the last (the run ended before the next sample). ``auto_only``
    keeps autovacuum runs only (VacuumSampler rows; a PostgresSampler's do not say)."""
    if frame is None or len(frame) == 0:
        return []
    rows = sampler_rows(frame).sort_values("t")
    auto = auto_only and "autovacuum_tables" in rows.columns
    running = running_sets(rows, "autovacuum_tables" if auto else "vacuum_tables")
    times = [float(t) for t in rows["t"]]
    step = sample_interval(times)
    names = sorted(set().union(*running)) if running else []
    windows = [w for name in names if tables is None or name in tables
               for w in _runs_of(name, times, running, step)]
    return sorted(windows, key=lambda w: (w.start_s, w.table))


def _runs_of(table: str, times: list[float], running: list[set[str]], step: float) -> list[Window]:
    windows, start, last = [], None, None
    for time_s, tables in zip(times, running, strict=True):
        if table in tables:
            start = time_s if start is None else start
            last = time_s
        elif start is not None:
            windows.append(Window(table, start, last + step))
            start = None
    if start is not None:
        windows.append(Window(table, start, last + step))
    return windows
