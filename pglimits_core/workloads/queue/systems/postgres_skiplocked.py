"""Hand-rolled Postgres queue with ``FOR UPDATE SKIP LOCKED``: two-phase and delete-mode.

Two-phase (as the source study): claim = UPDATE ... RETURNING, committed; ack = DELETE,
committed — at-least-once. Delete-mode: claim and ack are one DELETE ... RETURNING, so a
consumer that dies after claiming loses the job — at-most-once, and ``ack()`` is a no-op.
The SQL is module constants because the pgbench cross-check runs the same statements.
"""

from __future__ import annotations

from typing import Any

from pglimits_core.workloads.queue.systems.base import Message
from pglimits_core.workloads.queue.systems.postgres_base import PostgresQueueBase, copy_rows

TABLE = "jobs"

SCHEMA_SQL = [
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    id          bigserial PRIMARY KEY,
    payload     bytea NOT NULL,
    visible_at  timestamptz NOT NULL DEFAULT now(),
    claimed_at  timestamptz,
    claimed_by  text,
    attempts    integer NOT NULL DEFAULT 0,
    enqueued_at timestamptz NOT NULL DEFAULT now()
)""",
    # Claims walk unclaimed rows in id order; a partial index keeps claimed rows out of the walk.
    f"CREATE INDEX IF NOT EXISTS {TABLE}_unclaimed ON {TABLE} (id) WHERE claimed_at IS NULL",
]

ENQUEUE_SQL = f"INSERT INTO {TABLE} (payload) SELECT unnest(%s::bytea[]) RETURNING id"

# Both variants pick the next jobs with the very same subquery, so they differ only in what
# they do with them (mark claimed vs delete) — the comparison is fair by construction.
NEXT_JOBS_SQL = f"""SELECT id FROM {TABLE}
    WHERE claimed_at IS NULL AND visible_at <= now()
    ORDER BY id
    LIMIT %s
    FOR UPDATE SKIP LOCKED"""

CLAIM_SQL = f"""UPDATE {TABLE}
SET claimed_at = now(), claimed_by = %s, attempts = attempts + 1
WHERE id IN ({NEXT_JOBS_SQL})
RETURNING id, payload"""

ACK_SQL = f"DELETE FROM {TABLE} WHERE id = ANY(%s::bigint[])"

NACK_SQL = f"""UPDATE {TABLE}
SET claimed_at = NULL, claimed_by = NULL, visible_at = now() + make_interval(secs => %s)
WHERE id = ANY(%s::bigint[])"""

DELETE_CLAIM_SQL = f"""DELETE FROM {TABLE}
WHERE id IN ({NEXT_JOBS_SQL})
RETURNING id, payload"""

# Delete-mode has no claimed row to release, so a nack re-inserts the job, delayed.
REQUEUE_SQL = f"""INSERT INTO {TABLE} (payload, visible_at)
SELECT unnest(%s::bytea[]), now() + make_interval(secs => %s) RETURNING id"""

# The reaper (the SQLite seed's shape): claims older than the visibility timeout are a dead
# consumer's; they become claimable again (attempts keeps the count of deliveries).
REAP_SQL = f"""UPDATE {TABLE}
SET claimed_at = NULL, claimed_by = NULL
WHERE claimed_at < now() - make_interval(secs => %s)"""

DEPTH_SQL = f"SELECT count(*) FROM {TABLE}"
PENDING_SQL = f"SELECT payload FROM {TABLE} WHERE claimed_at IS NULL AND visible_at <= now()"
# The prefill: the rows ENQUEUE_SQL makes (visible_at and enqueued_at default to the load's now()).
COPY_SQL = f"COPY {TABLE} (payload) FROM STDIN"
RESET_SQL = f"TRUNCATE {TABLE}"

DEFAULT_NACK_DELAY_S = 1.0


class SkipLockedQueue(PostgresQueueBase):
    """Two-phase: claim commits ``claimed_at``/``claimed_by``, ack commits the DELETE."""

    system = "pg_skiplocked"

    def setup(self) -> None:
        self.run_script(SCHEMA_SQL)
        self.set_persistence()

    def reset(self) -> None:
        self.run(RESET_SQL)

    def queue_tables(self) -> list[str]:
        return [TABLE]

    def enqueue(self, payloads: list[bytes]) -> list[int]:
        return [row[0] for row in self.rows(ENQUEUE_SQL, (payloads,))]

    def bulk_load(self, payloads: list[bytes]) -> None:
        """One COPY in one transaction: the prefill's rows, several times faster than INSERTs."""
        copy_rows(self.conn, COPY_SQL, ((p,) for p in payloads))

    def pending(self) -> list[bytes]:
        return [bytes(row[0]) for row in self.rows(PENDING_SQL)]

    def take(self, n: int) -> list[Message]:
        """The untimed drain: the delete-mode claim (the same unclaimed, visible rows a claim
        picks, removed in one statement): a row left claimed is not taken, so it still shows."""
        return [Message(i, bytes(p)) for i, p in self.rows(DELETE_CLAIM_SQL, (n,))]

    def claim(self, n: int) -> list[Message]:
        return [Message(i, bytes(p)) for i, p in self.rows(CLAIM_SQL, (self.worker_id, n))]

    def ack(self, ids: list[int]) -> None:
        if ids:
            self.run(ACK_SQL, (list(ids),))

    def nack(self, ids: list[int], delay_s: float | None = None) -> None:
        if ids:
            self.run(NACK_SQL, (_delay(delay_s), list(ids)))

    def reap(self, older_than_s: float) -> int:
        return self.conn.execute(REAP_SQL, (float(older_than_s),), prepare=True).rowcount

    def depth(self) -> int:
        return self.rows(DEPTH_SQL)[0][0]

    def describe(self) -> dict[str, Any]:
        return self.base_description(
            variant="two-phase", tables=[TABLE], delivery="at-least-once (claim commit, then ack commit)",
            recovery=self.recovery,
            sql={"schema": SCHEMA_SQL, "enqueue": ENQUEUE_SQL, "claim": CLAIM_SQL,
                 "ack": ACK_SQL, "nack": NACK_SQL, "reaper": REAP_SQL})


