"""Vectors' cells of the decision matrix: per recall target of the matched table (and client
count), the fastest Postgres index that reaches the recall against the fastest Qdrant one, with
each point's client-bound verdict from the sweep table (the rule decides on QPS when both are
server-side) and the server's CPU per query."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.decision import Cell, usable
from pglimits_core.analysis.verdict import Side
from pglimits_core.workloads.vectors.systems.registry import SERVER_FOR

COLUMNS = ("target_recall", "clients", "variant", "recall_mean", "qps", "qps_min", "qps_max", "server_cpu_ms_per_query")


def server_of(variant: str) -> str:
    return SERVER_FOR.get(str(variant).split()[0], "")


def decisions(tables: dict[str, pd.DataFrame]) -> list[Cell]:
    matched, sweep = tables.get("matched"), tables.get("sweep")
    if not usable(matched, *COLUMNS):
        return []
    if usable(sweep, "variant", "ef", "clients", "client_bound"):
        matched = matched.merge(sweep[["variant", "ef", "clients", "client_bound"]], how="left",
                                on=["variant", "ef", "clients"])
    cells = []
    for (target, clients), rows in matched.groupby(["target_recall", "clients"], sort=True):
        reached = rows[rows["recall_mean"] >= target].dropna(subset=["qps"])
        servers = reached["variant"].map(server_of)
        pg = _fastest(reached[servers == "postgres"])
        qdrant = _fastest(reached[servers == "qdrant"])
        cells.append(Cell("vectors", f"{clients} client{'s' if clients != 1 else ''}", f"recall ≥ {target:.2f}",
                          _side(pg), _side(qdrant), "matched", unit="QPS", figures=(_text(pg), _text(qdrant)),
                          postgres_meets=pg is not None,
                          missing="no Postgres index reached the recall" if pg is None
                          else "no Qdrant index reached the recall"))
    return cells


def _fastest(rows: pd.DataFrame) -> pd.Series | None:
    return None if rows.empty else rows.loc[rows["qps"].idxmax()]


def _side(row: pd.Series | None) -> Side | None:
    if row is None:
        return None
    cpu, bound = row["server_cpu_ms_per_query"], row.get("client_bound")
    return Side(str(row["variant"]), float(row["qps"]), client_bound=None if pd.isna(bound) else bool(bound),
                server_cpu_us_per_op=None if pd.isna(cpu) else cpu * 1000,
                value_range=(float(row["qps_min"]), float(row["qps_max"])))


def _text(row: pd.Series | None) -> str:
    if row is None:
        return "—"
    ef = "" if pd.isna(row.get("ef")) else f", ef {row['ef']:.0f}"
    return f"{row['qps']:,.0f} QPS (recall {row['recall_mean']:.3f}{ef})"
