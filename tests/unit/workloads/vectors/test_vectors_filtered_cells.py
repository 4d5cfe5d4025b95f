"""The filtered-search cells: a side reaching no recall ≥ 0.90 at any ef it ran loses the cell to
one that does, whatever its windows; where both reach it, one client's short runs decide no rate
(rows canned from the committed AMD EPYC filtered table)."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.decision import (
    DEDICATED_WINS,
    NEITHER_MEETS,
    NOT_DECIDED,
    POSTGRES_AHEAD,
    row,
    words,
)
from pglimits_core.workloads.vectors.decision import server_of
from pglimits_core.workloads.vectors.filtered_cells import filtered_cells

ROWS = [  # variant, selectivity %, ef, QPS, recall
    ("pgvector hnsw", 1, 40, 870.0, 0.044), ("pgvector hnsw", 1, 200, 334.7, 0.189),
    ("pgvector hnsw", 10, 40, 858.7, 0.388), ("pgvector hnsw", 10, 200, 344.7, 0.987),
    ("pgvector 0.8 hnsw iterative", 1, 40, 131.3, 0.961), ("pgvector 0.8 hnsw iterative", 1, 200, 123.3, 0.963),
    ("qdrant hnsw", 1, 40, 1372.7, 1.0), ("qdrant hnsw", 1, 200, 1042.7, 1.0),
    ("qdrant hnsw", 10, 40, 440.7, 1.0), ("qdrant hnsw", 10, 200, 264.7, 1.0),
]


def tables(rows=ROWS):
    return {"filtered": pd.DataFrame(rows, columns=["variant", "selectivity_pct", "ef", "qps", "recall_mean"])}


def cells(postgres_servers=("postgres",), rows=ROWS):
    return {cell.scale: cell for cell in filtered_cells(tables(rows), server_of, postgres_servers)}


def test_postgres_reaching_no_recall_at_the_efs_run_loses_to_a_side_that_does_whatever_the_windows():
    cell = cells()["filtered search, 1 % of the vectors pass the filter"]
    assert words(cell) == DEDICATED_WINS and cell.by_recall
    assert cell.target == "recall ≥ 0.90 at an ef run (40, 200; 1 client)"
    shown = row(cell)
    assert shown["postgres_figure"] == "recall at most 0.189 (ef 200, 335 QPS): below the target"
    assert shown["dedicated_figure"] == "1,373 QPS at recall 1.000" and shown["dedicated"] == "qdrant hnsw ef=40"
    assert shown["class"] == "reaching the recall target" and shown["margin"] == "the recall decides (see the figures)"


def test_both_reaching_the_recall_leaves_the_rate_undecided_on_short_single_runs():
    cell = cells()["filtered search, 10 % of the vectors pass the filter"]
    assert words(cell).startswith(f"{NOT_DECIDED}: both reach the recall")
    assert row(cell)["postgres_figure"] == "345 QPS at recall 0.987"


def test_with_the_extensions_the_iterative_scan_reaches_the_recall_at_one_percent():
    cell = cells(("postgres", "postgres_ext"))["filtered search, 1 % of the vectors pass the filter"]
    assert words(cell).startswith(f"{NOT_DECIDED}: both reach the recall")
    assert row(cell)["postgres"] == "pgvector 0.8 hnsw iterative ef=40"


def test_only_postgres_reaching_or_neither_reaching_is_said_so():
    only_pg = [r for r in ROWS if r[0] != "qdrant hnsw"] + [("qdrant hnsw", 10, 40, 440.7, 0.5)]
    assert words(cells(rows=only_pg)["filtered search, 10 % of the vectors pass the filter"]) == POSTGRES_AHEAD
    neither = [r for r in ROWS if r[1] == 1 and r[0] == "pgvector hnsw"] + [("qdrant hnsw", 1, 40, 1372.7, 0.8)]
    assert words(cells(rows=neither)["filtered search, 1 % of the vectors pass the filter"]) == NEITHER_MEETS


def test_a_side_not_run_at_a_selectivity_is_named():
    no_qdrant = [r for r in ROWS if r[0] != "qdrant hnsw"]
    cell = cells(rows=no_qdrant)["filtered search, 1 % of the vectors pass the filter"]
    assert words(cell) == f"{NOT_DECIDED}: Qdrant's filtered search was not run"
    assert filtered_cells({}, server_of, ("postgres",)) == []
