"""pgvector: table ``vectors_items(id int4, embedding vector(dim))``, loaded by binary ``COPY``
through pgvector-python's psycopg adapter, then ``CREATE INDEX ... USING hnsw (embedding
vector_ip_ops) WITH (m, ef_construction)``; queried with ``ORDER BY embedding <#> %b LIMIT k``
(the vector sent in binary, prepared) after ``SET hnsw.ef_search``.

Option ``exact``: the same statement with index scans off, a sequential scan with a top-k sort
(a perfect answer; its cost is what the index saves). The table comment holds the index's tag,
so a sweep point finds the index of its dataset already there.
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


def query_sql(k: int, below: int | None = None) -> str:
    """The nearest-neighbour statement; with ``below``, filtered by ``tag < below`` where the tag
    is computed from the id (``mod(id, 100)``): pgvector 0.6.2 applies a WHERE clause to the rows
    its HNSW scan returns (at most ef_search of them), so a selective filter returns fewer rows."""
    where = f"WHERE mod(id, {FILTER_BUCKETS}) < {int(below)} " if below is not None else ""
    return f"SELECT id FROM {TABLE} {where}ORDER BY embedding <#> %b LIMIT {int(k)}"


class PgvectorSystem(VectorSystem):
    system = "pgvector"
    query_client = "psycopg 3, binary vector parameter (%b), prepared"

    def __init__(self, endpoint: Any, index: Any, label: str = "", **options: Any):
        super().__init__(endpoint, index, label, **options)
        self.exact = bool(options.get("exact", False))
        self.notices: list[str] = []
        self.inserted = 0

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
        self.conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        self.conn.execute(f"CREATE TABLE {TABLE} (id int4 NOT NULL, embedding vector({int(dim)}) NOT NULL)")

    def insert(self, base: np.ndarray) -> None:
        with self.conn.cursor() as cur, cur.copy(f"COPY {TABLE} (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "vector"])
            for start in range(0, len(base), COPY_ROWS):
                rows = np.asarray(base[start:start + COPY_ROWS], dtype=np.float32)
                for offset, vector in enumerate(rows):
                    copy.write_row((start + offset, vector))
        self.inserted = len(base)

    def build(self) -> None:
        self.conn.execute(f"CREATE INDEX {INDEX} ON {TABLE} USING hnsw (embedding vector_ip_ops) "
                          f"WITH (m = {int(self.index.m)}, ef_construction = {int(self.index.ef_construction)})")

    def settle(self) -> dict[str, Any]:
        """VACUUM ANALYZE (visibility map set, planner statistics), the tag as the table comment;
        sizes, rows, the pgvector version and every setting that shapes the build."""
        settings = {name: self.conn.execute(f"SHOW {name}").fetchone()[0] for name in BUILD_SETTINGS}
        self.conn.execute(f"VACUUM ANALYZE {TABLE}")
        self.conn.execute(f"COMMENT ON TABLE {TABLE} IS '{self.index.tag}'")
        sizes = self.conn.execute("SELECT pg_relation_size(%s), pg_table_size(%s), count(*) FROM "
                                  f"{TABLE}", (INDEX, TABLE)).fetchone()
        version = self.conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        if sizes[2] != self.inserted:
            raise PGLimitsError(f"pgvector table holds {sizes[2]} rows, the dataset {self.inserted}",
                                "rerun the study; if it repeats, check the server log")
        return {"index_bytes": int(sizes[0]), "table_bytes": int(sizes[1]), "rows": int(sizes[2]),
                "pgvector_version": version, "build_settings": settings,
                "build_spilled": any(OUT_OF_MEMORY_NOTICE in n for n in self.notices), "notices": list(self.notices)}

    def describe(self) -> dict[str, Any]:
        return {"index": {"method": "hnsw", "opclass": "vector_ip_ops", "m": self.index.m,
                          "ef_construction": self.index.ef_construction},
                "load_method": "COPY FROM STDIN (FORMAT BINARY), pgvector-python psycopg adapter"}

    def has_index(self, count: int) -> bool:
        """The table's comment names this index and the index exists. The filter is computed
        from the id, so one table serves the plain and the filtered search."""
        row = self.conn.execute("SELECT obj_description(to_regclass(%s), 'pg_class')", (TABLE,)).fetchone()
        present = self.conn.execute("SELECT to_regclass(%s) IS NOT NULL", (INDEX,)).fetchone()[0]
        return bool(row and present and row[0] == self.index.tag)

    # --- search -------------------------------------------------------------------------
    def set_search_params(self, ef: int | None, k: int, below: int | None = None) -> None:
        """The exact variant (or ``ef`` None) turns index scans off, so the planner must sort
        every row; otherwise ``hnsw.ef_search`` = ef."""
        super().set_search_params(ef, k, below)
        if self.exact or ef is None:
            self.conn.execute("SET enable_indexscan = off")
            self.conn.execute("SET enable_bitmapscan = off")
        else:
            self.conn.execute(f"SET hnsw.ef_search = {int(ef)}")
        self.sql = query_sql(k, below)
        self.cursor = self.conn.cursor()

    def prepare(self, queries: np.ndarray) -> list[Any]:
        return list(np.asarray(queries, dtype=np.float32))

    def search(self, request: Any) -> list[int]:
        return [row[0] for row in self.cursor.execute(self.sql, (request,), prepare=True).fetchall()]

    def search_plan(self, query: np.ndarray) -> dict[str, Any]:
        """EXPLAIN of one query: proof the HNSW index (or, exact, the sort) served it."""
        rows = self.conn.execute("EXPLAIN " + self.sql, (np.asarray(query, dtype=np.float32),)).fetchall()
        plan = "\n".join(r[0] for r in rows)
        uses_index = INDEX in plan
        if uses_index == self.exact:
            raise PGLimitsError(f"{self.label} at ef={self.ef}: the plan {'uses' if uses_index else 'does not use'} "
                                "the HNSW index", "check the planner settings recorded in the plan")
        return {"plan": plan}
