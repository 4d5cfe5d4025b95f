"""Hold back Postgres's xmin horizon on purpose: one session in an open REPEATABLE READ
transaction that has an XID and a snapshot, so no vacuum can remove tuples that died after it.

Usage::

    from pglimits_core.studies.held_xmin import held_xmin

    with held_xmin(endpoint.url, seconds=60) as held:   # verified: its xmin is in pg_stat_activity
        held.pid, held.xmin, held.xid                    # the backend, its snapshot xmin, its XID
        run_the_load()                                   # dead tuples pile up, vacuum cannot help
    # here the transaction is rolled back and the session closed (also on error or Ctrl-C)

``seconds`` is how long the caller means to hold it: the session's
``idle_in_transaction_session_timeout`` is set to ``seconds + BACKSTOP_MARGIN_S`` so a holder
that is never released (a killed harness) is ended by the server itself.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

#: seconds added to the planned hold for the server-side backstop
BACKSTOP_MARGIN_S = 30
#: the planned hold when the caller names none (the backstop is this + the margin)
DEFAULT_HOLD_S = 600
#: seconds to wait for the holder's xmin to show, and for its backend to go after closing
VERIFY_TIMEOUT_S = 5.0
APPLICATION_NAME = "pglimits-held-xmin"


@dataclass(frozen=True)
class HeldSnapshot:
    """The holding backend: its pid, its snapshot's xmin, the XID it took, when it took them."""

    pid: int
    xmin: int
    xid: int
    backstop_s: int
    started_epoch_s: float


def default_connect(dsn: str) -> Any:
    import psycopg

    return psycopg.connect(dsn, autocommit=True, connect_timeout=5, application_name=APPLICATION_NAME)


def backstop_seconds(seconds: float | None) -> int:
    return int((DEFAULT_HOLD_S if seconds is None else seconds) + BACKSTOP_MARGIN_S)


def take_snapshot(connection: Any, backstop_s: int) -> tuple[int, int]:
    """On the holding session: backstop, BEGIN REPEATABLE READ, an XID, a snapshot. (pid, xid)."""
    connection.execute(f"SET idle_in_transaction_session_timeout = '{backstop_s}s'")
    connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    xid = int(connection.execute("SELECT txid_current()").fetchone()[0])
    # the first statement already took the snapshot; one read of a table makes it plain
    connection.execute("SELECT count(*) FROM pg_class").fetchone()
    return int(connection.execute("SELECT pg_backend_pid()").fetchone()[0]), xid


def observed_xmin(dsn: str, pid: int, connect: Callable[[str], Any], timeout_s: float = VERIFY_TIMEOUT_S) -> int:
    """The holder's ``backend_xmin`` as another session sees it in pg_stat_activity."""
    with contextlib.closing(connect(dsn)) as observer:
        deadline = time.monotonic() + timeout_s
        while True:
            row = observer.execute("SELECT backend_xmin::text::bigint, state FROM pg_stat_activity "
                                   "WHERE pid = %s", (pid,)).fetchone()
            if row and row[0] is not None:
                return int(row[0])
            if time.monotonic() > deadline:
                raise RuntimeError(f"the held snapshot (pid {pid}) shows no backend_xmin: {row}")
            time.sleep(0.05)


def release(connection: Any) -> None:
    """End the transaction and the session; each step may fail (the backstop may have fired)."""
    with contextlib.suppress(Exception):
        connection.execute("ROLLBACK")
    with contextlib.suppress(Exception):
        connection.close()


def ensure_gone(dsn: str, pid: int, connect: Callable[[str], Any], timeout_s: float = VERIFY_TIMEOUT_S) -> bool:
    """Wait for the holder's backend to exit; terminate it if it lingers. True when it is gone."""
    with contextlib.closing(connect(dsn)) as observer:
        deadline = time.monotonic() + timeout_s
        while observer.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            if time.monotonic() > deadline:
                observer.execute("SELECT pg_terminate_backend(%s)", (pid,))
                return False
            time.sleep(0.05)
    return True


@contextlib.contextmanager
def held_xmin(dsn: str, seconds: float | None = None,
              connect: Callable[[str], Any] = default_connect) -> Iterator[HeldSnapshot]:
    """Hold an old snapshot for the ``with`` block (see the module doc); yields a HeldSnapshot."""
    backstop_s = backstop_seconds(seconds)
    holder = connect(dsn)
    pid = None
    try:
        pid, xid = take_snapshot(holder, backstop_s)
        xmin = observed_xmin(dsn, pid, connect)
        yield HeldSnapshot(pid, xmin, xid, backstop_s, time.time())
    finally:
        release(holder)
        if pid is not None:
            with contextlib.suppress(Exception):  # best effort: the server may be going away
                ensure_gone(dsn, pid, connect)
