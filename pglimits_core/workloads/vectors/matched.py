"""QPS at matched recall: where each engine's recall curve crosses each target recall.

Both engines can reach a target at the same swept ef, so "the smallest ef reaching it" compares
the grid, not the engines. Each engine's QPS (and its runs' lowest and highest, and the server
CPU per query) is interpolated linearly in recall between the two swept ef values that bracket
the target: the last ef below it and the first at or above it. Where the smallest ef swept
already reaches the target there is nothing below to interpolate from: that point's figures are
shown as measured, and said so (``qps_is``). The exact scan has no ef: measured.

Every row carries its own verdicts: ``client_bound`` (recorded per run; set if any run of either
bracketing point was client-bound) and ``box_saturated`` (client + server CPU at or above
``SATURATED_SHARE`` of the box's cores: the rate measures the box). The verdict class of
Qdrant against pgvector at each (target, clients) comes from ``analysis.verdict.decide`` on the
``side`` of each row — the one place a vectors row becomes a ``Side`` (``decision.py`` too).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pglimits_core.analysis.runs import SATURATED_SHARE, flag
from pglimits_core.analysis.verdict import Side, decide

TARGETS = (0.90, 0.95, 0.99)
#: client + server CPU (% of one core, median) at or above this share of the box: saturated
#: figures interpolated in recall between the bracketing points, as the QPS is
INTERPOLATED = ("qps", "qps_min", "qps_max", "recall_worst5_mean", "server_cpu_ms_per_query", "server_cpu_ms_min",
                "server_cpu_ms_max", "client_cpu_ms_per_query", "box_cpu_pct")
PAIR = ("qdrant hnsw", "pgvector hnsw")  # the head-to-head: A / B of the ratio and the verdict


def matched_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """Per target recall, client count and variant: the QPS where the variant's recall curve
    crosses the target (see the module); "not reached" is a result."""
    if sweep.empty:
        return pd.DataFrame()
    out = []
    for clients in sorted(sweep.clients.unique()):
        at = sweep[sweep.clients == clients]
        for target in TARGETS:
            for variant, group in at.groupby("variant", sort=False):
                row = {"target_recall": target, "clients": int(clients), "variant": variant}
                out.append({**row, **(crossing(group, target) or _not_reached(group))})
    return with_verdicts(pd.DataFrame(out))


def crossing(group: pd.DataFrame, target: float) -> dict[str, Any] | None:
    """One variant's figures at ``target`` recall from its points at one client count (None:
    no point reaches it)."""
    ordered = group.sort_values("ef", na_position="first").reset_index(drop=True)
    reached = ordered[ordered.recall_mean >= target]
    if reached.empty:
        return None
    at = reached.index[0]
    hi = ordered.loc[at]
    below = ordered.loc[:at - 1].dropna(subset=["recall_mean", "ef"]) if at else ordered.iloc[0:0]
    if pd.isna(hi.ef) or below.empty:
        how = "measured (exact scan, no ef)" if pd.isna(hi.ef) else f"measured at ef={hi.ef:.0f} (the smallest ef swept)"
        return _figures(hi, [hi], {name: _between(hi.get(name), hi.get(name), 0.0) for name in INTERPOLATED},
                        hi.recall_mean, None, how)
    lo = below.iloc[-1]
    weight = (target - lo.recall_mean) / (hi.recall_mean - lo.recall_mean)
    values = {name: _between(lo.get(name), hi.get(name), weight) for name in INTERPOLATED}
    return _figures(hi, [lo, hi], values, target, lo.ef, f"interpolated between ef={lo.ef:.0f} and ef={hi.ef:.0f}")


def _between(low: Any, high: Any, weight: float) -> float | None:
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return None
    return float(low) + weight * (float(high) - float(low))


def _figures(hi: pd.Series, points: list[pd.Series], values: dict[str, Any], recall: float, ef_low: Any,
             how: str) -> dict[str, Any]:
    bounds = [p.get("client_bound") for p in points if p.get("client_bound") is not None
              and not pd.isna(p.get("client_bound"))]
    client_bound = any(bool(b) for b in bounds) if bounds else None
    cores = hi.get("cores")
    box = values.get("box_cpu_pct")
    saturated = None if box is None or cores is None or pd.isna(cores) else bool(box >= SATURATED_SHARE * 100 * cores)
    us = {f"server_cpu_us_{key}": None if values.get(f"server_cpu_ms_{key}") is None
          else values[f"server_cpu_ms_{key}"] * 1000 for key in ("per_query", "min", "max")}
    qps = values["qps"]
    spread = values["qps_max"] / values["qps_min"] if values.get("qps_min") and values.get("qps_max") else None
    return {"ef": hi.ef, "ef_low": ef_low, "qps_is": how, "recall_mean": recall, "qps": qps,
            "qps_min": values.get("qps_min"), "qps_max": values.get("qps_max"), "qps_spread": spread,
            "runs": hi.get("runs"), "recall_worst5_mean": values.get("recall_worst5_mean"), **us,
            "client_cpu_ms_per_query": values.get("client_cpu_ms_per_query"), "box_cpu_pct": box, "cores": cores,
            "client_bound": client_bound, "box_saturated": saturated,
            "qps_text": f"{qps:,.0f}" + (" ᶜ" if client_bound else "") + (" ᵇ" if saturated else "")}


def _not_reached(group: pd.DataFrame) -> dict[str, Any]:
    best = group.recall_mean.max()
    return {"ef": None, "ef_low": None, "qps_is": None, "recall_mean": None, "qps": None,
            "qps_text": f"not reached (best {best:.3f})" if pd.notna(best) else "not scored"}


def server_us(row: pd.Series, key: str = "per_query") -> float | None:
    """Server CPU µs per query of a matched row (older tables gave ms)."""
    for column, scale in ((f"server_cpu_us_{key}", 1.0), (f"server_cpu_ms_{key}", 1000.0)):
        value = row.get(column)
        if value is not None and not pd.isna(value):
            return float(value) * scale
    return None


def side(row: pd.Series | None) -> Side | None:
    """A matched row as one side of ``analysis.verdict.decide``: its QPS and the runs' range, its
    client-bound verdict, its server CPU per query and that figure's range over the runs."""
    if row is None:
        return None
    bound = row.get("client_bound")
    low, high = server_us(row, "min"), server_us(row, "max")
    qps_min, qps_max = row.get("qps_min"), row.get("qps_max")
    return Side(str(row["variant"]), float(row["qps"]), client_bound=None if bound is None or pd.isna(bound) else bool(bound),
                server_cpu_us_per_op=server_us(row),
                value_range=None if qps_min is None or pd.isna(qps_min) else (float(qps_min), float(qps_max)),
                cpu_range=(low, high) if low and high else None, box_saturated=flag(row.get("box_saturated")))


