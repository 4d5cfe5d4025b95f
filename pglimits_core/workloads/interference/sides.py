"""Postgres vs dedicated, per tenant and churn level: does splitting the systems remove the tail
on one machine, or only move it?

Each side's inflation is its own: a tenant's p99 at a churn level over its p99 at that side's
baseline (level 0, same box, same rates). The reading per row:

- ``removed``: Postgres inflates (ratio above ``BAND``), the dedicated engine does not;
- ``moved``: both inflate — the churn costs the bystander on either design (shared CPU, not a
  shared engine, is then the likelier cause);
- ``dedicated only``: the dedicated engine inflates, Postgres does not;
- ``neither``: both stay within the band;
- a side whose churn did not sustain its offered rate, whose tenant did not keep its own offered
  rate (at the level or at the baseline), or that was not measured, is said so instead (a rate
  not kept measures the queue the load built, not interference).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

#: a p99 within this factor of its own side's baseline is not called inflated: one window per level
#: at the quick profile and 2-3 at the full one do not resolve smaller changes on a shared 2-vCPU box
BAND = 1.25
LEVEL_COLUMNS = ("p99_ms", "baseline_p99_ms", "inflation_ms", "ratio", "kept_up", "churn_sustained", "jobs_per_s")


def _side(rows: pd.DataFrame, side: str) -> dict[str, Any]:
    """One side's columns for one tenant and level (``None`` where the side has no row)."""
    found = rows[rows.side == side]
    if found.empty:
        return {f"{side}_{c}": None for c in LEVEL_COLUMNS}
    row = found.iloc[0]
    return {f"{side}_{c}": row.get(c) for c in LEVEL_COLUMNS}


def _missing(value: Any) -> bool:
    return value is None or value == "—" or (isinstance(value, float) and pd.isna(value))


def inflated(ratio: Any) -> bool | None:
    return None if ratio is None or pd.isna(ratio) else bool(ratio > BAND)


def reading(row: dict[str, Any], baselines_kept_up: dict[str, Any]) -> str:
    """What the two ratios say (or why they cannot say it)."""
    for side in ("postgres", "dedicated"):
        if _missing(row[f"{side}_p99_ms"]):
            return f"{side} not measured at this level"
        if row[f"{side}_churn_sustained"] is False:
            return f"{side} churn not sustained: not comparable"
    if any(_missing(row[f"{side}_ratio"]) for side in ("postgres", "dedicated")):
        return "no baseline (the churn does not run at level 0): p99 side by side"
    for side in ("postgres", "dedicated"):
        if row[f"{side}_kept_up"] is False or baselines_kept_up.get(side) is False:
            return f"{side}: the tenant did not keep its offered rate: not comparable"
    postgres, dedicated = inflated(row["postgres_ratio"]), inflated(row["dedicated_ratio"])
    if postgres and not dedicated:
        return "removed: only Postgres inflates"
    if postgres and dedicated:
        return "moved: both inflate"
    return "dedicated only inflates" if dedicated else f"neither inflates (both within x{BAND:g})"


def split_table(inflation: pd.DataFrame) -> pd.DataFrame:
    """One row per churn level and tenant with both sides' p99, baseline, inflation and ratio."""
    if inflation.empty or "side" not in inflation:
        return pd.DataFrame()
    churned = inflation[inflation.mechanism == "churn"]
    if churned.empty:
        return pd.DataFrame()
    baselines = inflation[inflation.mechanism == "baseline"]
    out = []
    for (level, tenant), rows in churned.groupby(["level", "tenant"], sort=False):
        row = {"level": level, "churn_rate": rows.churn_rate.iloc[0], "tenant": tenant,
               **_side(rows, "postgres"), **_side(rows, "dedicated")}
        base = baselines[baselines.tenant == tenant]
        kept = {side: _side(base, side)[f"{side}_kept_up"] for side in ("postgres", "dedicated")}
        out.append({**row, "reading": reading(row, kept)})
    table = pd.DataFrame(out)
    order = {"fts": 0, "vector": 1, "churn": 2}
    return table.sort_values(["level", "tenant"], key=lambda c: c.map(order) if c.name == "tenant" else c,
                             ignore_index=True)
