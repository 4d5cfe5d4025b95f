"""pgvectorscale's StreamingDiskANN on PostgreSQL 17 (the ``postgres_ext`` server): the pgvector
table of its own (``vectors_items_diskann``: id, tag, embedding, the same binary COPY and the
tag's B-tree), indexed ``USING diskann (embedding vector_ip_ops)`` — pgvectorscale 0.9 has an
inner-product operator class (``vector_ip_ops``; with the default ``memory_optimized`` layout
only, its README says plain storage does not take it), so the query is pgvector's own
``ORDER BY embedding <#> %b LIMIT k`` and no normalisation argument is needed.

The build parameters are written out, so a changed default cannot change the build unnoticed:
``storage_layout = memory_optimized`` (SBQ: the graph holds 2 bits per dimension below 900
dimensions; the full vectors stay in the table), ``max_alpha = 1.2`` and
``num_bits_per_dimension = 2`` (pgvectorscale 0.9's defaults), and the graph's degree and build
search list matched to the HNSW builds beside it: ``num_neighbors = 32`` (HNSW's m = 16 keeps
2m = 32 links per node in its base layer) and ``search_list_size = 64`` (HNSW's ef_construction
= 64). pgvectorscale's defaults (50 and 100) build a denser graph with more effort: 1,456 s for
the 200k × 384 dataset on a 2-vCPU box, a fifth of the full study's time budget.

The search knob swept as "ef": ``diskann.query_search_list_size = ef`` (the graph search's
candidate list, as HNSW's ef is) and ``diskann.query_rescore = ef`` (every one of those
candidates re-ranked on its full vector, as HNSW ranks its ef candidates exactly). Its own table,
so it and pgvector 0.8's HNSW table live side by side on the one server (a planner choosing
between two vector indexes on one column would measure the planner).
"""

from __future__ import annotations

from typing import Any

from pglimits_core.workloads.vectors.systems.pgvector import FILTER_BUCKETS, PgvectorSystem

#: the build, written out: degree and build list matched to HNSW's m / ef_construction (see the module)
BUILD_PARAMS = {"storage_layout": "memory_optimized", "num_neighbors": 32, "search_list_size": 64,
                "max_alpha": 1.2, "num_bits_per_dimension": 2}
DISKANN_SETTINGS = ("diskann.min_vectors_for_parallel_build", "diskann.force_parallel_workers")
#: the build's parallel workers: pgvectorscale's leader waits while its workers build (seen in the
#: full run: its one worker at 100 % of a core for 11 min, the leader at 0.5 %), where pgvector's
#: leader builds beside its worker; so on a 2-vCPU box two workers, not one, use both cores
BUILD_WORKERS = 2
SEARCH_SETTINGS = ("diskann.query_search_list_size", "diskann.query_rescore")


class PgvectorscaleSystem(PgvectorSystem):
    system = "pgvectorscale"
    table, index_name, method = "vectors_items_diskann", "vectors_items_diskann_idx", "diskann"
    extensions = ("vector", "vectorscale")

    @property
    def table_tag(self) -> str:
        """The dataset (the HNSW tag's m / ef_construction do not shape this index) and the build."""
        params = "-".join(f"{key}{value}" for key, value in BUILD_PARAMS.items())
        return f"{self.index.tag}-diskann-{params}"

    def build(self) -> None:
        # this connection only (the server's setting stays for the other indexes); settle()
        # records it with the build's other settings
        self.conn.execute(f"SET max_parallel_maintenance_workers = {BUILD_WORKERS}")
        with_ = ", ".join(f"{key} = {value}" for key, value in BUILD_PARAMS.items())
        self.conn.execute(f"CREATE INDEX {self.index_name} ON {self.table} USING diskann (embedding vector_ip_ops) "
                          f"WITH ({with_})")

    def settle(self) -> dict[str, Any]:
        """pgvector's account of the table, with the DiskANN settings (its library is loaded by
        now, so its settings exist) and the index's reloptions read back."""
        settled = super().settle()
        settled["build_settings"] = {**settled["build_settings"], **self.settings(DISKANN_SETTINGS)}
        options = self.conn.execute("SELECT reloptions FROM pg_class WHERE oid = to_regclass(%s)",
                                    (self.index_name,)).fetchone()
        return {**settled, "index_reloptions": list(options[0] or []) if options else None}

    def describe(self) -> dict[str, Any]:
        return {"index": {"method": "diskann", "opclass": "vector_ip_ops", **BUILD_PARAMS},
                "search_knob": "ef = diskann.query_search_list_size = diskann.query_rescore",
                "filter_attribute": f"column tag int2 = id % {FILTER_BUCKETS}, B-tree, ANALYZE",
                "load_method": "COPY FROM STDIN (FORMAT BINARY), pgvector-python psycopg adapter; "
                               "then the tag's B-tree"}

    def set_knob(self, ef: int) -> None:
        self.conn.execute(f"SET diskann.query_search_list_size = {ef}")
        self.conn.execute(f"SET diskann.query_rescore = {ef}")

    def search_settings(self) -> dict[str, str]:
        return self.settings(SEARCH_SETTINGS)
