"""A queue that never needs a vacuum: time-partitioned and rotated by TRUNCATE, PgQ's way.

The churn's design (enqueue, two-phase SKIP LOCKED claim, ack: one job a transaction) on a table
partitioned by ``slot`` into ``SLOTS`` partitions used as a ring. Enqueues go to the slot named
in a one-row table (``CURRENT``); claims walk every partition in id order (one sequence numbers
every job, so the order is FIFO across partitions); acks delete by id. Every ``period_s`` the
rotator takes the next slot of the ring — the oldest, current two periods ago — and, only if it
is empty (every job in it claimed and acknowledged), TRUNCATEs it and makes it the current slot:
the dead tuples of a whole period go at once, without a vacuum scanning them, whatever horizon
is held (TRUNCATE does not wait for the xmin horizon; it waits for the partition's lock).

What it costs, and what the window records: the TRUNCATE takes the partition's ACCESS
EXCLUSIVE lock, and every claim locks every partition, so claims queue behind the rotator for
as long as it waits (``lock_timeout`` bounds that: a rotation that cannot get its lock in time
is skipped, said, and tried again next period); a slot not yet drained (the backlog is longer
than two periods) is skipped too, said. Nothing is lost: the emptiness check runs under the lock,
in the transaction that truncates (``tests/integration/workloads/interference/test_interference_rotation.py`` counts
every job before and after, and shows the ledger catching a truncation without the check).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pglimits_core.workloads.interference import churn
from pglimits_core.workloads.interference.start_state import flush_statistics

PARENT = "rot_jobs"
SLOTS = 3
PARTITIONS = tuple(f"{PARENT}_{slot}" for slot in range(SLOTS))
CURRENT = f"{PARENT}_current"
SEQUENCE = f"{PARENT}_id"
#: how long a rotation may wait for the partition's lock (claims queue behind it meanwhile)
LOCK_TIMEOUT_MS = 200
#: when the rotation's lock wait checks for (and cancels) an autovacuum holding the partition
DEADLOCK_CHECK_MS = 50

SCHEMA_SQL = [
    f"CREATE SEQUENCE IF NOT EXISTS {SEQUENCE}",
    f"""CREATE TABLE IF NOT EXISTS {PARENT} (
    slot        smallint NOT NULL,
    id          bigint NOT NULL DEFAULT nextval('{SEQUENCE}'),
    payload     bytea NOT NULL,
    visible_at  timestamptz NOT NULL DEFAULT now(),
    claimed_at  timestamptz,
    claimed_by  text,
    attempts    integer NOT NULL DEFAULT 0,
    enqueued_at timestamptz NOT NULL DEFAULT now()
) PARTITION BY LIST (slot)""",
    *[f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF {PARENT} FOR VALUES IN ({slot})"
      for slot, name in enumerate(PARTITIONS)],
    # the claim's walk (the churn's partial index) and the ack's lookup by id
    f"CREATE INDEX IF NOT EXISTS {PARENT}_unclaimed ON {PARENT} (id) WHERE claimed_at IS NULL",
    f"CREATE INDEX IF NOT EXISTS {PARENT}_by_id ON {PARENT} (id)",
    f"CREATE TABLE IF NOT EXISTS {CURRENT} (slot smallint NOT NULL)",
]
#: the statements are the plain churn's (``churn.churn_script``: the queue study's two-phase claim,
#: returning the payload) with the slot added
#: the enqueue reads the current slot in the statement that inserts (a rotation between two
#: enqueues moves the next one; one in flight keeps the slot it read, which is never the next)
ENQUEUE_SQL = (f"INSERT INTO {PARENT} (slot, payload) SELECT slot, decode(repeat('78', :payload_bytes), 'hex') "
               f"FROM {CURRENT}")
NEXT_JOBS_SQL = f"""SELECT slot, id FROM {PARENT}
    WHERE claimed_at IS NULL AND visible_at <= now()
    ORDER BY id
    LIMIT %s
    FOR UPDATE SKIP LOCKED"""
CLAIM_SQL = f"""UPDATE {PARENT}
SET claimed_at = now(), claimed_by = %s, attempts = attempts + 1
WHERE (slot, id) IN ({NEXT_JOBS_SQL})
RETURNING id, payload"""
ACK_SQL = f"DELETE FROM {PARENT} WHERE id = ANY(%s::bigint[])"
PREFILL_SQL = (f"INSERT INTO {PARENT} (slot, payload) SELECT 0, decode(repeat('78', %s), 'hex') "
               "FROM generate_series(1, %s)")


def churn_script(payload_bytes: int) -> str:
    """The churn's pgbench transaction on the rotated queue: enqueue, claim (batch 1), ack."""
    return churn.churn_script(payload_bytes, ENQUEUE_SQL, CLAIM_SQL, ACK_SQL)


