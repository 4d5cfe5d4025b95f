"""The queue's open-loop rate point driven by qload (``load.tools.qload``): the harness's latency
point — producers at a fixed offered rate, one message per enqueue, closed-loop consumers, send →
claim from the *intended* send — with the load compiled, so one load core can offer the rates the
Python producers and consumers cannot (they top out near 1,500 jobs/s of a two-phase queue on one
core). The verbs are each system's own: the adapter's SQL constants for the Postgres designs (with
the variant's session settings), the reliable queue's commands for Redis, and for the SQLite WAL
queue the adapter's statements, PRAGMAs, shard dealing and busy retries: SQLite is embedded, so
there qload *is* the program the engine runs in — a compiled one, as the SQLite source study's was
— and its core is the engine's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools.qload import QloadLoad, QueueVerbs, dollar_params
from pglimits_core.servers.sqlite import pragmas
from pglimits_core.studies.runner import RecordedRun, run_tool_recorded
from pglimits_core.workloads.queue.points import STUDY, QueueVariant, fresh_queue
from pglimits_core.workloads.queue.systems import pgmq, postgres_skiplocked, sqlite_wal
from pglimits_core.workloads.queue.systems.redis_reliable import DEFAULT_KEY

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

#: the queue systems qload drives (SQLite's engine inside it)
QLOAD_SYSTEMS = ("pg_skiplocked", "pg_delete", "pgmq", "redis_reliable", "sqlite_wal")
#: the adapter's session settings a qload session must share (as pgbench's do)
SESSION_OPTIONS = ("synchronous_commit",)
#: one payload per enqueue, through the adapter's own statement shape
SKIPLOCKED_ENQUEUE = f"INSERT INTO {postgres_skiplocked.TABLE} (payload) SELECT unnest(ARRAY[$1::bytea]) RETURNING id"


def _settings(v: QueueVariant) -> dict[str, str]:
    return {name: str(v.options[name]) for name in SESSION_OPTIONS if name in v.options}


def _pgmq_verbs(v: QueueVariant) -> QueueVerbs:
    queue = str(v.options.get("queue", pgmq.DEFAULT_QUEUE)).replace("'", "''")
    vt_s = int(v.options.get("vt_s", pgmq.DEFAULT_VT_S))
    ack = pgmq.ARCHIVE_SQL if v.options.get("mode") == "archive" else pgmq.DELETE_SQL
    return QueueVerbs("postgres", f"SELECT pgmq.send_batch('{queue}', ARRAY[convert_from($1::bytea, 'UTF8')]::jsonb[])",
                      dollar_params(pgmq.READ_SQL.replace("%s", f"'{queue}'", 1).replace("%s", str(vt_s), 1)),
                      ("batch",), dollar_params(ack.replace("%s", f"'{queue}'", 1)), _settings(v))


def _sqlite_verbs(v: QueueVariant) -> QueueVerbs:
    """The WAL queue adapter's statements and PRAGMAs (``busy_timeout`` 0: qload retries as the
    adapter's ``BusyWaiter`` does, within the same budget)."""
    synchronous = str(v.options.get("synchronous", sqlite_wal.SQLiteWalQueue.durability_default)).upper()
    claim = (sqlite_wal.CLAIM_SQL, ("consumer", "now", "now")) if v.batch == 1 else \
        (sqlite_wal.CLAIM_BATCH_SQL, ("consumer", "now", "now", "batch"))
    return QueueVerbs("sqlite", sqlite_wal.ENQUEUE_SQL, claim[0], claim[1], sqlite_wal.ACK_SQL,
                      pragmas({"synchronous": synchronous, "busy_timeout": "0"}),
                      enqueue_params=("payload", "now", "now"), ack_params=("id", "consumer"))


def qload_verbs(v: QueueVariant) -> QueueVerbs:
    """The variant's own verbs as qload runs them; a system qload does not drive is a plan error."""
    if v.system == "pg_skiplocked":
        return QueueVerbs("postgres", SKIPLOCKED_ENQUEUE, dollar_params(postgres_skiplocked.CLAIM_SQL),
                          ("consumer", "batch"), dollar_params(postgres_skiplocked.ACK_SQL), _settings(v))
    if v.system == "pg_delete":
        return QueueVerbs("postgres", SKIPLOCKED_ENQUEUE, dollar_params(postgres_skiplocked.DELETE_CLAIM_SQL),
                          ("batch",), "", _settings(v))
    if v.system == "pgmq":
        return _pgmq_verbs(v)
    if v.system == "redis_reliable":
        return QueueVerbs("redis", key=str(v.options.get("key", DEFAULT_KEY)), pipeline=int(v.options.get("pipeline", 1)))
    if v.system == "sqlite_wal":
        return _sqlite_verbs(v)
    raise PGLimitsError(f"qload does not drive {v.system} ({v.label})",
                        f"use the harness's load for it (capacity.load: harness), or one of {', '.join(QLOAD_SYSTEMS)}")


def qload_target(url: str, v: QueueVariant) -> str:
    """What qload connects to: the libpq DSN as the adapters use it, Redis's host:port, or the
    SQLite queue's files (one per shard, as the adapter names them)."""
    if v.system == "sqlite_wal":
        return ",".join(str(p) for p in sqlite_wal.shard_paths(url, int(v.options.get("shards", 1))))
    if v.system != "redis_reliable":
        return url
    parsed = urlparse(url)
    return f"{parsed.hostname}:{parsed.port}"


def qload_point(run: StudyRun, v: QueueVariant, rate: float, producers: int, consumers: int, duration_s: float,
                warmup_s: float, experiment: str, extra_params: dict[str, Any] | None = None) -> RecordedRun:
    """One qload run on a fresh, empty queue; the record's outcome says what was left in it."""
    ctx = run.ctx
    load = QloadLoad(qload_verbs(v), qload_target(ctx.endpoints[v.server].url, v), rate, producers,
                     consumers, v.batch, duration_s, warmup_s, seed=run.seed)
    params = {"experiment": experiment, "variant": v.label, "options": v.options, "rate": rate,
              "producers": producers, "consumers": consumers, **(extra_params or {})}
    name = f"{experiment}:{v.label}"
    reused = ctx.reuse(STUDY, v.system, name, {**params, **load.describe()})
    if reused:
        return reused
    adapter = fresh_queue(ctx, v)
    try:
        def after(result) -> dict[str, Any]:
            return {"left_after_run": adapter.depth(), "adapter": adapter.describe(),
                    "tool_reported": result.params.get("tool_reported", {})}

        return run_tool_recorded(ctx, STUDY, v.system, name, v.server, load, params, seed=run.seed,
                                 tables=adapter.describe().get("tables"), after=after)
    finally:
        adapter.close()
