"""The ranking quality beside the search cells' speed: each side's top 10 against exact BM25's.

The two sides do not do the same work: ranked GIN orders every match by ``ts_rank``, the engines
score BM25 and skip what cannot enter the top 10. A speed cell is read with what each side
returned, so each side's figure carries its mean overlap@10 with exact BM25 over the queries of
the cell's stream (the ranking table, ``correctness``): a class stream over its class's queries,
the mixed stream over every class's queries (it interleaves them, each once), weighted by their
counts. Shown beside the speed, it never decides a cell.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

CLASSES = ("frequent", "medium", "rare")
REFERENCE = "exact BM25"
OVERLAP = "mean overlap@10"


def overlap(ranking: pd.DataFrame | None, system: str, stream: str) -> tuple[float, int] | None:
    """``system``'s mean overlap@10 with exact BM25 over ``stream``'s queries, and how many."""
    if ranking is None or ranking.empty or not {"compared", "group", "queries", OVERLAP} <= set(ranking):
        return None
    groups = CLASSES if stream == "mixed" else (stream,)
    rows = ranking[(ranking.compared == f"{system} vs {REFERENCE}") & ranking.group.isin(groups)]
    if set(rows.group) != set(groups):
        return None
    queries = pd.to_numeric(rows.queries, errors="coerce")
    mean = float((pd.to_numeric(rows[OVERLAP], errors="coerce") * queries).sum() / queries.sum())
    return mean, int(queries.sum())


def quality_text(ranking: pd.DataFrame | None, system: str | None, stream: str) -> str:
    found = overlap(ranking, system, stream) if system else None
    return "" if found is None else f"top 10 = exact BM25's {found[0]:.2f} (mean overlap, {found[1]} queries)"


def with_quality(cells: list[Any], ranking: pd.DataFrame | None) -> list[Any]:
    """The search cells, each side's figure followed by its ranking agreement for the cell's stream."""
    found = []
    for cell in cells:
        stream = cell.scale.split(", ")[-1].removesuffix(" stream")
        sides = (cell.postgres, cell.dedicated)
        quality = tuple(quality_text(ranking, side.system if side else None, stream) for side in sides)
        found.append(replace(cell, quality=quality) if any(quality) else cell)
    return found
