"""The search study's load operation: one query of its stream per call, checked.

A worker process holds one connection of its variant's system (psycopg for Postgres, a
keep-alive HTTP connection for the Lucene engines: ``workloads.search.http`` says why not the
vendor clients) and runs the stream from its own offset (``queries.worker_order``), so every
system gets the same queries in the same order. Every answer is checked where it costs nothing:
it must hold exactly min(10, the query's exact match count) documents; a wrong answer raises,
which fails the run (``max_errors`` 0) — a system that answers wrongly fast is not measured.
"""

from __future__ import annotations

from pglimits_core.load.operation import current_worker
from pglimits_core.workloads.search.queries import worker_order
from pglimits_core.workloads.search.systems.registry import make_system


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
        self.engine = make_system(self.system, self.options).open(self.url)
        self.engine.prepare_stream([(a, b) for a, b, _ in order])
        self.run = self.engine.stream_hits

    def __call__(self) -> None:
        i = self.position
        self.position = (i + 1) % len(self.expected)
        got = self.run(i)
        if got != self.expected[i]:
            raise WrongAnswer(f"{self.terms[i]!r}: {got} hits, a correct top-10 has {self.expected[i]}")

    def close(self) -> None:
        self.engine.close()
