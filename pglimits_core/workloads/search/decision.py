"""Search's cells of the decision matrix: per match-set decade of the crossover table, Postgres GIN
with ranking (the same work a Lucene engine does) against the faster Lucene engine, both flat out
at the same client count."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.decision import Cell, ratio_range, usable
from pglimits_core.analysis.verdict import Side
from pglimits_core.workloads.search.head_to_head import is_engine, is_postgres_ranked, side_of

COLUMNS = ("variant", "system", "stream", "clients", "median_matches", "qps", "min_qps", "max_qps",
           "client_bound", "server_cpu_pct")


#: the Postgres extension that ranks as the engines do (BM25), on PostgreSQL 17
EXTENSIONS = ("pg_search",)


def extension_decisions(tables: dict[str, pd.DataFrame]) -> list[Cell]:
    """The cells with pg_search (BM25 inside PostgreSQL 17) among Postgres's side."""
    return decisions(tables, extensions=EXTENSIONS)


def decisions(tables: dict[str, pd.DataFrame], extensions: tuple[str, ...] = ()) -> list[Cell]:
    crossover = tables.get("crossover")
    if not usable(crossover, *COLUMNS):
        return []
    cells = []
    for (stream, clients), rows in crossover.groupby(["stream", "clients"], sort=False):
        on_postgres = rows.apply(is_postgres_ranked, axis=1) | rows["system"].isin(extensions)
        pg = _fastest(rows[on_postgres])
        lucene = _fastest(rows[rows["system"].map(is_engine)])
        cells.append(_cell(stream, clients, pg, lucene))
    return cells


def _fastest(rows: pd.DataFrame) -> pd.Series | None:
    rows = rows.dropna(subset=["qps"])
    return None if rows.empty else rows.loc[rows["qps"].idxmax()]


def _side(row: pd.Series | None) -> Side | None:
    """The same side the crossover table's verdict column judges (``head_to_head.side_of``)."""
    return None if row is None else side_of(row)


def _cell(stream: str, clients, pg: pd.Series | None, lucene: pd.Series | None) -> Cell:
    matches = next((r["median_matches"] for r in (pg, lucene) if r is not None), float("nan"))
    spread = "" if pg is None or lucene is None else \
        ratio_range(pg["min_qps"], pg["max_qps"], lucene["min_qps"], lucene["max_qps"])
    return Cell("search", f"match set {stream} (median {matches:,.0f} matches), {clients} clients",
                "none (closed loop, flat out)", _side(pg), _side(lucene), "crossover", unit="QPS", spread=spread,
                missing="Postgres GIN ranked not measured here" if pg is None else "no Lucene engine measured here")
