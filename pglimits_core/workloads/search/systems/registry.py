"""Search systems: ``name -> "module:Class"`` (lazy import) and the server each runs on.

A new system is one file behind ``base.SearchSystem`` plus one line in each table below.
Elasticsearch and OpenSearch share ``lucene.LuceneIndex`` (its docstring says why): the name
is what tells them apart. pg_search and pg_textsearch (Postgres BM25 extensions) run on the
``postgres_ext`` server (PostgreSQL 17 with the extensions).
"""

from __future__ import annotations

from typing import Any

from pglimits_core.studies.systems import SystemRegistry
from pglimits_core.workloads.search.systems.base import SearchSystem

_PKG = "pglimits_core.workloads.search.systems"
SEARCH_SYSTEMS: dict[str, str] = {
    "pg_gin": f"{_PKG}.postgres:PostgresGin",
    "elasticsearch": f"{_PKG}.lucene:LuceneIndex",
    "opensearch": f"{_PKG}.lucene:LuceneIndex",
    "pg_search": f"{_PKG}.pg_search:PgSearch",
    "pg_textsearch": f"{_PKG}.pg_textsearch:PgTextsearch",
}

SERVER_FOR: dict[str, str] = {"pg_gin": "postgres", "elasticsearch": "elasticsearch", "opensearch": "opensearch",
                              "pg_search": "postgres_ext", "pg_textsearch": "postgres_ext"}


REGISTRY = SystemRegistry("search", SEARCH_SYSTEMS, SERVER_FOR)  # options: each class checks its own
check_system = REGISTRY.check
system_class = REGISTRY.system_class
server_for = REGISTRY.server_for


def make_system(system: str, options: dict[str, Any] | None = None) -> SearchSystem:
    """An unopened system with ``options`` validated (the defaults where a variant gives none)."""
    return system_class(system)(system, options)


def jvm_servers() -> list[str]:
    """The servers whose JVM heap the profile's ``search.heap`` sets."""
    return [SERVER_FOR[system] for system in SEARCH_SYSTEMS if system_class(system).jvm_heap]
