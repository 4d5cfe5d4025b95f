"""**pg_gin**: Postgres full-text search with a GIN index.

A ``tsvector`` column generated with the ``simple`` configuration, a GIN index on it,
``to_tsquery('simple', 'a & b')``; ranked = ``ORDER BY ts_rank(tsv, q) DESC, id LIMIT 10`` (the
id only breaks ties, so answers are reproducible), unranked = ``@@`` with ``LIMIT 10``. Every
connection runs the query as a prepared statement with ``plan_cache_mode = force_generic_plan``
(why: ``PLAN_CACHE_MODES``). Load: COPY per batch (each its own transaction), then ``CREATE
INDEX``, ``VACUUM ANALYZE`` (flushes the GIN pending list; recorded) and a CHECKPOINT so no point
inherits the load's dirty pages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.search.queries import K
from pglimits_core.workloads.search.systems.base import SearchSystem

#: how each connection plans the prepared query. The study's default is the generic plan (a GIN
#: bitmap scan whatever the terms): on these sub-millisecond queries planning each execution costs
#: about as much as running it, and the server default (auto: custom plans for the first five
#: executions, then whichever its cost estimate prefers, per connection) makes the plan depend on
#: which queries a connection happened to run first. ``auto`` stays available as a variant.
PLAN_CACHE_MODES = ("auto", "force_custom_plan", "force_generic_plan")
DEFAULT_PLAN_CACHE_MODE = "force_generic_plan"
TABLE, GIN_INDEX, META_TABLE = "search_docs", "search_docs_tsv", "search_meta"
CREATE_TABLE = (f"CREATE TABLE {TABLE} (id integer PRIMARY KEY, body text NOT NULL, "
                "tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED)")
CREATE_INDEX = f"CREATE INDEX {GIN_INDEX} ON {TABLE} USING gin (tsv)"
RANKED_SQL = (f"SELECT id FROM {TABLE}, to_tsquery('simple', %s) AS q WHERE tsv @@ q "
              f"ORDER BY ts_rank(tsv, q) DESC, id LIMIT {K}")
UNRANKED_SQL = f"SELECT id FROM {TABLE} WHERE tsv @@ to_tsquery('simple', %s) LIMIT {K}"
COUNT_SQL = f"SELECT count(*) FROM {TABLE} WHERE tsv @@ to_tsquery('simple', %s)"
#: the planner settings a correctness or load record shows
DESCRIBED_SETTINGS = ("SELECT name, setting FROM pg_settings WHERE name IN ('plan_cache_mode', "
                      "'default_text_search_config', 'gin_fuzzy_search_limit', 'gin_pending_list_limit', "
                      "'work_mem', 'max_parallel_workers_per_gather', 'jit')")


def pg_terms(a: str, b: str) -> str:
    """The ``to_tsquery`` text of a 2-term AND."""
    return f"{a} & {b}"


def check_plan_cache_mode(mode: str) -> None:
    if mode not in PLAN_CACHE_MODES:
        raise PGLimitsError(f"search: plan_cache_mode {mode!r}", f"use one of: {', '.join(PLAN_CACHE_MODES)}")


class PostgresGin(SearchSystem):
    """Postgres GIN + tsvector, ranked (``ts_rank``) or unranked (``ranked: false``)."""

    defaults = {"ranked": True, "plan_cache_mode": DEFAULT_PLAN_CACHE_MODE}
    chunk_format = "copy"
    sampled_tables = [TABLE]
    family = "postgres"
    #: the relations this system loads (a subclass on the same kind of server names its own)
    table, index, meta_table, create_table = TABLE, GIN_INDEX, META_TABLE, CREATE_TABLE

    def check_options(self) -> None:
        check_plan_cache_mode(self.options["plan_cache_mode"])

    @property
    def ranked(self) -> bool:
        return bool(self.options.get("ranked", True))

    @property
    def sql(self) -> str:
        return RANKED_SQL if self.ranked else UNRANKED_SQL

    def default_label(self) -> str:
        mode = self.options.get("plan_cache_mode", DEFAULT_PLAN_CACHE_MODE)
        extras = [f"plan_cache_mode={mode}"] if mode != DEFAULT_PLAN_CACHE_MODE else []
        return " ".join([f"{self.system} ranked" if self.ranked else f"{self.system} unranked", *extras])

    def query_template(self) -> str:
        return self.sql

    @staticmethod
    def encode_chunks(texts: Iterable[str], batch: int) -> list[bytes]:
        """COPY text-format rows ``id<TAB>body``; the corpus's words need no escaping."""
        chunks, rows = [], []
        for doc_id, text in enumerate(texts):
            rows.append(f"{doc_id}\t{text}\n")
            if len(rows) == batch:
                chunks.append("".join(rows).encode())
                rows = []
        return chunks + (["".join(rows).encode()] if rows else [])

    # --- connection -------------------------------------------------------------------------
    def open(self, url: str) -> PostgresGin:
        """Connect in autocommit, with the variant's plan_cache_mode for this session (recorded in
        every manifest with the variant's options)."""
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)
        mode = self.options.get("plan_cache_mode", DEFAULT_PLAN_CACHE_MODE)
        check_plan_cache_mode(mode)
        self.conn.execute(f"SET plan_cache_mode = {mode}")
        return self

    def close(self) -> None:
        self.conn.close()

    # --- load and index -----------------------------------------------------------------------
    def loaded(self, dataset: str, documents: int) -> bool:
        exists = self.conn.execute("SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
                                   (self.meta_table, self.index)).fetchone()[0]
        if not exists:
            return False
        row = self.conn.execute(f"SELECT dataset, documents FROM {self.meta_table}").fetchone()
        return row == (dataset, documents)

    def reset(self, dataset: str, documents: int) -> None:
        self.conn.execute(f"DROP TABLE IF EXISTS {self.meta_table}")
        self.conn.execute(f"DROP TABLE IF EXISTS {self.table}")
        self.conn.execute(self.create_table)

    def bulk(self, chunk: bytes) -> None:
        """One COPY, its own transaction."""
        with self.conn.cursor().copy(f"COPY {self.table} (id, body) FROM STDIN") as copy:
            copy.write(chunk)

    def build_steps(self) -> list[tuple[str, Callable[[], Any]]]:
        """The GIN index; VACUUM ANALYZE (flushes its pending list, fresh statistics); a
        CHECKPOINT, so no point inherits the load's dirty pages."""
        return [("index_build_s", lambda: self.conn.execute(CREATE_INDEX)),
                ("vacuum_analyze_s", lambda: self.conn.execute(f"VACUUM ANALYZE {TABLE}")),
                ("settle_s", lambda: self.conn.execute("CHECKPOINT"))]

    def mark_loaded(self, dataset: str, documents: int) -> None:
        self.conn.execute(f"CREATE TABLE {self.meta_table} (dataset text, documents integer)")
        self.conn.execute(f"INSERT INTO {self.meta_table} VALUES (%s, %s)", (dataset, documents))

    def documents(self) -> int:
        return self.conn.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0]

    def sizes(self) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT pg_relation_size(%s), pg_table_size(%s), pg_indexes_size(%s), pg_total_relation_size(%s)",
            (GIN_INDEX, TABLE, TABLE, TABLE)).fetchone()
        pending = self.gin_pending()
        return {"index_bytes": row[0], "table_bytes": row[1], "all_indexes_bytes": row[2],
                "total_bytes": row[3], "gin_pending_pages": pending, "segments": None}

    def gin_pending(self) -> int | None:
        """Pages in the GIN pending list (0 after VACUUM), read from the metapage when the
        pgstattuple extension can be created; None otherwise."""
        try:
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
            return self.conn.execute("SELECT pending_pages FROM pgstatginindex(%s)", (GIN_INDEX,)).fetchone()[0]
        except Exception:  # the extension is optional: the VACUUM ANALYZE is recorded either way
            return None

    def describe(self) -> dict[str, Any]:
        """The schema and index as the server has them, and the planner settings that matter."""
        indexdef = self.conn.execute("SELECT pg_get_indexdef(%s::regclass)", (GIN_INDEX,)).fetchone()[0]
        options = self.conn.execute("SELECT reloptions FROM pg_class WHERE relname = %s", (GIN_INDEX,)).fetchone()[0]
        settings = dict(self.conn.execute(DESCRIBED_SETTINGS).fetchall())
        return {"table": CREATE_TABLE, "index": indexdef, "index_options": options or [], "settings": settings}

    # --- writes -------------------------------------------------------------------------------
    def rewrite(self, doc_id: int, body: str) -> None:
        """DELETE and INSERT of the same row in one transaction (committed as every write here):
        a new heap tuple and new index entries (GIN: into its pending list while fastupdate is
        on), the old version dead until VACUUM — an UPDATE that changes no indexed value may be
        HOT and never touch the index."""
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(f"DELETE FROM {self.table} WHERE id = %s", (int(doc_id),))
            cur.execute(f"INSERT INTO {self.table} (id, body) VALUES (%s, %s)", (int(doc_id), body))

    def write_state(self) -> dict[str, Any]:
        """Live and dead tuples, the tuples ever deleted (their difference between two readings:
        the versions made dead in between), (auto)vacuum and autoanalyze counts from the statistics
        views, the text index's size, and GIN's pending-list pages (GIN only)."""
        row = self.conn.execute(
            "SELECT n_live_tup, n_dead_tup, n_tup_del, autovacuum_count, vacuum_count, autoanalyze_count, "
            "pg_relation_size(%s) FROM pg_stat_user_tables WHERE relid = to_regclass(%s)",
            (self.index, self.table)).fetchone()
        keys = ("live_versions", "dead_versions", "deleted_total", "autovacuum_count", "vacuum_count",
                "autoanalyze_count", "index_bytes")
        found = dict(zip(keys, (int(v) if v is not None else None for v in row), strict=True)) if row else {}
        return {**found, "gin_pending_pages": self.gin_pending() if self.index == GIN_INDEX else None}

    cleanup_kind = "VACUUM (INDEX_CLEANUP ON): dead tuples and their index entries removed, nothing compacted"

    def cleanup(self) -> dict[str, Any]:
        """VACUUM of the table with index cleanup forced (``auto`` may skip the indexes when few
        pages hold dead tuples): dead tuples and their index entries removed, GIN's pending list
        merged into the index; nothing is compacted."""
        self.conn.execute(f"VACUUM (INDEX_CLEANUP ON) {self.table}")
        return {}

    # --- queries ------------------------------------------------------------------------------
    def count(self, a: str, b: str) -> int:
        return self.conn.execute(COUNT_SQL, (pg_terms(a, b),)).fetchone()[0]

    def search(self, a: str, b: str) -> tuple[list[int], None]:
        return [row[0] for row in self.conn.execute(self.sql, (pg_terms(a, b),))], None

    def prepare_stream(self, pairs: list[tuple[str, str]]) -> None:
        self.cursor = self.conn.cursor()
        self.stream_sql = self.sql
        self.stream_params = [(pg_terms(a, b),) for a, b in pairs]

    def stream_hits(self, i: int) -> int:
        """The prepared statement (psycopg prepares it on this connection's first execution)."""
        self.cursor.execute(self.stream_sql, self.stream_params[i], prepare=True)
        return len(self.cursor.fetchall())
