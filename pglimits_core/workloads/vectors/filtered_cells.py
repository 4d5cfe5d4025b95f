"""Vectors' filtered-search cells: at each selectivity (the share of the vectors the filter keeps),
does each side reach the recall target at the efs the profile ran, and at what QPS.

The filtered table (``tables.filtered_table``) reads each (engine, selectivity, ef) once: recall
of the top 10 against the exact filtered top 10 over the profile's recall queries, and the QPS of
one client over one short run. Recall is counted per query, not per second, so a side that
reaches no recall ≥ ``FILTERED_RECALL`` at any ef it ran decides the cell against the side that
does, whatever the windows' length (``Cell.by_recall``) — within the efs run, which the target
names. Where both reach it, the cell would be decided on QPS, and one client's short single runs
decide no rate: "not decided here", the QPS side by side. Each side's figure is its fastest row
that reaches the recall, or, where none does, its best recall and where it was read.
"""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.decision import (
    DEDICATED_WINS,
    NEITHER_MEETS,
    NOT_DECIDED,
    POSTGRES_AHEAD,
    Cell,
    usable,
)
from pglimits_core.analysis.verdict import Side

FILTERED_RECALL = 0.90
COLUMNS = ("variant", "selectivity_pct", "ef", "qps", "recall_mean")


def filtered_cells(tables: dict[str, pd.DataFrame], server_of, postgres_servers: tuple[str, ...]) -> list[Cell]:
    """One cell per selectivity: Postgres's variants (on ``postgres_servers``) against Qdrant's."""
    filtered = tables.get("filtered")
    if not usable(filtered, *COLUMNS):
        return []
    servers = filtered["variant"].map(server_of)
    efs = ", ".join(f"{ef:g}" for ef in sorted(pd.to_numeric(filtered["ef"], errors="coerce").dropna().unique()))
    target = f"recall ≥ {FILTERED_RECALL:.2f} at an ef run ({efs}; 1 client)"
    cells = []
    for pct, rows in filtered.groupby("selectivity_pct", sort=True):
        here = servers.loc[rows.index]
        cells.append(filtered_cell(float(pct), target, rows[here.isin(postgres_servers)], rows[here == "qdrant"]))
    return cells


def filtered_cell(pct: float, target: str, postgres: pd.DataFrame, qdrant: pd.DataFrame) -> Cell:
    pg, qd = _fastest_reaching(postgres), _fastest_reaching(qdrant)
    return Cell("vectors", f"filtered search, {pct:g} % of the vectors pass the filter", target,
                _side(pg if pg is not None else _best_recall(postgres)), _side(qd if qd is not None else _best_recall(qdrant)),
                "filtered", unit="QPS", figures=(_figure(pg, postgres), _figure(qd, qdrant)),
                postgres_meets=pg is not None, outcome=_outcome(pg is not None, qd is not None, postgres, qdrant),
                by_recall=True, missing="a side's filtered search was not run")


def _outcome(postgres_reaches: bool, qdrant_reaches: bool, postgres: pd.DataFrame, qdrant: pd.DataFrame) -> str:
    if postgres.empty or qdrant.empty:
        return f"{NOT_DECIDED}: {'Postgres' if postgres.empty else 'Qdrant'}'s filtered search was not run"
    if postgres_reaches and qdrant_reaches:
        return (f"{NOT_DECIDED}: both reach the recall; their QPS come from one client's short single runs, "
                "which decide no rate")
    if qdrant_reaches:
        return DEDICATED_WINS
    return POSTGRES_AHEAD if postgres_reaches else NEITHER_MEETS


def _fastest_reaching(rows: pd.DataFrame) -> pd.Series | None:
    reached = rows[pd.to_numeric(rows["recall_mean"], errors="coerce") >= FILTERED_RECALL].dropna(subset=["qps"])
    return None if reached.empty else reached.loc[reached["qps"].idxmax()]


def _best_recall(rows: pd.DataFrame) -> pd.Series | None:
    recall = pd.to_numeric(rows["recall_mean"], errors="coerce").dropna() if not rows.empty else pd.Series(dtype=float)
    return None if recall.empty else rows.loc[recall.idxmax()]


def _side(row: pd.Series | None) -> Side | None:
    if row is None:
        return None
    return Side(f"{row['variant']} ef={row['ef']:g}", float(row["qps"]))


def _figure(reaching: pd.Series | None, rows: pd.DataFrame) -> str:
    """The fastest row reaching the recall, or the best recall the side read (and where)."""
    if reaching is not None:
        return f"{reaching['qps']:,.0f} QPS at recall {reaching['recall_mean']:.3f}"
    best = _best_recall(rows)
    if best is None:
        return "—"
    return f"recall at most {best['recall_mean']:.3f} (ef {best['ef']:g}, {best['qps']:,.0f} QPS): below the target"
