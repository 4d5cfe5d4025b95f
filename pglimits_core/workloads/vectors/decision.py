"""Vectors' cells of the decision matrix: per recall target of the matched table (and client
count), the fastest Postgres index that reaches the recall against the fastest Qdrant one, each
side built by ``matched.side`` (the one place a vectors row becomes a ``Side``): its QPS at the
target (the median over the repetitions, each read at the target repetition by repetition; their
lowest and highest are the runs' range the verdict's worst case reads, and the figure says how
many repetitions that is), its client-bound verdict (the matched row's own; older matched tables
take it from the sweep) and the server's CPU per query."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.decision import Cell, usable
from pglimits_core.workloads.vectors.filtered_cells import filtered_cells
from pglimits_core.workloads.vectors.matched import side as _side
from pglimits_core.workloads.vectors.systems.registry import SERVER_FOR

COLUMNS = ("target_recall", "clients", "variant", "recall_mean", "qps", "qps_min", "qps_max")


def server_of(variant: str) -> str:
    """The variant's own server (``pgvector 0.8 hnsw`` runs on postgres_ext, not the PG 16 server
    this matrix compares), else its system's by the label's first word (a label no longer known)."""
    from pglimits_core.workloads.vectors.points import VARIANTS

    known = VARIANTS.get(str(variant))
    return known.server if known is not None else SERVER_FOR.get(str(variant).split()[0], "")


def extension_decisions(tables: dict[str, pd.DataFrame]) -> list[Cell]:
    """The cells with PostgreSQL 17's indexes (pgvector 0.8, DiskANN) among Postgres's side."""
    extended = ("postgres", "postgres_ext")
    return decisions(tables, postgres_servers=extended) + filtered_cells(tables, server_of, extended)


def filtered_decisions(tables: dict[str, pd.DataFrame]) -> list[Cell]:
    """The filtered-search cells, PostgreSQL 16's pgvector against Qdrant."""
    return filtered_cells(tables, server_of, ("postgres",))


def decisions(tables: dict[str, pd.DataFrame], postgres_servers: tuple[str, ...] = ("postgres",)) -> list[Cell]:
    matched, sweep = tables.get("matched"), tables.get("sweep")
    if not usable(matched, *COLUMNS):
        return []
    if "client_bound" not in matched and usable(sweep, "variant", "ef", "clients", "client_bound"):
        matched = matched.merge(sweep[["variant", "ef", "clients", "client_bound"]], how="left",
                                on=["variant", "ef", "clients"])
    cells = []
    for (target, clients), rows in matched.groupby(["target_recall", "clients"], sort=True):
        reached = rows[rows["recall_mean"] >= target].dropna(subset=["qps"])
        servers = reached["variant"].map(server_of)
        pg = _fastest(reached[servers.isin(postgres_servers)])
        qdrant = _fastest(reached[servers == "qdrant"])
        cells.append(Cell("vectors", f"{clients} client{'s' if clients != 1 else ''}", f"recall ≥ {target:.2f}",
                          _side(pg), _side(qdrant), "matched", unit="QPS", figures=(_text(pg), _text(qdrant)),
                          postgres_meets=pg is not None,
                          missing="no Postgres index reached the recall" if pg is None
                          else "no Qdrant index reached the recall"))
    return cells


def _fastest(rows: pd.DataFrame) -> pd.Series | None:
    return None if rows.empty else rows.loc[rows["qps"].idxmax()]


def _text(row: pd.Series | None) -> str:
    if row is None:
        return "—"
    low, runs = row.get("ef_low"), _runs(row)
    if pd.isna(row.get("ef")):
        return f"{row['qps']:,.0f} QPS (recall {row['recall_mean']:.3f}{runs})"
    if low is None or pd.isna(low):
        return f"{row['qps']:,.0f} QPS (recall {row['recall_mean']:.3f}, ef {row['ef']:.0f}{runs})"
    return (f"{row['qps']:,.0f} QPS (at recall {row['recall_mean']:.2f}, interpolated between ef {low:.0f} and "
            f"{row['ef']:.0f}{runs})")


def _runs(row: pd.Series) -> str:
    """"; median of 3 runs" where the matched row counts the repetitions behind its figures, and
    how many of them the server CPU comes from where fewer (a run whose CPU split is not trusted
    gives no CPU figure)."""
    count = row.get("runs")
    if count is None or pd.isna(count) or count < 1:
        return ""
    said = "; 1 run" if count == 1 else f"; median of {int(count)} runs"
    cpu = row.get("server_cpu_runs")
    if cpu is not None and not pd.isna(cpu) and int(cpu) < int(count):
        said += f", server CPU from {int(cpu)} of them"
    return said
