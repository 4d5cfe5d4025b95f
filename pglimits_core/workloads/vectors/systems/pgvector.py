"""pgvector: table ``vectors_items(id int4 primary key, tag int2, embedding vector(dim))``, loaded by binary
``COPY`` through pgvector-python's psycopg adapter, then ``CREATE INDEX ... USING hnsw (embedding
vector_ip_ops) WITH (m, ef_construction)``; queried with ``ORDER BY embedding <#> %b LIMIT k``
(the vector sent in binary, prepared) after ``SET hnsw.ef_search``.

The filter attribute is a real column, ``tag = id % 100`` (the value Qdrant's payload ``tag``
holds, so ``tag < p`` keeps the same vectors in both), with a B-tree built in the load (as
Qdrant's payload index is) and planner statistics from the ``VACUUM ANALYZE`` after the build:
the planner chooses between the vector index with a filter and the B-tree with a sort, and each
query point records the plan it took.

Options: ``exact`` (the same statement with index scans off: a sequential scan with a top-k
sort, a perfect answer whose cost is what the index saves); ``server`` (``postgres``: PG 16 with
pgvector 0.6.2, the default; ``postgres_ext``: PG 17 with pgvector 0.8.2, the same index and
query, so the version effect is apart from the engine's); ``iterative_scan`` (pgvector >= 0.8's
``hnsw.iterative_scan``: a filtered HNSW scan goes on until ``k`` rows pass the filter). The
table comment holds the index's tag, so a sweep point finds the index of its dataset already there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.vectors.systems.base import FILTER_BUCKETS, VectorSystem

TABLE = "vectors_items"
INDEX = "vectors_items_hnsw"
COPY_ROWS = 2_000
OUT_OF_MEMORY_NOTICE = "no longer fits into maintenance_work_mem"
BUILD_SETTINGS = ("maintenance_work_mem", "max_parallel_maintenance_workers", "max_parallel_workers",
                  "max_worker_processes", "shared_buffers")
#: the settings that shape a filtered HNSW scan on pgvector >= 0.8 (recorded with each plan)
ITERATIVE_SETTINGS = ("hnsw.iterative_scan", "hnsw.max_scan_tuples", "hnsw.scan_mem_multiplier")


def query_sql(k: int, below: int | None = None, table: str = TABLE) -> str:
    """The nearest-neighbour statement; with ``below``, filtered by ``tag < below`` on the
    table's tag column (B-tree, statistics): the planner picks the vector index with a filter
    (pgvector 0.6.2, and 0.8 without the iterative scan, filter at most ef_search rows, so a
    selective filter returns fewer) or the B-tree with a sort (exact over the filtered rows)."""
    where = f"WHERE tag < {int(below)} " if below is not None else ""
    return f"SELECT id FROM {table} {where}ORDER BY embedding <#> %b LIMIT {int(k)}"


def plan_path(plan: str, index: str, tag_index: str) -> str:
    """What an EXPLAIN says served the query, in a few words."""
    if index in plan:
        return "vector index scan" + (" + filter" if "Filter:" in plan else "")
    if tag_index in plan:
        return "tag B-tree + top-k sort"
    return "sequential scan + top-k sort" if "Seq Scan" in plan else "other (see plan)"


class PgvectorSystem(VectorSystem):
    system = "pgvector"
    query_client = "psycopg 3, binary vector parameter (%b), prepared"
    table, index_name, method = TABLE, INDEX, "hnsw"
    extensions = ("vector",)

    def __init__(self, endpoint: Any, index: Any, label: str = "", **options: Any):
        super().__init__(endpoint, index, label, **options)
        self.exact = bool(options.get("exact", False))
        self.iterative_scan = options.get("iterative_scan")
        self.notices: list[str] = []
        self.inserted = 0

    @property
    def tag_index(self) -> str:
        return f"{self.table}_tag"

    @property
    def table_tag(self) -> str:
        """What the table comment says: the dataset and the index parameters."""
        return self.index.tag

    def open(self) -> None:
        import psycopg
        from pgvector.psycopg import register_vector

        self.conn = psycopg.connect(self.endpoint.url, autocommit=True)
        register_vector(self.conn)

    def close(self) -> None:
        self.conn.close()

    # --- build --------------------------------------------------------------------------
    def reset(self, dim: int) -> None:
        # a build that outgrows maintenance_work_mem says so only in a notice
        self.notices = []
        self.conn.add_notice_handler(lambda diag: self.notices.append(diag.message_primary or ""))
        self.conn.execute(f"DROP TABLE IF EXISTS {self.table}")
        # the primary key an application's table has: a rewrite (writes while querying) finds its row by it
        self.conn.execute(f"CREATE TABLE {self.table} (id int4 PRIMARY KEY, tag int2 NOT NULL, "
                          f"embedding vector({int(dim)}) NOT NULL)")

    def insert(self, base: np.ndarray) -> None:
        """COPY every row (``tag = id % 100``), then the tag's B-tree (Qdrant's load builds its
        payload index too)."""
        with self.conn.cursor() as cur, cur.copy(f"COPY {self.table} (id, tag, embedding) FROM STDIN "
                                                 "WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "int2", "vector"])
            for start in range(0, len(base), COPY_ROWS):
                rows = np.asarray(base[start:start + COPY_ROWS], dtype=np.float32)
                for offset, vector in enumerate(rows):
                    copy.write_row((start + offset, (start + offset) % FILTER_BUCKETS, vector))
        self.conn.execute(f"CREATE INDEX {self.tag_index} ON {self.table} (tag)")
        self.inserted = len(base)

    def build(self) -> None:
        self.conn.execute(f"CREATE INDEX {self.index_name} ON {self.table} USING hnsw (embedding vector_ip_ops) "
                          f"WITH (m = {int(self.index.m)}, ef_construction = {int(self.index.ef_construction)})")

    def settings(self, names: tuple[str, ...]) -> dict[str, str]:
        return {name: self.conn.execute(f"SHOW {name}").fetchone()[0] for name in names}

    def versions(self) -> dict[str, str]:
        """The server's and the extensions' versions (recorded with every build and query point)."""
        found = dict(self.conn.execute("SELECT extname, extversion FROM pg_extension WHERE extname = ANY(%s)",
                                       (list(self.extensions),)).fetchall())
        return {"server_version": self.conn.execute("SHOW server_version").fetchone()[0],
                **{f"{name}_version": found.get(name) for name in self.extensions}}

    def settle(self) -> dict[str, Any]:
        """VACUUM ANALYZE (visibility map set, planner statistics, the tag's too), the tag as the
        table comment; sizes, rows, the versions and every setting that shapes the build."""
        settings = self.settings(BUILD_SETTINGS)
        self.conn.execute(f"VACUUM ANALYZE {self.table}")
        self.conn.execute(f"COMMENT ON TABLE {self.table} IS '{self.table_tag}'")
        sizes = self.conn.execute("SELECT pg_relation_size(%s), pg_table_size(%s), count(*), pg_relation_size(%s) "
                                  f"FROM {self.table}", (self.index_name, self.table, self.tag_index)).fetchone()
        if sizes[2] != self.inserted:
            raise PGLimitsError(f"{self.system} table holds {sizes[2]} rows, the dataset {self.inserted}",
                                "rerun the study; if it repeats, check the server log")
        versions = self.versions()
        return {"index_bytes": int(sizes[0]), "table_bytes": int(sizes[1]), "rows": int(sizes[2]),
                "tag_index_bytes": int(sizes[3]), **versions, "pgvector_version": versions["vector_version"],
                "build_settings": settings,
                "build_spilled": any(OUT_OF_MEMORY_NOTICE in n for n in self.notices), "notices": list(self.notices)}

    def describe(self) -> dict[str, Any]:
        return {"index": {"method": "hnsw", "opclass": "vector_ip_ops", "m": self.index.m,
                          "ef_construction": self.index.ef_construction},
                "filter_attribute": f"column tag int2 = id % {FILTER_BUCKETS}, B-tree, ANALYZE",
                "load_method": "COPY FROM STDIN (FORMAT BINARY), pgvector-python psycopg adapter; "
                               "then the tag's B-tree"}

    def has_index(self, count: int) -> bool:
        """The table's comment names this index and both indexes exist. The filter is a column
        of the same table, so one table serves the plain and the filtered search."""
        row = self.conn.execute("SELECT obj_description(to_regclass(%s), 'pg_class')", (self.table,)).fetchone()
        present = self.conn.execute("SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
                                    (self.index_name, self.tag_index)).fetchone()[0]
        return bool(row and present and row[0] == self.table_tag)

    # --- writes -------------------------------------------------------------------------
    cleanup_kind = "VACUUM (INDEX_CLEANUP ON): dead tuples and their index entries removed, nothing compacted"

    def rewrite(self, ids: list[int], vectors: np.ndarray) -> None:
        """DELETE and INSERT of the same rows in one transaction (committed as every write here,
        ``synchronous_commit`` as configured): each new version is a new heap tuple and a new entry
        in every index, the old one dead until VACUUM — an UPDATE of the vector does the same work,
        but an UPDATE that changes no indexed value may be HOT, which never touches the index."""
        rows = [(int(i), int(i) % FILTER_BUCKETS, np.asarray(vector, dtype=np.float32))
                for i, vector in zip(ids, vectors, strict=True)]
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(f"DELETE FROM {self.table} WHERE id = ANY(%s)", ([row[0] for row in rows],))
            cur.executemany(f"INSERT INTO {self.table} (id, tag, embedding) VALUES (%s, %s, %b)", rows)

    def write_state(self) -> dict[str, Any]:
        """The table's live and dead tuples, the tuples ever deleted (their difference between two
        readings: the versions made dead in between), its (auto)vacuum and autoanalyze counts from
        the statistics views (flushed by each backend at least once a second), and the vector
        index's size on disk."""
        row = self.conn.execute(
            "SELECT n_live_tup, n_dead_tup, n_tup_del, autovacuum_count, vacuum_count, autoanalyze_count, "
            "pg_relation_size(%s), pg_table_size(relid) FROM pg_stat_user_tables WHERE relid = to_regclass(%s)",
            (self.index_name, self.table)).fetchone()
        keys = ("live_versions", "dead_versions", "deleted_total", "autovacuum_count", "vacuum_count",
                "autoanalyze_count", "index_bytes", "table_bytes")
        return dict(zip(keys, (int(v) if v is not None else None for v in row), strict=True)) if row else {}

    def cleanup(self) -> dict[str, Any]:
        """VACUUM of the table with index cleanup forced (``auto`` may skip the indexes when few
        pages hold dead tuples): dead heap tuples removed and the vector index's entries for them
        (pgvector repairs the graph's links around each removed element); nothing is compacted."""
        self.conn.execute(f"VACUUM (INDEX_CLEANUP ON) {self.table}")
        return {}

    # --- search -------------------------------------------------------------------------
    def set_search_params(self, ef: int | None, k: int, below: int | None = None) -> None:
        """The exact variant (or ``ef`` None) turns index scans off, so the planner must sort
        every row; otherwise the index's search knob at ef (and the iterative scan, if asked)."""
        super().set_search_params(ef, k, below)
        if self.exact or ef is None:
            self.conn.execute("SET enable_indexscan = off")
            self.conn.execute("SET enable_bitmapscan = off")
        else:
            self.set_knob(int(ef))
        self.sql = query_sql(k, below, self.table)
        self.cursor = self.conn.cursor()

    def set_knob(self, ef: int) -> None:
        self.conn.execute(f"SET hnsw.ef_search = {ef}")
        if self.iterative_scan is not None:  # pgvector < 0.8 has no such setting: the SET fails, saying so
            self.conn.execute(f"SET hnsw.iterative_scan = {self.iterative_scan}")

    def search_settings(self) -> dict[str, str]:
        names = ("hnsw.ef_search",) + (ITERATIVE_SETTINGS if self.iterative_scan is not None else ())
        return self.settings(names)

    def prepare(self, queries: np.ndarray) -> list[Any]:
        return list(np.asarray(queries, dtype=np.float32))

    def search(self, request: Any) -> list[int]:
        return [row[0] for row in self.cursor.execute(self.sql, (request,), prepare=True).fetchall()]

    def search_plan(self, query: np.ndarray) -> dict[str, Any]:
        """EXPLAIN of one query, the path it names, the search settings and the versions. An
        unfiltered query must use the vector index (the exact variant: must not); a filtered one
        takes the planner's choice, recorded."""
        rows = self.conn.execute("EXPLAIN " + self.sql, (np.asarray(query, dtype=np.float32),)).fetchall()
        plan = "\n".join(r[0] for r in rows)
        uses_index = self.index_name in plan
        if (self.below is None or self.exact) and uses_index == self.exact:
            raise PGLimitsError(f"{self.label} at ef={self.ef}: the plan {'uses' if uses_index else 'does not use'} "
                                f"the {self.method} index", "check the planner settings recorded in the plan")
        settings = {} if self.exact or self.ef is None else self.search_settings()
        return {"plan": plan, "plan_path": plan_path(plan, self.index_name, self.tag_index),
                "search_settings": settings, "versions": self.versions()}
