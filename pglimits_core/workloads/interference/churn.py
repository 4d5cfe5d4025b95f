"""The churn tenant: the queue study's two-phase SKIP LOCKED queue driven by ``pgbench -R``, and
its no-dead-tuple control — the statements and the tables they run on.

Churn (mechanism a): each pgbench transaction is one job's life — the adapter's enqueue (one
INSERT), its two-phase claim (``CLAIM_SQL``: UPDATE ... RETURNING, committed) and its ack
(``ACK_SQL``: DELETE, committed), each autocommitted as the adapter does. The table starts with
``depth`` jobs and every transaction adds one and removes one, so the depth stays constant (the
producer side keeps the queue fed by construction; ``depth`` is the profile's ``backlog``: jobs
waiting behind the one being claimed, which give the table and its indexes pages for autovacuum
to scan) and every job leaves two dead tuples (the
claim's old row version and the deleted row: the claim changes ``claimed_at``, a column of the
partial index's predicate, so it is never a HOT update).

Control (mechanism b): the same three statements' shape on a static copy of the table that no
statement changes — the claim's very ``FOR UPDATE SKIP LOCKED`` subquery (locking a row writes
its header, not a new version), a primary-key read of that row and a read of the payload instead
of the INSERT. Same statement count, same round trips, the same row lock per job; no dead tuple,
so autovacuum has nothing to do there. It writes less WAL than the churn (no insert, no delete):
the record's ``wal_bytes_per_s`` shows by how much, so the control is read as "the same client
and statement load without dead tuples", not as identical I/O.

pgbench keeps one row per ``\\gset``, so the claim runs inside ``WITH claimed AS (...)`` and
returns its ids as an array, as the queue's ``ceiling`` experiment does; ``:client_id`` is
pgbench's own variable (the claimant's name). The queue's ``ceiling_tools`` is that workload's
own module (not its ``systems/``), so the few lines that turn ``%s`` into pgbench variables are
repeated here.
"""

from __future__ import annotations

from pglimits_core.workloads.interference.start_state import flush_statistics
from pglimits_core.workloads.queue.systems.postgres_skiplocked import (
    ACK_SQL,
    CLAIM_SQL,
    NEXT_JOBS_SQL,
    SCHEMA_SQL,
    TABLE,
)

QUEUE_TABLE = TABLE
CONTROL_TABLE = "interference_control"
#: the enqueue, with the payload built server-side: pgbench has no bytea-array variable
ENQUEUE_ONE_SQL = f"INSERT INTO {TABLE} (payload) VALUES (decode(repeat('78', :payload_bytes), 'hex'))"
PREFILL_SQL = ("INSERT INTO {table} (payload) SELECT decode(repeat('78', %s), 'hex') "
               "FROM generate_series(1, %s)")


def pgbench_sql(statement: str, *variables: str) -> str:
    """``statement`` with its ``%s`` placeholders replaced, in order, by pgbench variables."""
    parts = statement.split("%s")
    if len(parts) != len(variables) + 1:
        raise ValueError(f"{len(parts) - 1} placeholders, {len(variables)} variables")
    return "".join(part + (f":{name}" if name else "") for part, name in zip(parts, [*variables, ""], strict=True))


def churn_script(payload_bytes: int) -> str:
    """One job per transaction: enqueue, two-phase claim (batch 1), ack."""
    claim = pgbench_sql(CLAIM_SQL, "client_id", "batch")
    return (f"\\set batch 1\n\\set payload_bytes {int(payload_bytes)}\n"
            f"{ENQUEUE_ONE_SQL};\n"
            f"WITH claimed AS ({claim})\n"
            "SELECT coalesce(array_agg(id), '{}') AS ids FROM claimed \\gset\n"
            f"{pgbench_sql(ACK_SQL, 'ids')};\n")


def control_script() -> str:
    """Three statements per transaction on the static control table; none changes a row."""
    lock = pgbench_sql(NEXT_JOBS_SQL.replace(f"FROM {TABLE}", f"FROM {CONTROL_TABLE}"), "batch")
    return ("\\set batch 1\n"
            f"SELECT count(*) FROM {CONTROL_TABLE} WHERE id = 1 + :client_id;\n"
            f"SELECT coalesce(min(id), 0) AS locked FROM ({lock}) AS next_job \\gset\n"
            f"SELECT length(payload) FROM {CONTROL_TABLE} WHERE id = :locked;\n")


def schema_sql() -> list[str]:
    """The queue's own schema, and the control table as its copy (indexes included)."""
    return [*SCHEMA_SQL, f"CREATE TABLE IF NOT EXISTS {CONTROL_TABLE} (LIKE {TABLE} INCLUDING ALL)"]


def reset_queue(conn, depth: int, payload_bytes: int) -> dict[str, int]:
    """Both tables emptied and filled with ``depth`` jobs (the backlog), the prefill's statistics
    flushed, then vacuumed, frozen and analysed, so every run starts from the same state (see
    ``start_state``); autovacuum back on (a run that turned it off restores it too)."""
    for sql in schema_sql():
        conn.execute(sql)
    for table in (QUEUE_TABLE, CONTROL_TABLE):
        conn.execute(f"TRUNCATE {table}")
        conn.execute(PREFILL_SQL.format(table=table), (int(payload_bytes), int(depth)))
        conn.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")
        # the prefill's pending insert counters must land before the VACUUM resets them
        flush_statistics(conn)
        conn.execute(f"VACUUM (FREEZE, ANALYZE) {table}")
    return {"depth": conn.execute(f"SELECT count(*) FROM {QUEUE_TABLE}").fetchone()[0]}


def depth(conn) -> int:
    return conn.execute(f"SELECT count(*) FROM {QUEUE_TABLE}").fetchone()[0]
