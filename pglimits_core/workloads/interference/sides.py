"""Postgres vs dedicated, per tenant and churn level: does splitting the systems remove the tail
on one machine, or only move it?

Each side's inflation is its own: a tenant's p99 at a churn level over its p99 at that side's
baseline (level 0, same box, same rates). The reading per row:

A side inflates only when every repetition's ratio (its p99 over the side's baseline median) is
above ``BAND``, and does not when every one is within it; repetitions on both sides of the band
say "cannot tell" (the rule ``analysis.verdict`` applies to a decision: the whole spread clears
the band). Each row names both sides' durability class (the churn's commit on Postgres, the
Redis queue's appendfsync) and whether a side's tenant already queued at its baseline (little
headroom: any extra load inflates a nearly saturated queue more).

- ``removed``: Postgres inflates, the dedicated engine does not;
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
LEVEL_COLUMNS = ("p99_ms", "baseline_p99_ms", "inflation_ms", "ratio", "ratio_min", "ratio_max", "kept_up",
                 "churn_sustained", "jobs_per_s", "durability")
#: synchronous_commit values whose commit waits for the local WAL flush
FLUSHING_COMMITS = ("on", "remote_write", "remote_apply", "local")


def durability_class(side: str, servers: dict[str, Any]) -> str:
    """The churn's durability class from the settings the record carries (per_commit, periodic,
    none), or "not recorded"."""
    if side == "postgres":
        settings = (servers.get("postgres") or {}).get("settings") or {}
        if "fsync" not in settings:
            return "not recorded"
        if settings["fsync"] != "on":
            return "none"
        return "per_commit" if settings.get("synchronous_commit") in FLUSHING_COMMITS else "periodic"
    settings = (servers.get("redis") or {}).get("settings") or {}
    if "appendonly" not in settings:
        return "not recorded"
    if settings["appendonly"] != "yes":
        return "none"
    return {"always": "per_commit", "everysec": "periodic"}.get(settings.get("appendfsync"), "none")


def _side(rows: pd.DataFrame, side: str) -> dict[str, Any]:
    """One side's columns for one tenant and level (``None`` where the side has no row)."""
    found = rows[rows.side == side]
    if found.empty:
        return {f"{side}_{c}": None for c in LEVEL_COLUMNS}
    row = found.iloc[0]
    return {f"{side}_{c}": row.get(c) for c in LEVEL_COLUMNS}


def _missing(value: Any) -> bool:
    return value is None or value == "—" or (isinstance(value, float) and pd.isna(value))


def _true(value: Any) -> bool:
    return not _missing(value) and bool(value)


def inflated(low: Any, high: Any) -> bool | None:
    """True: every repetition above the band; False: every one within it; None: it straddles."""
    if _missing(low) or _missing(high):
        return None
    return True if low > BAND else (False if high <= BAND else None)


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
    postgres, dedicated = (inflated(row[f"{side}_ratio_min"], row[f"{side}_ratio_max"])
                           for side in ("postgres", "dedicated"))
    if postgres is None or dedicated is None:
        return f"cannot tell: the repetitions' ratios straddle x{BAND:g}"
    if postgres and not dedicated:
        return "removed: only Postgres inflates"
    if postgres and dedicated:
        return "moved: both inflate"
    return "dedicated only inflates" if dedicated else f"neither inflates (both within x{BAND:g})"


def caveat(row: dict[str, Any], baselines: pd.DataFrame) -> str:
    """What makes the two sides unlike: durability classes that differ, a tenant that already
    queued at its side's baseline."""
    notes = []
    classes = (row.get("postgres_durability"), row.get("dedicated_durability"))
    if not any(_missing(c) for c in classes) and classes[0] != classes[1]:
        notes.append(f"not like for like: churn durability Postgres {classes[0]}, dedicated {classes[1]}")
    for side in ("postgres", "dedicated"):
        found = baselines[baselines.side == side] if "queueing" in baselines else baselines.iloc[0:0]
        if not found.empty and _true(found.queueing.iloc[0]):
            notes.append(f"{side} {row['tenant']} queues at its baseline (schedule-lag p99 ≥ service p99)")
    return "; ".join(notes) or "none"


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
        out.append({**row, "reading": reading(row, kept), "caveat": caveat(row, base)})
    table = pd.DataFrame(out)
    order = {"fts": 0, "vector": 1, "churn": 2}
    return table.sort_values(["level", "tenant"], key=lambda c: c.map(order) if c.name == "tenant" else c,
                             ignore_index=True)
