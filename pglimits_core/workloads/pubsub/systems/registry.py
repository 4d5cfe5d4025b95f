"""Pub/sub systems: ``name -> "module:Class"`` (lazy import), the server each needs, its options.

A new system is one file behind ``base.PubsubSystem`` plus one line in each table below. Options
are validated here so a typo fails before any server starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pglimits_core.studies.systems import SystemRegistry
from pglimits_core.workloads.pubsub.systems.base import PubsubSystem

_PKG = "pglimits_core.workloads.pubsub.systems"
PUBSUB_SYSTEMS: dict[str, str] = {
    "pg_notify": f"{_PKG}.postgres:PostgresNotify",
    "redis_publish": f"{_PKG}.redis:RedisPublish",
}

SERVER_FOR: dict[str, str] = {"pg_notify": "postgres", "redis_publish": "redis"}


def batch_size(value: Any) -> int:
    """Messages per publish call: an integer >= 1 as given (no text or float is converted)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("must be an integer >= 1")
    return value


#: every system takes ``batch``: messages per publish call (one transaction for pg_notify,
#: one pipeline for redis_publish)
VARIANT_OPTIONS: dict[str, dict[str, Callable[[Any], Any]]] = {
    "pg_notify": {"batch": batch_size},
    "redis_publish": {"batch": batch_size},
}


REGISTRY = SystemRegistry("pub/sub", PUBSUB_SYSTEMS, SERVER_FOR, VARIANT_OPTIONS)
check_system = REGISTRY.check
validate_options = REGISTRY.validate_options
system_class = REGISTRY.system_class
server_for = REGISTRY.server_for


def make_system(system: str, url: str, **options: Any) -> PubsubSystem:
    """An unopened system (picklable: call ``open()`` in the worker that uses it)."""
    return system_class(system)(url, **validate_options(system, options))

