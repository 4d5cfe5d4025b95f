"""Server registry: ``name -> "module:Class"``, imported lazily.

Adding a server is one file and one line here. Everything a study needs to know about a server
(its no-op operation, sampler, crash target and recovery log lines) lives on its class.
"""

from __future__ import annotations

import importlib

from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.base import Server

SERVERS: dict[str, str] = {
    "postgres": "pglimits_core.servers.postgres:PostgresServer",
    "postgres_ext": "pglimits_core.servers.postgres_ext:PostgresExtServer",
    "postgres_queue": "pglimits_core.servers.postgres_queue:PostgresQueueServer",
    "redis": "pglimits_core.servers.redis:RedisServer",
    "sqlite": "pglimits_core.servers.sqlite:SQLiteServer",
    "opensearch": "pglimits_core.servers.opensearch:OpenSearchServer",
    "qdrant": "pglimits_core.servers.qdrant:QdrantServer",
    "elasticsearch": "pglimits_core.servers.elasticsearch:ElasticsearchServer",
}


def server_class(name: str) -> type[Server]:
    """The class registered under ``name``; a one-line error listing the known names otherwise."""
    try:
        module_name, class_name = SERVERS[name].split(":")
    except KeyError:
        raise PGLimitsError(f"unknown server {name!r}",
                            f"use one of: {', '.join(SERVERS)}") from None
    return getattr(importlib.import_module(module_name), class_name)


def validate_names(names: list[str]) -> list[str]:
    for name in names:
        if name not in SERVERS:
            server_class(name)  # raises the one-line error
    return names
