"""The mechanisms' acts inside a churn window, each bounded and always undone.

(c) ``held_xmin``: at ``before_s`` one session takes an XID and a REPEATABLE READ snapshot
(``studies.held_xmin``: verified in pg_stat_activity, rolled back and its backend gone when the
block ends, with a server-side backstop), holds it ``act_s``, then lets go: dead tuples cannot be
removed meanwhile, whatever autovacuum does. (d) ``autovacuum_off``: at ``before_s``
``ALTER TABLE jobs SET (autovacuum_enabled = off)``, ``act_s`` later ``RESET`` — in a
``finally``, on a fresh session if the first one broke, so the table never stays without it.

(e) ``idle_xid`` / ``rr_query``: the horizons production holds (``studies.horizons``): a session
idle in a transaction that took an XID, or a REPEATABLE READ query running ``act_s`` — each
verified in pg_stat_activity and always released; with ``timeout_s`` the server ends it first (the
mitigation), and the act records when the horizon moved.

Each act returns when things happened, in seconds from the window's t = 0, and the facts it
checked (the holder's pid, whether its backend is gone afterwards).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from pglimits_core.studies import horizons
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


def hold(kind: str, url: str, before_s: float, act_s: float, timeout_s: float | None = None):
    """The act of mechanism (e): the horizon held the ``kind`` way from ``before_s`` for ``act_s``."""

    def act(origin: float) -> dict[str, Any]:
        sleep_until(origin + before_s)
        released = None
        with horizons.held_horizon(kind, url, seconds=act_s, timeout_s=timeout_s) as held:
            started = time.monotonic() - origin
            if timeout_s is not None:  # the server ends the holder: when did the horizon move
                released = horizons.released_after_s(url, held, limit_s=act_s)
            sleep_until(origin + before_s + act_s)
        ended = time.monotonic() - origin
        return {"act_start_s": started, "act_end_s": ended, "holder_kind": kind, "holder_pid": held.pid,
                "holder_column": held.column, "holder_horizon": held.horizon, "holder_backstop_s": held.backstop_s,
                "timeout_s": timeout_s, "horizon_released_s": released,
                "holder_gone": holder_gone(url, held.pid, horizons.APPLICATION_NAME)}

    return act


def holder_gone(url: str, pid: int, application_name: str = APPLICATION_NAME) -> bool:
    """No backend with the holder's pid (or the holder's application name) is left."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s OR application_name = %s",
                           (pid, application_name)).fetchone()
    return row[0] == 0


#: seconds between two reads of the queue's dead tuples while the act waits for ``until_dead``
POLL_S = 0.5


def autovacuum_off(url: str, before_s: float, act_s: float, until_dead: int | None = None):
    """The act of mechanism (d), for ``measure_window``: off for ``act_s``, or with ``until_dead``
    until the queue holds that many dead tuples (at most ``act_s``) — the debt autovacuum then
    pays at once."""

    def act(origin: float) -> dict[str, Any]:
        sleep_until(origin + before_s)
        started, dead = None, None
        try:
            set_autovacuum(url, enabled=False)
            started = time.monotonic() - origin
            dead = wait_for_dead(url, until_dead, origin + before_s + act_s)
        finally:
            set_autovacuum(url, enabled=True)
        return {"act_start_s": started, "act_end_s": time.monotonic() - origin, "until_dead": until_dead,
                "dead_at_act_end": dead, "reached_target": None if until_dead is None or dead is None
                else dead >= until_dead, "autovacuum_restored": autovacuum_enabled(url)}

    return act


def wait_for_dead(url: str, until_dead: int | None, deadline: float) -> int | None:
    """Until the queue table's ``n_dead_tup`` reaches ``until_dead`` or the monotonic ``deadline``
    (None: just the deadline); its last reading."""
    import psycopg

    with contextlib.closing(psycopg.connect(url, autocommit=True, connect_timeout=5)) as conn:
        dead = dead_tuples(conn)
        while time.monotonic() < deadline and (until_dead is None or (dead or 0) < until_dead):
            time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
            dead = dead_tuples(conn)
    return dead


def dead_tuples(conn: Any) -> int | None:
    """The queue table's dead tuples as the statistics show them (flushed about once a second)."""
    row = conn.execute("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = %s", (QUEUE_TABLE,)).fetchone()
    return None if row is None else int(row[0])


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
    return not any(autovacuum_off_option(o) for o in values)


#: how a reloption may spell a false boolean (the server keeps the value as written: "off", "false", ...)
FALSE_WORDS = ("off", "false", "f", "no", "n", "0")


def autovacuum_off_option(option: str) -> bool:
    """``autovacuum_enabled=off`` (or any other spelling of false) in a table's reloptions."""
    name, _, value = option.partition("=")
    return name == "autovacuum_enabled" and value.lower() in FALSE_WORDS
