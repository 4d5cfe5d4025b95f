"""Search's cells of the decision matrix: per match-set decade of the crossover table, Postgres GIN
with ranking (the same work a Lucene engine does) against the faster Lucene engine, both flat out
at the same client count."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.decision import Cell, ratio_range, usable
from pglimits_core.analysis.verdict import Side
from pglimits_core.workloads.search.systems.registry import SERVER_FOR

COLUMNS = ("variant", "system", "stream", "clients", "median_matches", "qps", "min_qps", "max_qps",
           "client_bound", "server_cpu_pct")


def decisions(tables: dict[str, pd.DataFrame]) -> list[Cell]:
    crossover = tables.get("crossover")
    if not usable(crossover, *COLUMNS):
        return []
    ranked = crossover["variant"].astype(str).str.split().str[-1] == "ranked"
    on_postgres = crossover["system"].map(SERVER_FOR) == "postgres"
    cells = []
    for (stream, clients), rows in crossover.groupby(["stream", "clients"], sort=False):
        pg = _fastest(rows[ranked.loc[rows.index] & on_postgres.loc[rows.index]])
        lucene = _fastest(rows[~on_postgres.loc[rows.index]])
        cells.append(_cell(stream, clients, pg, lucene))
    return cells


def _fastest(rows: pd.DataFrame) -> pd.Series | None:
    rows = rows.dropna(subset=["qps"])
    return None if rows.empty else rows.loc[rows["qps"].idxmax()]


def _side(row: pd.Series | None) -> Side | None:
    if row is None:
        return None
    # server CPU (% of one core) over queries/s: the server's µs per query
    cpu = row["server_cpu_pct"] / 100 * 1e6 / row["qps"] if pd.notna(row["server_cpu_pct"]) and row["qps"] else None
    bound = row["client_bound"]
    return Side(str(row["variant"]), float(row["qps"]), client_bound=None if pd.isna(bound) else bool(bound),
                server_cpu_us_per_op=cpu, value_range=(float(row["min_qps"]), float(row["max_qps"])))


def _cell(stream: str, clients, pg: pd.Series | None, lucene: pd.Series | None) -> Cell:
    matches = next((r["median_matches"] for r in (pg, lucene) if r is not None), float("nan"))
    spread = "" if pg is None or lucene is None else \
        ratio_range(pg["min_qps"], pg["max_qps"], lucene["min_qps"], lucene["max_qps"])
    return Cell("search", f"match set {stream} (median {matches:,.0f} matches), {clients} clients",
                "none (closed loop, flat out)", _side(pg), _side(lucene), "crossover", unit="QPS", spread=spread,
                missing="Postgres GIN ranked not measured here" if pg is None else "no Lucene engine measured here")
