"""What qload is told to run for one queue design: each system's own verbs (the adapters' SQL
constants with the design's session settings, the reliable queue's Redis commands, the SQLite WAL
queue's statements and PRAGMAs) and what it connects to. Here, beside the adapters, so any study
that drives a queue with qload (the queue's rate points and ceilings, co-location's churn) reads
one definition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlparse

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools.qload import QueueVerbs, dollar_params
from pglimits_core.servers.sqlite import pragmas
from pglimits_core.workloads.queue.systems import pgmq, postgres_skiplocked, sqlite_wal
from pglimits_core.workloads.queue.systems.redis_reliable import DEFAULT_KEY


class QueueDesign(Protocol):
    """A queue system with its options (the queue study's ``QueueVariant`` is one)."""

    label: str
    system: str
    options: dict[str, Any]

    @property
    def batch(self) -> int: ...


@dataclass(frozen=True)
class PlainDesign:
    """A queue design outside the queue study (co-location's churn): a system and its options."""

    system: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.system

    @property
    def batch(self) -> int:
        return int(self.options.get("batch", 1))


#: the queue systems qload drives (SQLite's engine inside it)
QLOAD_SYSTEMS = ("pg_skiplocked", "pg_delete", "pgmq", "redis_reliable", "sqlite_wal")
#: the adapter's session settings a qload session must share (as pgbench's do)
SESSION_OPTIONS = ("synchronous_commit",)
#: one payload per enqueue, through the adapter's own statement shape
SKIPLOCKED_ENQUEUE = f"INSERT INTO {postgres_skiplocked.TABLE} (payload) SELECT unnest(ARRAY[$1::bytea]) RETURNING id"


def _settings(v: QueueDesign) -> dict[str, str]:
    return {name: str(v.options[name]) for name in SESSION_OPTIONS if name in v.options}


def _pgmq_verbs(v: QueueDesign) -> QueueVerbs:
    queue = str(v.options.get("queue", pgmq.DEFAULT_QUEUE)).replace("'", "''")
    vt_s = int(v.options.get("vt_s", pgmq.DEFAULT_VT_S))
    ack = pgmq.ARCHIVE_SQL if v.options.get("mode") == "archive" else pgmq.DELETE_SQL
    return QueueVerbs("postgres", f"SELECT pgmq.send_batch('{queue}', ARRAY[convert_from($1::bytea, 'UTF8')]::jsonb[])",
                      dollar_params(pgmq.READ_SQL.replace("%s", f"'{queue}'", 1).replace("%s", str(vt_s), 1)),
                      ("batch",), dollar_params(ack.replace("%s", f"'{queue}'", 1)), _settings(v))


def _sqlite_verbs(v: QueueDesign) -> QueueVerbs:
    """The WAL queue adapter's statements and PRAGMAs (``busy_timeout`` 0: qload retries as the
    adapter's ``BusyWaiter`` does, within the same budget)."""
    synchronous = str(v.options.get("synchronous", sqlite_wal.SQLiteWalQueue.durability_default)).upper()
    claim = (sqlite_wal.CLAIM_SQL, ("consumer", "now", "now")) if v.batch == 1 else \
        (sqlite_wal.CLAIM_BATCH_SQL, ("consumer", "now", "now", "batch"))
    return QueueVerbs("sqlite", sqlite_wal.ENQUEUE_SQL, claim[0], claim[1], sqlite_wal.ACK_SQL,
                      pragmas({"synchronous": synchronous, "busy_timeout": "0"}),
                      enqueue_params=("payload", "now", "now"), ack_params=("id", "consumer"))


def qload_verbs(v: QueueDesign) -> QueueVerbs:
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


def qload_target(url: str, v: QueueDesign) -> str:
    """What qload connects to: the libpq DSN as the adapters use it, Redis's host:port, or the
    SQLite queue's files (one per shard, as the adapter names them)."""
    if v.system == "sqlite_wal":
        return ",".join(str(p) for p in sqlite_wal.shard_paths(url, int(v.options.get("shards", 1))))
    if v.system != "redis_reliable":
        return url
    parsed = urlparse(url)
    return f"{parsed.hostname}:{parsed.port}"
