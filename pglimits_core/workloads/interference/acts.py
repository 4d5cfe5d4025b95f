"""The mechanisms' acts inside a churn window, each bounded and always undone.

(c) ``held_xmin``: at ``before_s`` one session takes an XID and a REPEATABLE READ snapshot
(``studies.held_xmin``: verified in pg_stat_activity, rolled back and its backend gone when the
block ends, with a server-side backstop), holds it ``act_s``, then lets go: dead tuples cannot be
removed meanwhile, whatever autovacuum does. (d) ``autovacuum_off``: at ``before_s``
``ALTER TABLE jobs SET (autovacuum_enabled = off)``, ``act_s`` later ``RESET`` — in a
``finally``, on a fresh session if the first one broke, so the table never stays without it.

Each act returns when things happened, in seconds from the window's t = 0, and the facts it
checked (the holder's pid, whether its backend is gone afterwards).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from pglimits_core.studies.held_xmin import APPLICATION_NAME, held_xmin
from pglimits_core.workloads.interference.churn import QUEUE_TABLE
from pglimits_core.workloads.interference.window import sleep_until

#: how long the ALTER TABLE may wait for its lock (a running autovacuum yields to it)
LOCK_TIMEOUT = "10s"


def hold_xmin(url: str, before_s: float, act_s: float):
    """The act of mechanism (c), for ``measure_window``."""

    def act(origin: float) -> dict[str, Any]:
        sleep_until(origin + before_s)
        with held_xmin(url, seconds=act_s) as held:
            started = time.monotonic() - origin
            sleep_until(origin + before_s + act_s)
        ended = time.monotonic() - origin
        return {"act_start_s": started, "act_end_s": ended, "holder_pid": held.pid,
                "holder_xid": held.xid, "holder_gone": holder_gone(url, held.pid)}

    return act


def holder_gone(url: str, pid: int) -> bool:
    """No backend with the holder's pid (or the holder's application name) is left."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s OR application_name = %s",
                           (pid, APPLICATION_NAME)).fetchone()
    return row[0] == 0


def autovacuum_off(url: str, before_s: float, act_s: float):
    """The act of mechanism (d), for ``measure_window``."""

    def act(origin: float) -> dict[str, Any]:
        sleep_until(origin + before_s)
        started = None
        try:
            set_autovacuum(url, enabled=False)
            started = time.monotonic() - origin
            sleep_until(origin + before_s + act_s)
        finally:
            set_autovacuum(url, enabled=True)
        return {"act_start_s": started, "act_end_s": time.monotonic() - origin,
                "autovacuum_restored": autovacuum_enabled(url)}

    return act


def set_autovacuum(url: str, enabled: bool) -> None:
    """``autovacuum_enabled`` off on the queue table, or back to the server's setting (RESET)."""
    import psycopg

    sql = (f"ALTER TABLE {QUEUE_TABLE} RESET (autovacuum_enabled)" if enabled
           else f"ALTER TABLE {QUEUE_TABLE} SET (autovacuum_enabled = off)")
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        conn.execute(sql)


def autovacuum_enabled(url: str) -> bool:
    """The queue table carries no ``autovacuum_enabled = off`` reloption."""
    import psycopg

    with contextlib.closing(psycopg.connect(url, autocommit=True)) as conn:
        options = conn.execute("SELECT reloptions FROM pg_class WHERE relname = %s", (QUEUE_TABLE,)).fetchone()
    values = (options[0] if options else None) or []
    return not any(o.startswith("autovacuum_enabled=f") for o in values)
