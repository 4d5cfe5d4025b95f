"""Vector systems: ``name -> "module:Class"`` (lazy import), the server each needs, its options.

A new system is one file (a ``VectorSystem``) plus one line in each table below. Options are
validated here, so a typo fails before any server starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pglimits_core.studies.systems import SystemRegistry
from pglimits_core.workloads.vectors.systems.base import Index, VectorSystem

_PKG = "pglimits_core.workloads.vectors.systems"
VECTOR_SYSTEMS: dict[str, str] = {
    "pgvector": f"{_PKG}.pgvector:PgvectorSystem",
    "qdrant": f"{_PKG}.qdrant:QdrantSystem",
    "pgvectorscale": f"{_PKG}.pgvectorscale:PgvectorscaleSystem",
}

SERVER_FOR: dict[str, str] = {"pgvector": "postgres", "qdrant": "qdrant", "pgvectorscale": "postgres_ext"}


def flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def one_of(*allowed: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value
    return check


VARIANT_OPTIONS: dict[str, dict[str, Callable[[Any], Any]]] = {
    # exact: no index, a sequential scan with a top-k sort (the perfect answer's cost); server:
    # the PG 16 server (pgvector 0.6.2) or PG 17 with pgvector 0.8.2; iterative_scan: pgvector
    # >= 0.8's hnsw.iterative_scan for a filtered search
    "pgvector": {"exact": flag, "server": one_of("postgres", "postgres_ext"),
                 "iterative_scan": one_of("off", "relaxed_order", "strict_order")},
    "qdrant": {},
    "pgvectorscale": {},
}


REGISTRY = SystemRegistry("vector", VECTOR_SYSTEMS, SERVER_FOR, VARIANT_OPTIONS)
check_system = REGISTRY.check
validate_options = REGISTRY.validate_options
system_class = REGISTRY.system_class
server_for = REGISTRY.server_for


def variant_server(system: str, options: dict[str, Any]) -> str:
    """The server a variant runs on: its ``server`` option where it has one (pgvector runs on
    PG 16 and on PG 17 with extensions), else its system's."""
    return str(options.get("server") or server_for(system))


def make_system(system: str, endpoint: Any, index: Index, label: str = "", **options: Any) -> VectorSystem:
    """An unopened system (picklable: call ``open()`` in the process that uses it)."""
    return system_class(system)(endpoint, index, label, **validate_options(system, options))

