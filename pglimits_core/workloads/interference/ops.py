"""The tenants' load operations: one query (or one job) per call, through the search, vector and
queue studies' own systems (their adapters, their requests, their session settings), checked
where it costs nothing. Each op takes its system's registry name, so the same op runs the
Postgres side (``pg_gin`` ranked, ``pgvector``) and the dedicated side (``opensearch``, ``qdrant``):
the system object decides what goes on the wire, byte for byte what its own study sends.

``FtsQueryOp`` runs the search study's ranked full-text query (``pg_gin`` ranked: ``ts_rank``
top 10, prepared, generic plan) or OpenSearch's (``match`` AND, BM25 top 10) over the corpus's
queries; an answer must hold exactly min(10, the query's exact match count) documents, or the run
fails (a wrong answer fast is not a bystander's latency). ``VectorQueryOp`` runs the vector
study's HNSW query (pgvector ``hnsw.ef_search`` / Qdrant ``hnsw_ef``) at the profile's ``ef`` over
the dataset's queries. Each worker walks the queries from its own offset. ``OltpLookupOp`` is
pgbench's select-only transaction (one account's balance by its primary key, a uniformly random
account), prepared on one autocommit connection: the OLTP tenant an application keeps on the
same Postgres, each worker's accounts drawn from its own seeded generator. (The dedicated side's
Redis churn is compiled: ``load.tools.qload_churn``.)
"""

from __future__ import annotations

from typing import Any

from pglimits_core.load.operation import current_worker
from pglimits_core.workloads.search.systems.registry import make_system as make_search_system
from pglimits_core.workloads.vectors.systems.registry import make_system as make_vector_system

K = 10


def _offset(items: int) -> int:
    me = current_worker()
    return 0 if me is None else (me.index * items) // max(1, me.workers)


class WrongAnswer(RuntimeError):
    """An answer with a hit count no correct top-10 can have."""


class FtsQueryOp:
    """``queries``: ``(term_a, term_b, expected hits)``; ``system``/``options``: the search study's."""

    name = "fts"

    def __init__(self, url: str, queries: list[tuple[str, str, int]], system: str = "pg_gin",
                 options: dict[str, Any] | None = None):
        self.url, self.queries = url, list(queries)
        self.system, self.options = system, ({"ranked": True} if options is None else dict(options))

    def __repr__(self) -> str:
        return f"FtsQueryOp({self.system} {self.options}, {len(self.queries)} queries)"

    def open(self) -> None:
        start = _offset(len(self.queries))
        order = self.queries[start:] + self.queries[:start]
        self.expected = [hits for _, _, hits in order]
        self.position = 0
        self.engine = make_search_system(self.system, self.options).open(self.url)
        self.engine.prepare_stream([(a, b) for a, b, _ in order])

    def __call__(self) -> None:
        i = self.position
        self.position = (i + 1) % len(self.expected)
        got = self.engine.stream_hits(i)
        if got != self.expected[i]:
            raise WrongAnswer(f"query {i}: {got} hits, a correct top-10 has {self.expected[i]}")

    def close(self) -> None:
        self.engine.close()


class VectorQueryOp:
    """HNSW at ``ef`` on ``system``; the dataset's queries are read in the worker (not pickled)."""

    name = "vector"

    def __init__(self, endpoint: Any, index: Any, dataset_path: str, ef: int, system: str = "pgvector"):
        self.endpoint, self.index, self.dataset_path, self.ef = endpoint, index, dataset_path, ef
        self.system_name = system

    def __repr__(self) -> str:
        return f"VectorQueryOp({self.system_name} hnsw, ef={self.ef}, {self.index.tag})"

    def open(self) -> None:
        import numpy as np

        from pglimits_core.datasets.store import load_vectors

        queries = np.array(load_vectors(self.dataset_path).queries, dtype=np.float32)
        self.system = make_vector_system(self.system_name, self.endpoint, self.index, f"{self.system_name} hnsw")
        self.system.open()
        self.system.set_search_params(self.ef, K)
        self.requests = self.system.prepare(queries)
        self.position = _offset(len(self.requests))

    def __call__(self) -> None:
        request = self.requests[self.position % len(self.requests)]
        self.position += 1
        if len(self.system.search(request)) != K:
            raise WrongAnswer(f"a vector query returned fewer than {K} neighbours at ef={self.ef}")

    def close(self) -> None:
        self.system.close()


class OltpLookupOp:
    """``SELECT abalance FROM <table> WHERE aid = $1`` for a random ``aid`` in 1..``rows``; an
    account that is not there fails the run (the table was not loaded as planned)."""

    name = "oltp"

    def __init__(self, url: str, table: str, rows: int, seed: int = 0):
        self.url, self.table, self.rows, self.seed = url, table, int(rows), int(seed)

    def __repr__(self) -> str:
        return f"OltpLookupOp({self.table}, {self.rows:,} accounts)"

    def open(self) -> None:
        import random

        import psycopg

        me = current_worker()
        self.random = random.Random(self.seed * 1_000_003 + (0 if me is None else me.index))
        self.conn = psycopg.connect(self.url, autocommit=True)
        self.sql = f"SELECT abalance FROM {self.table} WHERE aid = %s"

    def __call__(self) -> None:
        aid = self.random.randint(1, self.rows)
        if self.conn.execute(self.sql, (aid,), prepare=True).fetchone() is None:
            raise WrongAnswer(f"account {aid} is not in {self.table} ({self.rows:,} planned)")

    def close(self) -> None:
        self.conn.close()


def job_payload(job_id: str, size: int) -> bytes:
    """A job of exactly ``size`` bytes carrying its id (the reliable queue acks by the payload)."""
    from pglimits_core.datasets.messages import build_payload

    return build_payload(job_id, size, "x" * size)
