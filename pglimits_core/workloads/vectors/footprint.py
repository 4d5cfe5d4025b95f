"""Vectors' footprint cells (``experiments.footprint_cells``): pgvector HNSW on PostgreSQL 16
against Qdrant's HNSW at the same vectors.

- On disk after the build: Postgres's table and its HNSW index (the index holds the vectors
  again, so both count) against Qdrant's segments (vectors + graph; its WAL apart), from the
  build table.
- Memory at the end of a steady query run: the server's PSS read after the writes experiment's
  lowest-rate point (its queries, its writes and its cleanup done: the index warm, the dead
  versions gone); each side runs from its PSS to its PSS plus its files.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pglimits_core.analysis.decision import Cell, usable
from pglimits_core.experiments.footprint_cells import Footprint, footprint_cell, memory_cell

POSTGRES, QDRANT = "pgvector hnsw", "qdrant hnsw"


def footprint_decisions(tables: dict[str, Any]) -> list[Cell]:
    """The on-disk cell and the memory cell; none without a build table naming both engines."""
    build = tables.get("build")
    if not usable(build, "variant", "index_mib", "rows"):
        return []
    builds = build.drop_duplicates("variant").set_index("variant")
    if POSTGRES not in builds.index or QDRANT not in builds.index:
        return []
    scale = f"footprint, {builds.loc[POSTGRES, 'rows']:,.0f} vectors"
    on_disk = {POSTGRES: _sum(builds.loc[POSTGRES], "table_mib", "index_mib"), QDRANT: _sum(builds.loc[QDRANT], "index_mib")}
    disk_cell = footprint_cell("vectors", scale, "on disk after the build (Postgres: table + HNSW index; Qdrant: its "
                               "segments, WAL apart)", Footprint(POSTGRES, on_disk[POSTGRES]),
                               Footprint(QDRANT, on_disk[QDRANT]), "build")
    return [disk_cell, memory_cell("vectors", scale, tables.get("writes"), (POSTGRES, QDRANT),
                                   (on_disk[POSTGRES], on_disk[QDRANT]), "build")]


def _sum(row: pd.Series, *columns: str) -> float | None:
    values = [row.get(column) for column in columns]
    return None if any(v is None or pd.isna(v) for v in values) else float(sum(values))
