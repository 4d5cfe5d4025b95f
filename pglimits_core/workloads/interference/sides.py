"""Postgres vs dedicated, per tenant and churn level: does splitting the systems remove the tail
on one machine, or only move it?

Each side's inflation is its own: a tenant's p99 at a churn level over its p99 at that side's
baseline (level 0, same box, same rates). The reading per row:

Every ratio is paired: a repetition's p99 over the p99 of the same side's baseline run with the
same seed (the same query schedule: ``paired``). A side inflates only when every repetition's
paired ratio is above ``BAND``, and does not when every one is within it; repetitions on both
sides of the band say "cannot tell" (the rule ``analysis.verdict`` applies to a decision: the
whole spread clears the band). Each side's paired ratios are also said as what they are: a
consistent change (slower, or faster, in every repetition, by how much) or none. Each row names both sides' durability class (the churn's commit on Postgres, the
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

#: a level whose load CPU set ran at least this busy (% of a core, median) shares it between the
#: bystanders' clients and a busy load generator: the dedicated side's churn was 8 Python workers
#: in the sitting at 871e344d (three Redis round trips a job; 43-92 % of the load core; now qload's
#: compiled churn mode), the Postgres side's is pgbench (16-22 % with the bystanders at its
#: heaviest level): a p99 there is partly the clients' own wait, so the level is not read against
#: the other side's
LOAD_SHARED_PCT = 40.0

#: a p99 within this factor of its own side's baseline is not called inflated: one window per level
#: at the quick profile and 2-3 at the full one do not resolve smaller changes on a shared 2-vCPU box
BAND = 1.25
LEVEL_COLUMNS = ("p99_ms", "baseline_p99_ms", "inflation_ms", "ratio", "ratio_min", "ratio_max", "paired_ratios",
                 "per_second_diff_ms", "seconds_higher", "kept_up", "churn_sustained", "jobs_per_s", "durability",
                 "unlike_windows", "load_cpu_median")
UNLIKE = "windows not comparable"
#: the split side (the queue on its own Postgres instance, same box) shown beside the two, not read
SPLIT_COLUMNS = ("split_ratio", "split_paired_ratios", "split_churn_sustained")
NAMES = {"postgres": "Postgres", "dedicated": "dedicated"}
#: synchronous_commit values whose commit waits for the local WAL flush
FLUSHING_COMMITS = ("on", "remote_write", "remote_apply", "local")


def durability_class(side: str, servers: dict[str, Any]) -> str:
    """The churn's durability class from the settings the record carries (per_commit, periodic,
    none), or "not recorded"."""
    if side in ("postgres", "split"):
        settings = (servers.get("postgres_queue" if side == "split" else "postgres") or {}).get("settings") or {}
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


def _false(value: Any) -> bool:
    """Recorded and false (a numpy or pandas boolean too: ``is False`` never holds for those)."""
    return not _missing(value) and not bool(value)


def change(low: Any, high: Any) -> str:
    """The paired ratios' range said as a change: "+14–21 % in every repetition", "−2 to −21 % in
    every repetition", or "x0.83–1.09 (no consistent direction)"."""
    if _missing(low) or _missing(high):
        return "not measured"
    low, high = float(low), float(high)
    if low == high == 1.0:
        return "unchanged"
    if low > 1.0:
        return f"+{(low - 1) * 100:.0f}–{(high - 1) * 100:.0f} % in every repetition"
    if high < 1.0:
        return f"−{(1 - high) * 100:.0f} to −{(1 - low) * 100:.0f} % in every repetition"
    return f"x{low:g}–{high:g} (no consistent direction)"


def band_of(low: Any, high: Any) -> str:
    state = inflated(low, high)
    return {True: f"above the x{BAND:g} band", False: f"within the x{BAND:g} band"}.get(
        state, f"straddling x{BAND:g}")


def sides_said(row: dict[str, Any]) -> str:
    """Both sides' paired ratios said as changes, each against the band."""
    return "; ".join(f"{name} {change(row[f'{side}_ratio_min'], row[f'{side}_ratio_max'])}, "
                     f"{band_of(row[f'{side}_ratio_min'], row[f'{side}_ratio_max'])}"
                     for side, name in (("postgres", "Postgres"), ("dedicated", "dedicated")))


