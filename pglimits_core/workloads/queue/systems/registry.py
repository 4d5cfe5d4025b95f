"""Queue systems: ``name -> "module:Class"`` (lazy import), the server each needs, its options.

A new system is one adapter file plus one line in each table below (its chart colour, if it
should not be grey, is one more in ``plotting.figures.ENGINE_COLOURS``). Options are validated
here so a typo fails before any server starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pglimits_core.studies.systems import SystemRegistry
from pglimits_core.workloads.queue.systems.base import QueueAdapter

_PKG = "pglimits_core.workloads.queue.systems"
QUEUE_SYSTEMS: dict[str, str] = {
    "pg_skiplocked": f"{_PKG}.postgres_skiplocked:SkipLockedQueue",
    "pg_delete": f"{_PKG}.postgres_skiplocked:DeleteModeQueue",
    "pgmq": f"{_PKG}.pgmq:PgmqQueue",
    "redis_reliable": f"{_PKG}.redis_reliable:RedisReliableQueue",
    "sqlite_wal": f"{_PKG}.sqlite_wal:SQLiteWalQueue",
}

SERVER_FOR: dict[str, str] = {
    "pg_skiplocked": "postgres", "pg_delete": "postgres", "pgmq": "postgres",
    "redis_reliable": "redis", "sqlite_wal": "sqlite",
}


def positive_int(value: Any) -> int:
    number = int(value)  # ValueError for "abc"; "3" is fine (CLI options arrive as text)
    if isinstance(value, bool) or (isinstance(value, float) and number != value) or number < 1:
        raise ValueError("must be an integer >= 1")
    return number


def positive_float(value: Any) -> float:
    if float(value) <= 0:
        raise ValueError("must be > 0")
    return float(value)


def one_of(*allowed: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if str(value).lower() not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return str(value).lower()
    check.allowed = allowed  # so a test can walk every value a variant may take
    return check


def text(value: Any) -> str:
    return str(value)


_COMMON = {"batch": positive_int, "worker_id": text, "worker_index": lambda v: int(v)}
_POSTGRES = {**_COMMON, "synchronous_commit": one_of("on", "off", "local", "remote_write")}
# the hand-rolled queue's table may be UNLOGGED: no WAL for its rows, truncated by crash recovery
_SKIPLOCKED = {**_POSTGRES, "persistence": one_of("logged", "unlogged")}
VARIANT_OPTIONS: dict[str, dict[str, Callable[[Any], Any]]] = {
    "pg_skiplocked": _SKIPLOCKED,
    "pg_delete": _SKIPLOCKED,
    "pgmq": {**_POSTGRES, "mode": one_of("delete", "archive"), "vt_s": positive_int,
             "queue": text},
    # "none" = no persistence at all (appendonly no), not Redis' own "appendfsync no"
    "redis_reliable": {**_COMMON, "pipeline": positive_int, "key": text,
                       "appendfsync": one_of("none", "everysec", "always")},
    "sqlite_wal": {**_COMMON, "synchronous": one_of("normal", "full", "off"),
                   "shards": positive_int, "backoff_base_s": positive_float,
                   "busy_budget_ms": positive_int},
}


REGISTRY = SystemRegistry("queue", QUEUE_SYSTEMS, SERVER_FOR, VARIANT_OPTIONS)
check_system = REGISTRY.check
validate_options = REGISTRY.validate_options
adapter_class = REGISTRY.system_class
server_for = REGISTRY.server_for


def make_adapter(system: str, url: str, **options: Any) -> QueueAdapter:
    """An unopened adapter (picklable: call ``open()`` in the worker that uses it)."""
    return adapter_class(system)(url, **validate_options(system, options))

