"""The two ways production holds back Postgres's xmin horizon, each verified and always released.

- ``idle_xid``: a READ COMMITTED session that began a transaction, took an XID and sits idle in
  it — an application that wrote and now waits on something else. Between statements a READ
  COMMITTED session holds no snapshot (its ``backend_xmin`` is NULL): its XID is what holds the
  horizon, so the hold is verified by ``backend_xid``.
- ``rr_query``: a REPEATABLE READ transaction whose snapshot is taken by a first read and then
  kept by one long *active* statement — an analytics query. The statement is ``pg_sleep``: it
  holds the snapshot exactly as a long scan does without spending the server's core (a scan
  would add CPU contention to what a window measures, and that is not the horizon). Verified by
  ``backend_xmin`` with ``state = 'active'``.

Usage::

    from pglimits_core.studies.horizons import held_horizon

    with held_horizon("idle_xid", endpoint.url, seconds=60) as hold:  # verified in pg_stat_activity
        hold.pid, hold.column, hold.horizon     # the backend, the column that shows it, its value
        run_the_load()                          # dead tuples pile up: no vacuum can remove them
    # here the statement is cancelled, the transaction rolled back, the backend gone (also on
    # an error or Ctrl-C inside the block)

Backstops, so a holder is never left behind: the session's ``idle_in_transaction_session_timeout``
and ``statement_timeout`` are the planned hold plus ``margin_s`` (a killed harness's holder is
ended by the server), and ``client_connection_check_interval`` lets an active statement notice a
client that died. ``timeout_s`` shorter than the hold is the mitigation production sets on such
sessions: the server ends the holder at ``timeout_s``, and ``released_after_s`` measures when the
horizon moved.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pglimits_core.studies.held_xmin import BACKSTOP_MARGIN_S, ensure_gone, release

IDLE_XID, RR_QUERY = "idle_xid", "rr_query"
KINDS = (IDLE_XID, RR_QUERY)
APPLICATION_NAME = "pglimits-horizon"
#: seconds to wait for the hold to show in pg_stat_activity
VERIFY_TIMEOUT_S = 5.0
#: how often an active statement checks that its client is still there (PG 14+)
CLIENT_CHECK = "1s"
#: (the column that shows the horizon, the state the holder is in while it holds it)
SHOWN_BY = {IDLE_XID: ("backend_xid", "idle in transaction"), RR_QUERY: ("backend_xmin", "active")}


@dataclass(frozen=True)
class Hold:
    """A verified hold: the holding backend, the pg_stat_activity column showing the horizon and
    its value then, the server-side backstop, and when it was verified (epoch seconds)."""

    kind: str
    pid: int
    column: str
    horizon: int
    backstop_s: int
    started_epoch_s: float


def default_connect(dsn: str) -> Any:
    import psycopg

    return psycopg.connect(dsn, autocommit=True, connect_timeout=5, application_name=APPLICATION_NAME)


def backstop_of(seconds: float, timeout_s: float | None, margin_s: float) -> int:
    """The server's own deadline for the holder: the mitigation's timeout, else the hold + margin."""
    return max(1, math.ceil(timeout_s if timeout_s is not None else seconds + margin_s))


def observed(dsn: str, pid: int, column: str, state: str, connect: Callable[[str], Any],
             timeout_s: float = VERIFY_TIMEOUT_S) -> int:
    """``column`` of the holder's pg_stat_activity row once it is non-NULL in ``state``, as
    another session sees it."""
    with contextlib.closing(connect(dsn)) as observer:
        deadline = time.monotonic() + timeout_s
        while True:
            row = observer.execute(f"SELECT {column}::text::bigint, state FROM pg_stat_activity WHERE pid = %s",
                                   (pid,)).fetchone()
            if row and row[0] is not None and row[1] == state:
                return int(row[0])
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {column} hold (pid {pid}) did not show in pg_stat_activity: {row}")
            time.sleep(0.05)


class _LongStatement:
    """``SELECT pg_sleep(seconds)`` on the holder's connection, on a thread; ``stop`` cancels it."""

    def __init__(self, connection: Any, seconds: float):
        self.connection, self.seconds = connection, seconds
        self.thread = threading.Thread(target=self._run, name="rr-query-holder", daemon=True)

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # cancelled, timed out, or the server went away
            self.connection.execute("SELECT pg_sleep(%s)", (self.seconds,))

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> bool:
        """Cancel the statement and wait for its thread; False if it would not end."""
        if self.thread.is_alive():
            with contextlib.suppress(Exception):
                self.connection.cancel_safe(timeout=5.0)
        self.thread.join(timeout=10.0)
        return not self.thread.is_alive()


def _begin(kind: str, holder: Any, seconds: float, margin_s: float) -> _LongStatement | None:
    """On the holding session: the hold of ``kind`` (a running statement for ``rr_query``)."""
    if kind == IDLE_XID:
        holder.execute("BEGIN")  # READ COMMITTED, the server's default
        holder.execute("SELECT txid_current()").fetchone()
        return None
    holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    holder.execute("SELECT count(*) FROM pg_class").fetchone()  # the transaction's snapshot
    statement = _LongStatement(holder, seconds + margin_s)
    statement.start()
    return statement


@contextlib.contextmanager
def held_horizon(kind: str, dsn: str, seconds: float, timeout_s: float | None = None,
                 margin_s: float = BACKSTOP_MARGIN_S,
                 connect: Callable[[str], Any] = default_connect) -> Iterator[Hold]:
    """Hold the horizon the ``kind`` way for the ``with`` block (see the module doc)."""
    if kind not in KINDS:
        raise ValueError(f"unknown hold {kind!r}: use one of {', '.join(KINDS)}")
    backstop_s = backstop_of(seconds, timeout_s, margin_s)
    holder = connect(dsn)
    pid, statement = None, None
    try:
        pid = int(holder.execute("SELECT pg_backend_pid()").fetchone()[0])
        holder.execute(f"SET idle_in_transaction_session_timeout = '{backstop_s}s'")
        holder.execute(f"SET statement_timeout = '{backstop_s}s'")
        holder.execute(f"SET client_connection_check_interval = '{CLIENT_CHECK}'")
        statement = _begin(kind, holder, seconds, margin_s)
        column, state = SHOWN_BY[kind]
        horizon = observed(dsn, pid, column, state, connect)
        yield Hold(kind, pid, column, horizon, backstop_s, time.time())
    finally:
        if statement is not None and not statement.stop() and pid is not None:
            # the statement would not cancel: end its backend from outside, or the rollback below
            # would wait on the connection until the backstop
            with contextlib.suppress(Exception):
                ensure_gone(dsn, pid, connect, timeout_s=0)
        release(holder)
        if pid is not None:
            with contextlib.suppress(Exception):  # best effort: the server may be going away
                ensure_gone(dsn, pid, connect)


def released_after_s(dsn: str, hold: Hold, limit_s: float, connect: Callable[[str], Any] = default_connect,
                     poll_s: float = 0.1) -> float | None:
    """Seconds from the verified hold until its horizon moved (the column NULL or the backend
    gone): how long a server-side timeout let it stand. None: still held after ``limit_s``."""
    with contextlib.closing(connect(dsn)) as observer:
        deadline = time.monotonic() + limit_s
        while time.monotonic() <= deadline:
            row = observer.execute(f"SELECT {hold.column} FROM pg_stat_activity WHERE pid = %s",
                                   (hold.pid,)).fetchone()
            if row is None or row[0] is None:
                return time.time() - hold.started_epoch_s
            time.sleep(poll_s)
    return None
