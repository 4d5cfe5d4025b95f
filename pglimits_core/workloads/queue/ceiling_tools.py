"""What each queue system's own C tool runs for the ``ceiling`` experiment: the harness's very
statements and commands, taken from the systems' module constants.

Postgres (pgbench custom scripts, ``-M prepared`` like the adapters' ``prepare=True``): each
``%s`` of the adapter's SQL becomes a pgbench variable, in order — ``:batch`` (``\\set`` in
the script), ``:client_id`` for the claimant, ``:ids`` for the acknowledged ids. Delete-mode
is one statement per transaction (``DELETE_CLAIM_SQL``); two-phase is the claim
(``CLAIM_SQL``) then the ack (``ACK_SQL``), each its own autocommitted statement as in the
adapter. pgbench's ``\\gset`` keeps one row, so the two-phase claim runs inside
``WITH claimed AS (...)`` and returns its ids and payloads as two arrays (the payload bytes
still cross the wire, as they do to the harness).

Redis (redis-benchmark): the reliable queue's three commands per job — LPUSH onto the queue,
LMOVE into a consumer's processing list, LREM from it — each its own step, with a payload of
the message mix's mean size and the variant's pipeline depth.
"""

from __future__ import annotations

from pglimits_core.datasets.messages import SIZE_MIX
from pglimits_core.workloads.queue.systems.pgmq import ARCHIVE_SQL as PGMQ_ARCHIVE_SQL
from pglimits_core.workloads.queue.systems.pgmq import DEFAULT_QUEUE as PGMQ_DEFAULT_QUEUE
from pglimits_core.workloads.queue.systems.pgmq import DEFAULT_VT_S as PGMQ_DEFAULT_VT_S
from pglimits_core.workloads.queue.systems.pgmq import DELETE_SQL as PGMQ_DELETE_SQL
from pglimits_core.workloads.queue.systems.pgmq import READ_SQL as PGMQ_READ_SQL
from pglimits_core.workloads.queue.systems.postgres_skiplocked import (
    ACK_SQL,
    CLAIM_SQL,
    DELETE_CLAIM_SQL,
)
from pglimits_core.workloads.queue.systems.redis_reliable import DEFAULT_KEY

#: the seeds' mix averages 845 B a payload (70 % 256 B, 25 % 1 KB, 5 % 8 KB)
MEAN_PAYLOAD_BYTES = round(sum(size * share for size, share in SIZE_MIX))
BENCH_CONSUMER = "bench"  # the processing list's owner in the benchmark's keys


def pgbench_sql(statement: str, *variables: str) -> str:
    """``statement`` with its ``%s`` placeholders replaced, in order, by pgbench variables."""
    return fill(statement, *(f":{name}" for name in variables))


def fill(statement: str, *values: str) -> str:
    """``statement`` with its ``%s`` placeholders replaced, in order, by ``values`` as written
    (``":batch"`` for a pgbench variable, ``"'jobs'"`` for a literal)."""
    parts = statement.split("%s")
    if len(parts) != len(values) + 1:
        raise ValueError(f"{len(parts) - 1} placeholders, {len(values)} values")
    return "".join(part + value for part, value in zip(parts, [*values, ""], strict=True))


def sql_literal(text: str) -> str:
    """``text`` as an SQL string literal (quotes doubled)."""
    return "'" + str(text).replace("'", "''") + "'"


def delete_mode_script(batch: int) -> str:
    """One delete-mode claim of ``batch`` jobs per transaction (claim = ack, at-most-once)."""
    return f"\\set batch {int(batch)}\n{pgbench_sql(DELETE_CLAIM_SQL, 'batch')};\n"


def two_phase_script(batch: int) -> str:
    """The two-phase claim of ``batch`` jobs, then their ack: two statements per transaction."""
    claim = pgbench_sql(CLAIM_SQL, "client_id", "batch")
    return (f"\\set batch {int(batch)}\n"
            f"WITH claimed AS ({claim})\n"
            "SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(payload), '{}') AS payloads "
            "FROM claimed \\gset\n"
            f"{pgbench_sql(ACK_SQL, 'ids')};\n")


def pgmq_script(batch: int, queue: str = PGMQ_DEFAULT_QUEUE, vt_s: int = PGMQ_DEFAULT_VT_S,
                mode: str = "delete") -> str:
    """The pgmq adapter's claim (``pgmq.read`` of ``batch`` messages, hidden for ``vt_s``) then
    its ack (``pgmq.delete``, or ``pgmq.archive`` in archive mode): two statements a transaction."""
    name = sql_literal(queue)
    ack = PGMQ_ARCHIVE_SQL if mode == "archive" else PGMQ_DELETE_SQL
    return (f"\\set batch {int(batch)}\n\\set vt {int(vt_s)}\n"
            f"WITH claimed AS ({fill(PGMQ_READ_SQL, name, ':vt', ':batch')})\n"
            "SELECT coalesce(array_agg(msg_id), '{}') AS ids, coalesce(array_agg(message), '{}') AS payloads "
            "FROM claimed \\gset\n"
            f"{fill(ack, name, ':ids')};\n")


def reliable_queue_steps(key: str = DEFAULT_KEY, payload_bytes: int = MEAN_PAYLOAD_BYTES) -> list[tuple[str, list[str]]]:
    """(step, command) of the reliable queue's per-job commands, in the order a job sees them;
    every LMOVE finds a job (the LPUSH step left ``requests`` of them) and every LREM finds its
    value at the head of the processing list, as a consumer's ack does."""
    payload = "x" * payload_bytes
    processing = f"{key}:processing:{BENCH_CONSUMER}"
    return [("LPUSH", ["LPUSH", key, payload]),
            ("LMOVE", ["LMOVE", key, processing, "RIGHT", "LEFT"]),
            ("LREM", ["LREM", processing, "1", payload])]


def per_job_rate(command_rates: list[float]) -> float | None:
    """Jobs/s of a pattern of commands run back to back, from each command's own rate: a job
    costs the sum of its commands' times, 1/Σ(1/rate_i) — derived, not measured."""
    if not command_rates or any(not rate or rate <= 0 for rate in command_rates):
        return None
    return 1.0 / sum(1.0 / rate for rate in command_rates)
