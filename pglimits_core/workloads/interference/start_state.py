"""The same start state for every window, and the record of it.

After the queue reset (TRUNCATE, prefill, VACUUM (FREEZE, ANALYZE)) the prefill's insert counters
could still be pending in the resetting backend: flushed after the VACUUM, they made the
statistics say "20,000 rows inserted since the last vacuum", and an insert-triggered autovacuum
fired in the first seconds of 9 of 18 windows. So the reset forces the flush before its VACUUM
(``flush_statistics``), and ``settle`` then waits (bounded) until no vacuum runs or is due on the
tables. ``table_state`` is read just before t = 0 and kept in the record, with the server's
autovacuum settings (``autovacuum_settings``): the thresholds the cycle count depends on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: how long settle waits for the tables to be quiet before it records that they were not
SETTLE_TIMEOUT_S = 15.0
SETTLE_POLL_S = 0.25
#: inserts or dead tuples since the last vacuum still counted as "none" (autovacuum's base threshold)
QUIET_ROWS = 50

STATE_SQL = """
SELECT c.relname, s.n_live_tup, s.n_dead_tup, s.n_ins_since_vacuum, s.n_mod_since_analyze,
       extract(epoch FROM s.last_autovacuum), extract(epoch FROM s.last_autoanalyze), s.autovacuum_count,
       s.autoanalyze_count, c.relpages, pg_total_relation_size(c.oid)
FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.relname = ANY(%s) ORDER BY c.relname
"""
STATE_FIELDS = ("n_live_tup", "n_dead_tup", "n_ins_since_vacuum", "n_mod_since_analyze", "last_autovacuum_epoch_s",
                "last_autoanalyze_epoch_s", "autovacuum_count", "autoanalyze_count", "relpages", "total_bytes")
#: a vacuum in progress on one of the tables, or an autovacuum worker busy with one of them
RUNNING_SQL = """
SELECT count(*) FROM pg_stat_progress_vacuum p JOIN pg_class c ON c.oid = p.relid WHERE c.relname = ANY(%s)
UNION ALL
SELECT count(*) FROM pg_stat_activity
WHERE backend_type = 'autovacuum worker' AND EXISTS (SELECT 1 FROM unnest(%s::text[]) t WHERE query LIKE '%%.' || t || '%%')
"""
SETTINGS_SQL = ("SELECT name, setting FROM pg_settings WHERE name LIKE 'autovacuum%' "
                "OR name = 'log_autovacuum_min_duration' ORDER BY name")


def flush_statistics(conn) -> None:
    """This backend's pending counters into the shared statistics now (PostgreSQL 15+), and the
    session's cached snapshot dropped so the next read sees them."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")


def table_state(conn, tables: list[str]) -> dict[str, dict[str, Any]]:
    """Per table: live/dead tuples, inserts and changes since the last vacuum/analyze, the last
    autovacuum and autoanalyze (epoch s), their counts, pages and total bytes."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    rows = conn.execute(STATE_SQL, (tables,)).fetchall()
    return {row[0]: {name: _number(value) for name, value in zip(STATE_FIELDS, row[1:], strict=True)} for row in rows}


def _number(value: Any) -> Any:
    return None if value is None else (round(float(value), 3) if not isinstance(value, int) else value)


def vacuum_busy(conn, tables: list[str]) -> bool:
    """A vacuum runs on one of the tables (manual or auto), or an autovacuum worker works on one."""
    return any(row[0] for row in conn.execute(RUNNING_SQL, (tables, tables)).fetchall())


def quiet(state: dict[str, dict[str, Any]]) -> bool:
    """Nothing due: no table has more than ``QUIET_ROWS`` inserts or dead tuples since its vacuum."""
    return all((s.get("n_ins_since_vacuum") or 0) <= QUIET_ROWS and (s.get("n_dead_tup") or 0) <= QUIET_ROWS
               for s in state.values())


def settle(conn, tables: list[str], timeout_s: float = SETTLE_TIMEOUT_S,
           clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Wait until no vacuum runs on ``tables`` and none is due; how long it took, and whether it
    settled (a window that starts unsettled says so in its record)."""
    flush_statistics(conn)
    start = clock()
    while True:
        busy, state = vacuum_busy(conn, tables), table_state(conn, tables)
        if not busy and quiet(state):
            return {"settled": True, "settle_s": round(clock() - start, 2)}
        if clock() - start >= timeout_s:
            return {"settled": False, "settle_s": round(clock() - start, 2),
                    "settle_reason": "a vacuum was running" if busy else "rows still due for a vacuum"}
        sleep(SETTLE_POLL_S)


def autovacuum_settings(conn) -> dict[str, str]:
    """Every autovacuum setting (thresholds, scale factors, naptime, cost) and
    log_autovacuum_min_duration, as the server reports them."""
    return dict(conn.execute(SETTINGS_SQL).fetchall())
