"""Same-seed pairing: every repetition's query schedule is seeded by ``seed + repetition`` and is
the same across mechanisms and both sides, so a tenant's p99 in a repetition is mostly which
expensive queries arrived when. Every ratio is therefore taken against the baseline of the same
side and the same seed (the same schedule), never against the baselines' median.

What is compared, per run × tenant (``with_pairs``):

- a window without an act: its p99 over the window after the warm-up (exact, the histogram) vs
  the same-seed baseline's p99;
- a window with an act (it runs longer than the plain windows): the median of its per-second p99
  over the plain windows' seconds [warm-up, plain window) — the stretch whose schedule the
  baseline ran too — vs the same seconds of the same-seed baseline (the window's p99 cannot be
  cut to those seconds: the records keep per-second p99, not every request); and its during-act
  seconds vs the same seconds of the same-seed churn window (``during_vs_churn``);
- every window: the per-second paired differences over the common seconds (median, and how many
  seconds were higher than the baseline's).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pglimits_core.workloads.interference.mechanisms import acts_mask, is_act

WINDOW_P99 = "window p99"


def seed_of(row: Any) -> Any:
    """The run's schedule seed (older records: the load's seed, else the repetition)."""
    outcome, params = row.get("outcome") or {}, row.get("params") or {}
    for value in (outcome.get("seed"), (params.get("load") or {}).get("seed")):
        if value is not None:
            return int(value)
    return row.get("repetition")


def per_second(outcome: dict[str, Any], tenant: str) -> pd.Series:
    """The tenant's per-second p99 (ms) indexed by second (empty when not recorded)."""
    series = outcome.get("series") or {}
    values = series.get(f"{tenant}_p99_ms") or []
    seconds = (series.get("second") or [])[:len(values)]
    found = pd.Series([np.nan if v is None else float(v) for v in values[:len(seconds)]], index=seconds, dtype=float)
    return found.dropna()


def whole_seconds(series: pd.Series, low: float, high: float) -> pd.Series:
    """The seconds [s, s + 1) lying wholly inside [low, high) (a second cut by an edge is neither
    side's)."""
    index = np.asarray(series.index, dtype=float)
    return series[(index >= low) & (index + 1 <= high + 1e-9)]


def plain_window(rows: pd.DataFrame) -> float | None:
    """The plain windows' length (the shortest window without an act)."""
    plain = rows[~acts_mask(rows.mechanism)]
    found = pd.to_numeric((plain if not plain.empty else rows).window_s, errors="coerce").dropna()
    return None if found.empty else float(found.min())


def warmup_of(row: Any) -> float:
    value = (row.get("outcome") or {}).get("warmup_s", (row.get("params") or {}).get("warmup_s"))
    return 0.0 if value is None else float(value)


def _median(series: pd.Series) -> float:
    return float(series.median()) if len(series) else np.nan


def seconds_compared(run: Any, other: Any, low: float, high: float) -> tuple[pd.Series, pd.Series]:
    """Both runs' per-second p99 of the run's tenant over the whole seconds in [low, high) both have."""
    mine = whole_seconds(per_second(run.outcome, run.tenant), low, high)
    theirs = whole_seconds(per_second(other.outcome, run.tenant), low, high)
    common = mine.index.intersection(theirs.index)
    return mine.loc[common], theirs.loc[common]


def pair_columns(run: Any, base: Any, plain_s: float | None) -> dict[str, Any]:
    """The run's compared value against its same-seed baseline (``base``: None when missing)."""
    act = is_act(run.mechanism)
    high = plain_s if plain_s is not None else float(run.window_s or 0)
    if base is None:
        mine = whole_seconds(per_second(run.outcome, run.tenant), warmup_of(run), high)
        return {"compared_ms": _median(mine) if act else run.p99_ms, "base_ms": np.nan, "s_diff_ms": np.nan,
                "s_higher": None}
    mine, theirs = seconds_compared(run, base, warmup_of(run), high)
    diff = mine - theirs
    compared, against = (_median(mine), _median(theirs)) if act else (run.p99_ms, base.p99_ms)
    return {"compared_ms": compared, "base_ms": against, "s_diff_ms": _median(diff),
            "s_higher": f"{int((diff > 0).sum())}/{len(diff)}" if len(diff) else None}


def during_vs_churn(run: Any, churn: Any) -> float:
    """An act run's during-act per-second p99 median over the same seconds of its same-seed churn
    window's (NaN without an act or a churn window)."""
    events = (run.outcome or {}).get("events") or {}
    if churn is None or events.get("act_start_s") is None or events.get("act_end_s") is None:
        return np.nan
    mine, theirs = seconds_compared(run, churn, float(events["act_start_s"]), float(events["act_end_s"]))
    return _median(mine) / _median(theirs) if len(theirs) and _median(theirs) > 0 else np.nan


def compared_on(mechanism: str, warmup_s: float, plain_s: float | None) -> str:
    if not is_act(mechanism):
        return WINDOW_P99
    return f"median per-second p99, seconds {warmup_s:g}-{plain_s:g}" if plain_s else "median per-second p99"


def with_pairs(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (run × tenant, completed) with the same-seed comparison columns added."""
    if rows.empty:
        return rows
    rows = rows.assign(seed=[seed_of(r) for _, r in rows.iterrows()])
    key = ["side", "tenant", "seed"]
    baselines = {tuple(r[k] for k in key): r for _, r in rows[rows.mechanism == "baseline"].iterrows()}
    churns = {(r.side, r.level, r.tenant, r.seed): r for _, r in rows[rows.mechanism == "churn"].iterrows()}
    plain = {side: plain_window(group) for side, group in rows.groupby("side")}
    extra = []
    for _, run in rows.iterrows():
        found = pair_columns(run, baselines.get(tuple(run[k] for k in key)), plain.get(run.side))
        found["during_vs_churn"] = (during_vs_churn(run, churns.get((run.side, run.level, run.tenant, run.seed)))
                                    if is_act(run.mechanism) else np.nan)
        found["compared_on"] = compared_on(run.mechanism, warmup_of(run), plain.get(run.side))
        extra.append(found)
    return pd.concat([rows.reset_index(drop=True), pd.DataFrame(extra)], axis=1)


def ratios(values: pd.Series, digits: int = 2) -> str:
    """Per-repetition values in repetition order, "a / b / c" ("—" when none)."""
    found = pd.to_numeric(values, errors="coerce")
    return " / ".join("—" if pd.isna(v) else f"{v:.{digits}f}" for v in found) if found.notna().any() else "—"
