"""The churn tenant: the queue study's two-phase SKIP LOCKED queue driven by ``pgbench -R``, and
its no-dead-tuple control — the statements and the tables they run on.

Churn (mechanism a): each pgbench transaction is one job's life — the adapter's enqueue (one
INSERT), its two-phase claim (``CLAIM_SQL``: UPDATE ... RETURNING, committed) and its ack
(``ACK_SQL``: DELETE, committed), each autocommitted as the adapter does. The table starts with
``depth`` jobs and every transaction adds one and removes one, so the depth stays constant (the
producer side keeps the queue fed by construction; ``depth`` is the profile's ``backlog``: jobs
waiting behind the one being claimed, which give the table and its indexes pages for autovacuum
to scan) and every job leaves two dead tuples (the claim's old row version and the deleted row:
the claim changes ``claimed_at``, a column of the partial index's predicate, so it is never a HOT
update).

Control (mechanism b): the same three autocommitted write transactions per job — three commits,
three WAL flushes — with no dead tuple, every write an INSERT into an append-only table:

- the enqueue INSERTs the job (the same payload, the same two indexes) into ``CONTROL_JOBS``;
- the "claim" runs the churn's very ``FOR UPDATE SKIP LOCKED`` subquery on ``CONTROL_TABLE``, a
  static copy of the backlog (``depth`` jobs, the queue's indexes: the claim's index path walks
  an index of the churn's size; locking a row writes its header, not a new version), and INSERTs
  a claim row carrying a copy of that job's payload into ``CONTROL_CLAIMS`` (the churn's UPDATE
  writes a whole new row version and one primary-key entry: so does this);
- the "ack" INSERTs a small row into ``CONTROL_ACKS`` (no index: the churn's DELETE adds none).

The append-only tables have the insert-triggered autovacuum off for them
(``autovacuum_vacuum_insert_threshold = -1``: an append-only table has no dead tuple, such a
vacuum would only set visibility bits, which the churn's table never gets from its inserts
either); auto-ANALYZE stays on, as on the churn's table. Every control table is reset like the
queue (``reset_queue``), so both start from the same state at t = 0. Measured against the churn
alone on a real server at the full and test profiles' rates, backlogs and clients
(``tests/integration/workloads/interference/test_interference_control.py``, which prints the comparison; numbers in the
methodology), the control commits as often (three commits, three WAL flushes per job), writes
about as much WAL and costs the server CPU within about a fifth of the churn's, and its tables
hold no dead tuple while the churn's piles up thousands between vacuums: so churn / control
isolates what the dead tuples (and the vacuum they call for) add, with the write load matched.
The claim row copies half the payload (``CLAIM_COPY_SHARE``): with a whole copy the control
wrote about a fifth more WAL per job than the churn.

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
#: the control's static backlog: what its claim locks and copies, never changed
CONTROL_TABLE = "interference_control"
#: the control's append-only tables: its enqueue's, claim's and ack's rows
CONTROL_JOBS = "interference_control_jobs"
CONTROL_CLAIMS = "interference_control_claims"
CONTROL_ACKS = "interference_control_acks"
APPEND_ONLY_TABLES = (CONTROL_JOBS, CONTROL_CLAIMS, CONTROL_ACKS)
#: every table a window resets, checks and samples (the queue, then the control's)
QUEUE_TABLES = (QUEUE_TABLE, CONTROL_TABLE, *APPEND_ONLY_TABLES)
#: the tables the reset prefills with ``depth`` jobs (the others start empty)
PREFILLED = (QUEUE_TABLE, CONTROL_TABLE)
#: the queue-table options a run may change (autovacuum off, a mitigation's own settings): every
#: reset puts them back to the server's
RESETTABLE_OPTIONS = ("autovacuum_enabled", "autovacuum_vacuum_scale_factor", "autovacuum_vacuum_threshold",
                      "autovacuum_vacuum_cost_delay")
#: no insert-triggered vacuum on an append-only table (it has no dead tuple to remove)
APPEND_ONLY_OPTIONS = "autovacuum_vacuum_insert_threshold = -1"
#: the enqueue, with the payload built server-side: pgbench has no bytea-array variable
ENQUEUE_ONE_SQL = "INSERT INTO {table} (payload) VALUES (decode(repeat('78', :payload_bytes), 'hex'))"
#: ``batch`` jobs in one INSERT (the batch_claim mitigation's enqueue)
ENQUEUE_MANY_SQL = ("INSERT INTO {table} (payload) SELECT decode(repeat('78', :payload_bytes), 'hex') "
                    "FROM generate_series(1, :batch)")
PREFILL_SQL = ("INSERT INTO {table} (payload) SELECT decode(repeat('78', %s), 'hex') "
               "FROM generate_series(1, %s)")
CONTROL_SCHEMA_SQL = [
    f"CREATE TABLE IF NOT EXISTS {CONTROL_TABLE} (LIKE {TABLE} INCLUDING ALL)",
    f"CREATE TABLE IF NOT EXISTS {CONTROL_JOBS} (LIKE {TABLE} INCLUDING ALL)",
    f"""CREATE TABLE IF NOT EXISTS {CONTROL_CLAIMS} (
    id         bigserial PRIMARY KEY,
    job_id     bigint NOT NULL,
    claimed_by text,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    attempts   integer NOT NULL DEFAULT 1,
    payload    bytea NOT NULL
)""",
    f"CREATE TABLE IF NOT EXISTS {CONTROL_ACKS} (job_id bigint NOT NULL, acked_at timestamptz NOT NULL DEFAULT now())",
]
#: the share of the job's payload the control's claim row copies: the churn's UPDATE logs only
#: the changed part of the row when its new version stays on the page (WAL prefix/suffix
#: compression), so a whole copy wrote about a fifth more WAL per job than the churn (measured)
CLAIM_COPY_SHARE = 0.5
#: the control's claim: the churn's SKIP LOCKED subquery on the static backlog, part of its job's payload copied
CONTROL_CLAIM_SQL = (f"INSERT INTO {CONTROL_CLAIMS} (job_id, claimed_by, payload)\n"
                     f"SELECT id, %s, substr(payload, 1, %s) FROM {CONTROL_TABLE} WHERE id IN "
                     f"({NEXT_JOBS_SQL.replace(f'FROM {TABLE}', f'FROM {CONTROL_TABLE}')})\n"
                     "RETURNING job_id")


def pgbench_sql(statement: str, *variables: str) -> str:
    """``statement`` with its ``%s`` placeholders replaced, in order, by pgbench variables."""
    parts = statement.split("%s")
    if len(parts) != len(variables) + 1:
        raise ValueError(f"{len(parts) - 1} placeholders, {len(variables)} variables")
    return "".join(part + (f":{name}" if name else "") for part, name in zip(parts, [*variables, ""], strict=True))


def churn_script(payload_bytes: int, enqueue: str | None = None, claim: str = CLAIM_SQL, ack: str = ACK_SQL,
                 batch: int = 1) -> str:
    """One job per transaction: enqueue, two-phase claim (batch 1), ack — the queue study's
    statements, or another queue's (``rotation``: the same statements on a partitioned table).
    ``batch`` > 1 (the ``batch_claim`` mitigation): that many jobs per transaction, each step one
    statement for all of them."""
    if enqueue is None:
        enqueue = (ENQUEUE_ONE_SQL if batch == 1 else ENQUEUE_MANY_SQL).format(table=QUEUE_TABLE)
    return (f"\\set batch {int(batch)}\n\\set payload_bytes {int(payload_bytes)}\n"
            f"{enqueue};\n"
            f"WITH claimed AS ({pgbench_sql(claim, 'client_id', 'batch')})\n"
            "SELECT coalesce(array_agg(id), '{}') AS ids FROM claimed \\gset\n"
            f"{pgbench_sql(ack, 'ids')};\n")


def control_script(payload_bytes: int) -> str:
    """The churn's three autocommitted writes per job, each an INSERT into an append-only table."""
    claim = pgbench_sql(CONTROL_CLAIM_SQL, "client_id", "copy_bytes", "batch")
    copied = max(1, round(CLAIM_COPY_SHARE * payload_bytes))
    return (f"\\set batch 1\n\\set payload_bytes {int(payload_bytes)}\n\\set copy_bytes {copied}\n"
            f"{ENQUEUE_ONE_SQL.format(table=CONTROL_JOBS)};\n"
            f"WITH claimed AS ({claim})\n"
            "SELECT coalesce(max(job_id), 0) AS claimed FROM claimed \\gset\n"
            f"INSERT INTO {CONTROL_ACKS} (job_id) VALUES (:claimed);\n")


