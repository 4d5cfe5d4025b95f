"""Search's footprint cells (``experiments.footprint_cells``): Postgres's GIN design against
OpenSearch (the engine the capacity cells face) at the same corpus.

- On disk after the load: everything each keeps — Postgres's table (the documents' text and
  their ``tsvector``) and its GIN index; OpenSearch's index (its stored ``_source`` and the
  inverted index), from the load table.
- Memory at the end of a steady query run: the server's PSS after the writes experiment's
  lowest-rate point, cleaned up; each side runs from its PSS to its PSS plus its files.
  OpenSearch's PSS is mostly the JVM heap this study sets and pre-touches, a setting rather than
  a measure of what the engine needs at this corpus: shown, never judged.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pglimits_core.analysis.decision import Cell, usable
from pglimits_core.experiments.footprint_cells import Footprint, footprint_cell, memory_cell

POSTGRES, ENGINE = "pg_gin", "opensearch"
POSTGRES_VARIANT = "pg_gin ranked"
ON_DISK = "table + index MiB (all on disk)"


def footprint_decisions(tables: dict[str, Any]) -> list[Cell]:
    """The on-disk cell and the memory cell; none without a load table naming both systems."""
    load = tables.get("load")
    if not usable(load, "system", "documents", ON_DISK):
        return []
    loads = load.drop_duplicates("system").set_index("system")
    if POSTGRES not in loads.index or ENGINE not in loads.index:
        return []
    scale = f"footprint, {loads.loc[POSTGRES, 'documents']:,.0f} documents"
    files = {system: _number(loads.loc[system, ON_DISK]) for system in (POSTGRES, ENGINE)}
    disk_cell = footprint_cell("search", scale, "on disk after the load (Postgres: table with its tsvector + GIN "
                               "index; OpenSearch: its index, _source included)", Footprint(POSTGRES, files[POSTGRES]),
                               Footprint(ENGINE, files[ENGINE]), "load")
    heap = loads.loc[ENGINE].get("JVM heap")
    unjudged = (f"OpenSearch's PSS is mostly the JVM heap this study sets ({heap or 'its heap'}, pre-touched), "
                "not what the engine needs at this corpus")
    return [disk_cell, memory_cell("search", scale, tables.get("writes"), (POSTGRES_VARIANT, ENGINE),
                                   (files[POSTGRES], files[ENGINE]), "load",
                                   unjudged=unjudged)]


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)