def reset(conn, depth: int, payload_bytes: int) -> dict[str, int]:
    """Every partition emptied, ``depth`` jobs in slot 0, slot 0 current, frozen and analysed."""
    for sql in SCHEMA_SQL:
        conn.execute(sql)
    conn.execute(f"TRUNCATE {PARENT}, {CURRENT}")
    conn.execute(f"ALTER SEQUENCE {SEQUENCE} RESTART")
    conn.execute(f"INSERT INTO {CURRENT} (slot) VALUES (0)")
    conn.execute(PREFILL_SQL, (int(payload_bytes), int(depth)))
    # the prefill's pending insert counters must land before the VACUUM resets them (else an
    # insert-triggered autovacuum fires in the window's first seconds: ``start_state``)
    flush_statistics(conn)
    for table in (*PARTITIONS, CURRENT):
        conn.execute(f"VACUUM (FREEZE, ANALYZE) {table}")
    return {"depth": jobs(conn)}


def clear(conn) -> None:
    """The rotated queue emptied if it exists (a plain window then finds nothing of it to vacuum)."""
    if conn.execute("SELECT to_regclass(%s)", (PARENT,)).fetchone()[0] is not None:
        conn.execute(f"TRUNCATE {PARENT}, {CURRENT}")


def jobs(conn) -> int:
    return conn.execute(f"SELECT count(*) FROM {PARENT}").fetchone()[0]


def rotate_once(conn, lock_timeout_ms: int = LOCK_TIMEOUT_MS, check_empty: bool = True) -> dict[str, Any]:
    """One rotation: the next slot truncated and made current, if it is empty (``check_empty``
    False exists only for the test that shows what the check prevents)."""
    import psycopg

    current = conn.execute(f"SELECT slot FROM {CURRENT}").fetchone()[0]
    following = (current + 1) % SLOTS
    started = time.monotonic()
    try:
        with conn.transaction():
            conn.execute(f"SET LOCAL lock_timeout = '{int(lock_timeout_ms)}ms'")
            # an autovacuum on the partition yields to a waiting lock only at the waiter's deadlock
            # check: checked early, so a rotation cancels it rather than timing out behind it
            conn.execute(f"SET LOCAL deadlock_timeout = '{DEADLOCK_CHECK_MS}ms'")
            conn.execute(f"LOCK TABLE {PARTITIONS[following]} IN ACCESS EXCLUSIVE MODE")
            locked_ms = round((time.monotonic() - started) * 1000, 1)
            if check_empty and conn.execute(f"SELECT EXISTS (SELECT 1 FROM {PARTITIONS[following]})").fetchone()[0]:
                raise _NotDrained
            conn.execute(f"TRUNCATE {PARTITIONS[following]}")
            conn.execute(f"UPDATE {CURRENT} SET slot = %s", (following,))
    except _NotDrained:
        return {"rotated": False, "why": "the next slot still holds jobs", "slot": following, "locked_ms": locked_ms}
    except psycopg.errors.LockNotAvailable:
        return {"rotated": False, "why": f"no lock within {lock_timeout_ms} ms", "slot": following,
                "locked_ms": round((time.monotonic() - started) * 1000, 1)}
    return {"rotated": True, "slot": following, "locked_ms": locked_ms,
            "held_ms": round((time.monotonic() - started) * 1000, 1)}


class _NotDrained(Exception):
    """Rolls the rotation's transaction back: the next slot is not empty."""


@dataclass
class Rotator:
    """Rotates every ``period_s`` from the window's t = 0 until stopped; each attempt recorded
    with its second on the window's axis."""

    url: str
    period_s: float
    lock_timeout_ms: int = LOCK_TIMEOUT_MS
    attempts: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    def run_until(self, origin: float, stop: Callable[[], bool]) -> None:
        import psycopg

        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                tick = 1
                while not stop():
                    due = origin + tick * self.period_s
                    while time.monotonic() < due and not stop():
                        time.sleep(min(0.05, max(0.0, due - time.monotonic())))
                    if stop():
                        break
                    attempt = rotate_once(conn, self.lock_timeout_ms)
                    self.attempts.append({"at_s": round(time.monotonic() - origin, 3), **attempt})
                    tick += 1
        except Exception as exc:  # noqa: BLE001 — the window's record says so, never lost
            self.error = f"{type(exc).__name__}: {exc}"

    def summary(self) -> dict[str, Any]:
        done = [a for a in self.attempts if a["rotated"]]
        return {"period_s": self.period_s, "rotations": len(done), "skipped": len(self.attempts) - len(done),
                "lock_ms_max": max((a["locked_ms"] for a in self.attempts), default=None),
                "attempts": self.attempts, "error": self.error}


def beside(act: Callable[[float], dict[str, Any]] | None, url: str, period_s: float,
           window_s: float) -> Callable[[float], dict[str, Any]]:
    """``act`` (a hold, autovacuum off, or none) with the rotation running from t = 0 to the
    window's end beside it; the act's record gains ``rotation``."""

    def both(origin: float) -> dict[str, Any]:
        rotator, interrupted = Rotator(url, period_s), threading.Event()
        thread = threading.Thread(target=rotator.run_until, name="interference-rotator", daemon=True,
                                  args=(origin, lambda: interrupted.is_set() or time.monotonic() >= origin + window_s))
        thread.start()
        try:
            events = act(origin) if act is not None else {}
        except BaseException:  # an error or Ctrl-C in the act: the rotator stops now, not at the window's end
            interrupted.set()
            raise
        finally:
            thread.join(max(0.0, origin + window_s - time.monotonic()) + LOCK_TIMEOUT_MS / 1000 + 30)
        return {**events, "rotation": rotator.summary()}

    return both