def inflated(low: Any, high: Any) -> bool | None:
    """True: every repetition above the band; False: every one within it; None: it straddles."""
    if _missing(low) or _missing(high):
        return None
    return True if low > BAND else (False if high <= BAND else None)


def guard(row: dict[str, Any], baselines_kept_up: dict[str, Any]) -> str | None:
    """Why the two sides cannot be read against each other (None: they can)."""
    for side in ("postgres", "dedicated"):
        if _missing(row[f"{side}_p99_ms"]):
            return f"{side} not measured at this level"
        if _false(row[f"{side}_churn_sustained"]):
            return f"{side} churn not sustained: not comparable"
        load = pd.to_numeric(row.get(f"{side}_load_cpu_median"), errors="coerce")
        if pd.notna(load) and load >= LOAD_SHARED_PCT:
            return (f"{side}: its load core {load:.0f} % busy with its churn's load generator (the bystanders' "
                    "clients share it): not comparable")
    if any(_missing(row[f"{side}_ratio"]) for side in ("postgres", "dedicated")):
        return "no baseline (the churn does not run at level 0): p99 side by side"
    for side in ("postgres", "dedicated"):
        if _false(row[f"{side}_kept_up"]) or _false(baselines_kept_up.get(side)):
            return f"{side}: the tenant did not keep its offered rate: not comparable"
    unlike = [f"{NAMES[side]}'s {row[f'{side}_unlike_windows']}" for side in ("postgres", "dedicated")
              if not _missing(row.get(f"{side}_unlike_windows")) and row.get(f"{side}_unlike_windows")]
    if unlike:
        return f"{UNLIKE}: {'; '.join(unlike)}"
    faster = [f"{NAMES[side]} ×{float(row[f'{side}_ratio_min']):g}" for side in ("postgres", "dedicated")
              if not _missing(row[f"{side}_ratio_min"]) and float(row[f"{side}_ratio_min"]) < 1 / BAND]
    if faster:
        # churn adds work to the box: a bystander much faster beside it than alone says the two
        # windows did not run on the same box, not that churn helps
        return f"{UNLIKE}: a repetition ran faster beside the churn than alone ({', '.join(faster)})"
    return None


def reading(row: dict[str, Any], baselines_kept_up: dict[str, Any]) -> str:
    """What the two sides' paired ratios say (or why they cannot say it)."""
    if (why := guard(row, baselines_kept_up)) is not None:
        return f"{why} ({sides_said(row)})" if why.startswith(UNLIKE) else why
    postgres, dedicated = (inflated(row[f"{side}_ratio_min"], row[f"{side}_ratio_max"])
                           for side in ("postgres", "dedicated"))
    if postgres is None or dedicated is None:
        verdict = f"cannot tell: the repetitions' paired ratios straddle x{BAND:g}"
    elif postgres and not dedicated:
        verdict = "removed: only Postgres inflates"
    elif postgres and dedicated:
        verdict = "moved: both inflate"
    else:
        verdict = "dedicated only inflates" if dedicated else f"neither inflates beyond x{BAND:g}"
    return f"{verdict} ({sides_said(row)})"


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
               **_side(rows, "postgres"), **_side(rows, "dedicated"),
               **{k: v for k, v in _side(rows, "split").items() if k in SPLIT_COLUMNS}}
        base = baselines[baselines.tenant == tenant]
        kept = {side: _side(base, side)[f"{side}_kept_up"] for side in ("postgres", "dedicated")}
        for side in ("postgres", "dedicated"):  # an unlike baseline window spoils every level's pairing
            row[f"{side}_unlike_windows"] = "; ".join(
                text for text in (_side(base, side)[f"{side}_unlike_windows"], row[f"{side}_unlike_windows"])
                if not _missing(text) and text)
        out.append({**row, "reading": reading(row, kept), "caveat": caveat(row, base)})
    table = pd.DataFrame(out)
    order = {"fts": 0, "vector": 1, "churn": 2}
    return table.sort_values(["level", "tenant"], key=lambda c: c.map(order) if c.name == "tenant" else c,
                             ignore_index=True)
