"""A busy handler in Python, so its waits can be counted (the SQLite seed instruments its own).

Python's ``sqlite3`` offers no busy-handler hook, so the connection runs with
``busy_timeout = 0`` (SQLITE_BUSY comes back at once) and this loop retries the whole
statement or transaction, sleeping between tries, within the seed's 5000 ms budget.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

SQLITE_BUSY, SQLITE_LOCKED = 5, 6
# Short first sleeps: a queue's write lock is held for microseconds, and SQLite's own handler
# (1, 2, 5, 10 ... ms) would add milliseconds of latency the seed did not see.
BUSY_DELAYS_S = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005)
DEFAULT_BUDGET_MS = 5000  # the seed's PRAGMA busy_timeout


def is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED)  # extended codes, e.g. BUSY_SNAPSHOT
    return "locked" in str(exc) or "busy" in str(exc)


def busy_handling(busy_timeout_ms: int, budget_ms: int) -> str:
    """Exactly what waits on a busy database, for the run record (the server's pragmas file says
    busy_timeout 5000, which only the harness's own connections keep)."""
    first, last = BUSY_DELAYS_S[0] * 1000, BUSY_DELAYS_S[-1] * 1000
    return (f"busy_timeout: {busy_timeout_ms} (adapter override) + Python retry loop, budget "
            f"{budget_ms} ms, first wait {first:g} ms, growing to {last:g} ms per retry")


class BusyWaiter:
    """Retries on SQLITE_BUSY; counts waits (sleeps), busy events (calls that waited) and time."""

    def __init__(self, budget_ms: int = DEFAULT_BUDGET_MS, sleep: Callable[[float], None] = time.sleep):
        self.budget_ns = budget_ms * 1_000_000
        self.sleep = sleep
        self.waits = 0
        self.busy_events = 0
        self.wait_ns = 0
        self.max_event_wait_ns = 0
        self.timeouts = 0

    def run(self, call: Callable[[], Any]) -> Any:
        started, attempt = None, 0
        while True:
            try:
                result = call()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                started = started or time.monotonic_ns()
                self._wait(started, attempt)
                attempt += 1
                continue
            if started is not None:
                self._record_event(started)
            return result

    def _wait(self, started: int, attempt: int) -> None:
        if time.monotonic_ns() - started >= self.budget_ns:
            self.timeouts += 1
            self._record_event(started)
            raise sqlite3.OperationalError(f"database is locked (busy budget {self.budget_ns // 1_000_000} ms spent)")
        self.waits += 1
        self.sleep(BUSY_DELAYS_S[min(attempt, len(BUSY_DELAYS_S) - 1)])

    def _record_event(self, started: int) -> None:
        waited = time.monotonic_ns() - started
        self.busy_events += 1
        self.wait_ns += waited
        self.max_event_wait_ns = max(self.max_event_wait_ns, waited)

    def stats(self) -> dict[str, int]:
        return {"busy_waits": self.waits, "busy_events": self.busy_events,
                "busy_wait_ns": self.wait_ns, "busy_max_wait_ns": self.max_event_wait_ns,
                "busy_timeouts": self.timeouts}


def in_transaction(conn: sqlite3.Connection, body: Callable[[], Any]) -> Any:
    """``body`` inside BEGIN IMMEDIATE ... COMMIT: the write lock up front, so a batch never
    fails half-way on a lock upgrade; rolled back (and retried by the waiter) on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = body()
        conn.execute("COMMIT")
        return result
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