def _reached(rows: pd.DataFrame) -> pd.Series | None:
    return rows.iloc[0] if len(rows) and pd.notna(rows.qps.iloc[0]) else None


def with_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """Qdrant's QPS over pgvector's at each (target, clients) where both reached the target, and
    the verdict class of that comparison (on Qdrant's row, as the ratio)."""
    ratios, classes = [], []
    for _, row in table.iterrows():
        same = table[(table.target_recall == row.target_recall) & (table.clients == row.clients)]
        a, b = (_reached(same[same.variant == v]) for v in PAIR)
        paired = row.variant == PAIR[0] and a is not None and b is not None
        ratios.append(round(a.qps / b.qps, 3) if paired and b.qps else None)
        classes.append(decide(side(a), side(b)).klass if paired else None)
    return table.assign(ef=table.ef.astype("Int64"), ef_low=table.ef_low.astype("Int64"),
                        qdrant_over_pgvector=ratios, verdict=classes, qdrant_over_this=gaps_to_qdrant(table))


def gaps_to_qdrant(table: pd.DataFrame) -> list[float | None]:
    """Each other row's gap: Qdrant's QPS over its own at the same (target, clients), where both
    reached the target — how far each Postgres index (PG 16's, PG 17's pgvector 0.8, DiskANN) is."""
    gaps = []
    for _, row in table.iterrows():
        same = table[(table.target_recall == row.target_recall) & (table.clients == row.clients)]
        qdrant = _reached(same[same.variant == PAIR[0]])
        mine = row.qps if row.variant != PAIR[0] and row.qps is not None and not pd.isna(row.qps) else None
        gaps.append(round(qdrant.qps / mine, 3) if qdrant is not None and mine else None)
    return gaps
