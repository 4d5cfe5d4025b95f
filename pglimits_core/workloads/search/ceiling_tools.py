"""What each search system's own load tool runs for a capacity ceiling: the harness's very query,
taken from the systems' module constants and methods, over the same stream.

Postgres (pgbench custom script, ``-M prepared``, the variant's ``plan_cache_mode`` set for
every session through ``PGOPTIONS`` as the adapter sets it per connection): the stream's
queries are loaded into ``search_ceiling_queries(i, terms)`` (the ``to_tsquery`` text the
adapter sends), each transaction draws ``\\set i random(1, n)`` and runs the variant's statement
(``RANKED_SQL`` / ``UNRANKED_SQL``) verbatim, its one ``%s`` filled by ``(SELECT terms FROM
search_ceiling_queries WHERE i = :i)``: one round trip per query as for the harness; the server
does one primary-key lookup more per query (a few µs beside the search).

Elasticsearch / OpenSearch (vegeta, closed loop): one target per query of the stream, in the
stream's order, ``POST /search_corpus/_search`` with the adapter's own body (``LuceneIndex.body``)
and ``Content-Type: application/json``; ``Accept-Encoding: identity`` because Go's HTTP client
would otherwise ask for gzip, and the engines would compress every answer, which the harness's
client never asks for (it sends no Accept-Encoding).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pglimits_core.load.tools import HttpTarget, PgbenchLoad, ToolCommand, VegetaLoad
from pglimits_core.workloads.search.queries import SearchQuery
from pglimits_core.workloads.search.systems.lucene import INDEX
from pglimits_core.workloads.search.systems.postgres import pg_terms

QUERY_TABLE = "search_ceiling_queries"
TERMS_LOOKUP = f"(SELECT terms FROM {QUERY_TABLE} WHERE i = :i)"
HTTP_HEADERS = {"Content-Type": "application/json", "Accept-Encoding": "identity"}


def pgbench_script(statement: str, queries: int) -> str:
    """The harness's ``statement`` with its one ``%s`` filled by the i-th query's terms."""
    if statement.count("%s") != 1:
        raise ValueError(f"expected one %s placeholder in {statement!r}")
    return f"\\set i random(1, {int(queries)})\n{statement.replace('%s', TERMS_LOOKUP)};\n"


def fill_query_table(url: str, queries: list[SearchQuery]) -> None:
    """``search_ceiling_queries`` holds exactly ``queries`` (i = 1..n, in the stream's order)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {QUERY_TABLE}")
        conn.execute(f"CREATE TABLE {QUERY_TABLE} (i integer PRIMARY KEY, terms text NOT NULL)")
        with conn.cursor().copy(f"COPY {QUERY_TABLE} (i, terms) FROM STDIN") as copy:
            for i, q in enumerate(queries, start=1):
                copy.write_row((i, pg_terms(q.term_a, q.term_b)))
        conn.execute(f"ANALYZE {QUERY_TABLE}")


class SessionPgbench(PgbenchLoad):
    """pgbench with server settings for every session (``PGOPTIONS``), recorded in the manifest."""

    def __init__(self, *args: Any, settings: dict[str, str], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.settings = dict(settings)

    def commands(self) -> list[ToolCommand]:
        options = " ".join(f"-c {name}={value}" for name, value in self.settings.items())
        return [dataclasses.replace(c, env={**c.env, "PGOPTIONS": options}) for c in super().commands()]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "tool_session_settings": self.settings}


class PgbenchCeiling:
    """pgbench on the variant's statement over the stream's queries (drawn at random)."""

    tool = "pgbench"

    def load(self, url: str, v: Any, queries: list[SearchQuery], clients: int, duration_s: int,
             warmup_s: int) -> PgbenchLoad:
        script = pgbench_script(v.query_template(), len(queries))
        return SessionPgbench(url, script, clients, duration_s, warmup_s, op="search",
                              script_name=f"{v.system}.sql",
                              settings={"plan_cache_mode": v.options["plan_cache_mode"]})

    def prepare(self, url: str, queries: list[SearchQuery]) -> None:
        fill_query_table(url, queries)


class VegetaCeiling:
    """vegeta sending the adapter's ``_search`` requests, one per query of the stream, in order."""

    tool = "vegeta"

    def load(self, url: str, v: Any, queries: list[SearchQuery], clients: int, duration_s: int,
             warmup_s: int) -> VegetaLoad:
        engine = v.engine()
        targets = [HttpTarget("POST", f"{url.rstrip('/')}/{INDEX}/_search", engine.body(q.term_a, q.term_b),
                              HTTP_HEADERS) for q in queries]
        return VegetaLoad(targets, clients, duration_s, warmup_s, op="search")

    def prepare(self, url: str, queries: list[SearchQuery]) -> None:
        return None  # the requests carry their queries


CEILING_TOOLS: dict[str, Any] = {
    "pg_gin": PgbenchCeiling(),
    "elasticsearch": VegetaCeiling(),
    "opensearch": VegetaCeiling(),
}
