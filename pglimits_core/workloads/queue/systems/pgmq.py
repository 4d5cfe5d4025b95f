"""pgmq, the real extension: send_batch / read with a visibility timeout / delete or archive.

A read message stays invisible for ``vt_s`` seconds; acking deletes it (variant ``delete``) or
moves it to the archive table (variant ``archive``). A consumer that dies without acking has
its messages reappear after ``vt_s`` — at-least-once. pgmq stores ``jsonb``, so a read payload
is the normalised JSON text (keys reordered, blanks changed), not the bytes that were sent.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from pglimits_core.workloads.queue.systems.base import Message
from pglimits_core.workloads.queue.systems.postgres_base import PostgresQueueBase, copy_rows

DEFAULT_QUEUE = "pglimits_jobs"
DEFAULT_VT_S = 30  # far beyond any claim-to-ack gap, so a live consumer's message never reappears

CREATE_SQL = "SELECT pgmq.create(%s)"
SEND_BATCH_SQL = "SELECT * FROM pgmq.send_batch(%s, %s::text[]::jsonb[])"
READ_SQL = "SELECT msg_id, message::text FROM pgmq.read(%s, %s, %s)"
DELETE_SQL = "SELECT * FROM pgmq.delete(%s, %s::bigint[])"
ARCHIVE_SQL = "SELECT * FROM pgmq.archive(%s, %s::bigint[])"
SET_VT_SQL = "SELECT msg_id FROM pgmq.set_vt(%s, %s::bigint[], clock_timestamp() + make_interval(secs => %s))"
DEPTH_SQL = "SELECT queue_length FROM pgmq.metrics(%s)"
DROP_SQL = "SELECT pgmq.drop_queue(%s)"
EXISTS_SQL = "SELECT count(*) FROM pgmq.list_queues() WHERE queue_name = %s"
PENDING_SQL = sql.SQL("SELECT message::text FROM {} WHERE vt <= clock_timestamp()")
POP_SQL = "SELECT msg_id, message::text FROM pgmq.pop(%s, %s)"
# The prefill: the rows send_batch makes (msg_id from the queue's identity, read_ct 0,
# enqueued_at now(), visible at once), copied into the queue's table in one COPY.
COPY_SQL = sql.SQL("COPY {} (vt, message) FROM STDIN")

DEFAULT_NACK_DELAY_S = 1.0


class PgmqQueue(PostgresQueueBase):
    """The pgmq API; ``mode`` = ``delete`` (default) or ``archive`` decides what ack does."""

    system = "pgmq"
    recovery = "pgmq's visibility timeout (vt_s): an unacked read reappears by itself; no reaper"
    visibility_option = "vt_s"

    def __init__(self, url: str, **options: Any):
        super().__init__(url, **options)
        self.queue = options.get("queue", DEFAULT_QUEUE)
        self.vt_s = int(options.get("vt_s", DEFAULT_VT_S))
        self.mode = options.get("mode", "delete")
        self.ack_sql = ARCHIVE_SQL if self.mode == "archive" else DELETE_SQL

    def setup(self) -> None:
        # pgmq.create is not idempotent on every version; ask first.
        if not self.rows(EXISTS_SQL, (self.queue,))[0][0]:
            self.run(CREATE_SQL, (self.queue,))

    def reset(self) -> None:
        """Drop and re-create: empties the queue *and* the archive (purge keeps the archive)."""
        if self.rows(EXISTS_SQL, (self.queue,))[0][0]:
            self.run(DROP_SQL, (self.queue,))
        self.run(CREATE_SQL, (self.queue,))

    def queue_tables(self) -> list[str]:
        return [f"pgmq.q_{self.queue}", f"pgmq.a_{self.queue}"]

    def enqueue(self, payloads: list[bytes]) -> list[int]:
        texts = [p.decode() for p in payloads]
        return [row[0] for row in self.rows(SEND_BATCH_SQL, (self.queue, texts))]

    def bulk_load(self, payloads: list[bytes]) -> None:
        """One COPY into the queue's table (send_batch's rows; vt = now, so visible at once):
        the prefill only, many times faster than send_batch; every timed enqueue uses the API."""
        now = self.rows("SELECT now()")[0][0]
        copy_rows(self.conn, COPY_SQL.format(sql.Identifier("pgmq", f"q_{self.queue}")),
                  ((now, p.decode()) for p in payloads))

    def pending(self) -> list[bytes]:
        table = sql.Identifier("pgmq", f"q_{self.queue}")
        return [row[0].encode() for row in self.conn.execute(PENDING_SQL.format(table)).fetchall()]

    def take(self, n: int) -> list[Message]:
        """The untimed drain: pgmq.pop (read and delete in one statement, visible messages only)."""
        return [Message(msg_id, text.encode()) for msg_id, text in self.rows(POP_SQL, (self.queue, n))]

    def claim(self, n: int) -> list[Message]:
        rows = self.rows(READ_SQL, (self.queue, self.vt_s, n))
        return [Message(msg_id, text.encode()) for msg_id, text in rows]

    def ack(self, ids: list[int]) -> None:
        if ids:
            self.rows(self.ack_sql, (self.queue, list(ids)))

    def nack(self, ids: list[int], delay_s: float | None = None) -> None:
        if ids:
            delay = DEFAULT_NACK_DELAY_S if delay_s is None else float(delay_s)
            self.rows(SET_VT_SQL, (self.queue, list(ids), delay))

    def reap(self, older_than_s: float) -> int:
        """A no-op: pgmq's read hid the message for ``vt_s``; it is visible again after that
        without any reaper (``older_than_s`` is the drill's vt and must equal ``vt_s``)."""
        return 0

    def release_held_claims(self) -> int:
        """pgmq has no reaper: the hidden messages' visibility timeout is reset to now."""
        held = [row[0] for row in self.rows(f"SELECT msg_id FROM pgmq.q_{self.queue} "
                                            "WHERE vt > clock_timestamp()")]
        self.nack(held, 0.0)
        return len(held)

    def depth(self) -> int:
        return self.rows(DEPTH_SQL, (self.queue,))[0][0]

    def describe(self) -> dict[str, Any]:
        version = self.rows("SELECT extversion FROM pg_extension WHERE extname = 'pgmq'")
        return self.base_description(
            variant=f"pgmq-{self.mode}", queue=self.queue,
            tables=[f"q_{self.queue}", f"a_{self.queue}"],  # relnames in schema pgmq (samplers)
            pgmq_version=version[0][0] if version else None,
            delivery=f"at-least-once (read hides for vt={self.vt_s}s; ack = pgmq.{self.mode})",
            visibility_timeout_s=self.vt_s, recovery=self.recovery,
            payload_note="stored as jsonb: claimed payloads are the normalised JSON text",
            sql={"create": CREATE_SQL, "enqueue": SEND_BATCH_SQL, "claim": READ_SQL,
                 "ack": self.ack_sql, "nack": SET_VT_SQL, "depth": DEPTH_SQL})