class DeleteModeQueue(SkipLockedQueue):
    """Claim-and-ack in one DELETE ... RETURNING; the same table and enqueue as two-phase."""

    system = "pg_delete"
    delivery_guarantee = "at-most-once"
    recovery = "none: the claim deleted the jobs, a dead consumer's batch is gone by design"

    def open(self) -> None:
        super().open()
        self._last_claimed: dict[int, bytes] = {}

    def claim(self, n: int) -> list[Message]:
        claimed = [Message(i, bytes(p)) for i, p in self.rows(DELETE_CLAIM_SQL, (n,))]
        # Kept only so nack() can re-insert what it already deleted.
        self._last_claimed = {m.id: m.payload for m in claimed}
        return claimed

    def ack(self, ids: list[int]) -> None:
        """Nothing to do: the claim already deleted (and committed) the jobs."""

    def reap(self, older_than_s: float) -> int:
        """Nothing to reap: no row is ever left claimed."""
        return 0

    def nack(self, ids: list[int], delay_s: float | None = None) -> None:
        payloads = [self._last_claimed.pop(i) for i in ids if i in self._last_claimed]
        if payloads:
            self.run(REQUEUE_SQL, (payloads, _delay(delay_s)))

    def describe(self) -> dict[str, Any]:
        return self.base_description(
            variant="delete-mode", tables=[TABLE],
            delivery="at-most-once (claim deletes; a consumer crash loses its jobs)",
            recovery=self.recovery,
            sql={"schema": SCHEMA_SQL, "enqueue": ENQUEUE_SQL, "claim": DELETE_CLAIM_SQL,
                 "ack": None, "nack": REQUEUE_SQL})


def _delay(delay_s: float | None) -> float:
    return DEFAULT_NACK_DELAY_S if delay_s is None else float(delay_s)
