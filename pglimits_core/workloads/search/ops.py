"""The search study's load operation: one query of its stream per call, checked.

A worker process holds one connection (psycopg for Postgres, a keep-alive HTTP connection for
the Lucene engines: ``workloads.search.http`` says why not the vendor clients) and runs the
stream from its own offset (``queries.worker_order``), so every system gets the same queries in
the same order. Every answer is checked where it costs nothing: it must hold exactly
min(10, the query's exact match count) documents; a wrong answer raises, which fails the run
(``max_errors`` 0) — a system that answers wrongly fast is not measured.
"""

from __future__ import annotations

import json

from pglimits_core.load.operation import current_worker
from pglimits_core.workloads.search.engines import (
    INDEX,
    RANKED_SQL,
    UNRANKED_SQL,
    lucene_body,
    pg_session,
    pg_terms,
)
from pglimits_core.workloads.search.queries import worker_order


class WrongAnswer(RuntimeError):
    """An answer with a hit count no correct top-10 can have."""


class SearchOp:
    """``queries``: ``(term_a, term_b, expected hits)`` in the stream's order."""

    name = "search"

    def __init__(self, system: str, url: str, options: dict, queries: list[tuple[str, str, int]]):
        self.system, self.url, self.options, self.queries = system, url, dict(options), list(queries)

    def __repr__(self) -> str:  # the manifest keeps the first 300 characters: no query dump
        return f"SearchOp({self.system}, {self.options}, {len(self.queries)} queries)"

    def open(self) -> None:
        me = current_worker()
        order = worker_order(self.queries, me.index, me.workers) if me else self.queries
        self.expected = [hits for _, _, hits in order]
        self.terms = [f"{a} {b}" for a, b, _ in order]
        self.position = 0
        if self.system == "pg_gin":
            import psycopg

            self.conn = psycopg.connect(self.url, autocommit=True)
            pg_session(self.conn, self.options)
            self.cursor = self.conn.cursor()
            self.sql = RANKED_SQL if self.options.get("ranked", True) else UNRANKED_SQL
            self.params = [(pg_terms(a, b),) for a, b, _ in order]
            self.run = self._postgres
        else:
            from pglimits_core.workloads.search.http import KeepAliveHttp

            self.conn = KeepAliveHttp(self.url).connect()
            path = f"/{INDEX}/_search"
            self.requests = [self.conn.encode("POST", path, lucene_body(a, b, self.options["operator"],
                                                                         self.options["track_total_hits"]))
                             for a, b, _ in order]
            self.run = self._lucene

    def _postgres(self, i: int) -> int:
        self.cursor.execute(self.sql, self.params[i], prepare=True)
        return len(self.cursor.fetchall())

    def _lucene(self, i: int) -> int:
        status, body = self.conn.send(self.requests[i])
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {body[:200].decode(errors='replace')}")
        return len(json.loads(body)["hits"]["hits"])

    def __call__(self) -> None:
        i = self.position
        self.position = (i + 1) % len(self.expected)
        got = self.run(i)
        if got != self.expected[i]:
            raise WrongAnswer(f"{self.terms[i]!r}: {got} hits, a correct top-10 has {self.expected[i]}")

    def close(self) -> None:
        self.conn.close()