def schema_sql() -> list[str]:
    """The queue's own schema, the control's static backlog as its copy (indexes included) and
    the control's append-only tables."""
    return [*SCHEMA_SQL, *CONTROL_SCHEMA_SQL]


def reset_queue(conn, depth: int, payload_bytes: int) -> dict[str, int]:
    """Every queue and control table emptied, the prefilled ones filled with ``depth`` jobs (the
    backlog), each table's statistics flushed, then vacuumed, frozen and analysed, so every run
    starts from the same state (see ``start_state``); autovacuum back on and a mitigation's table
    settings gone (``RESETTABLE_OPTIONS``: a run that changed them restores them too), the
    append-only tables without their insert-triggered vacuum."""
    for sql in schema_sql():
        conn.execute(sql)
    for table in QUEUE_TABLES:
        conn.execute(f"TRUNCATE {table}")
        if table in PREFILLED:
            conn.execute(PREFILL_SQL.format(table=table), (int(payload_bytes), int(depth)))
        conn.execute(f"ALTER TABLE {table} RESET ({', '.join(RESETTABLE_OPTIONS)})")
        if table in APPEND_ONLY_TABLES:
            conn.execute(f"ALTER TABLE {table} SET ({APPEND_ONLY_OPTIONS})")
        # the prefill's pending insert counters must land before the VACUUM resets them
        flush_statistics(conn)
        conn.execute(f"VACUUM (FREEZE, ANALYZE) {table}")
    return {"depth": conn.execute(f"SELECT count(*) FROM {QUEUE_TABLE}").fetchone()[0]}


def set_queue_options(conn, settings: dict[str, float]) -> None:
    """A mitigation's reloptions on the queue table (``reset_queue`` puts them back)."""
    unknown = sorted(set(settings) - set(RESETTABLE_OPTIONS))
    if unknown:
        raise ValueError(f"queue-table options {unknown} are not ones a reset puts back: {RESETTABLE_OPTIONS}")
    conn.execute(f"ALTER TABLE {QUEUE_TABLE} SET ({', '.join(f'{k} = {v!r}' for k, v in settings.items())})")


def queue_options(conn) -> list[str]:
    """The queue table's reloptions as the server keeps them (a mitigation's settings, if any)."""
    row = conn.execute("SELECT reloptions FROM pg_class WHERE relname = %s", (QUEUE_TABLE,)).fetchone()
    return list((row[0] if row else None) or [])


def depth(conn) -> int:
    return conn.execute(f"SELECT count(*) FROM {QUEUE_TABLE}").fetchone()[0]
