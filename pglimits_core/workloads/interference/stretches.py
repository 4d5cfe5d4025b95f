"""Before / during / after an act (held xmin, autovacuum off), and how long recovery took.

``before`` = [warm-up end, act start), ``during`` = [act start, act end), ``after`` = [act end, window end).
Per stretch: the queue table's dead tuples (median and largest of its seconds), the churn's claim
latency p99 (exact, from every pgbench transaction in the stretch) and each bystander's per-second
p99 (median and worst of the stretch's seconds: the bystanders' histograms cover the whole
window, so a stretch has only their per-second values).

Recovery: seconds from the act's end until the dead tuples are back at or below their median
before the act (the churn's typical level on its own sawtooth: an autovacuum after the act has
cleared the pile); None when that did not happen inside the window.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pglimits_core.workloads.interference.evidence import BYSTANDERS, churn_in_window, sample_stats

STRETCHES = ("before", "during", "after")


def bounds(events: dict[str, Any], window_s: float, warmup_s: float = 0.0) -> dict[str, tuple[float, float]]:
    """The three stretches; ``before`` starts after the warm-up (the start-up transient is no
    part of "before the act")."""
    start, end = float(events["act_start_s"]), float(events["act_end_s"])
    return {"before": (min(warmup_s, start), start), "during": (start, end), "after": (end, window_s)}


def _inside(series: pd.Series, low: float, high: float) -> pd.Series:
    index = np.asarray(series.index, dtype=float)
    return series[(index >= np.floor(low)) & (index < high)].dropna()


def _round(value: Any) -> Any:
    return None if value is None or pd.isna(value) else round(float(value), 3)


def stretch_row(name: str, low: float, high: float, measured: Any, series: dict[str, pd.Series],
                dead: pd.Series) -> dict[str, Any]:
    churn = churn_in_window(measured.churn_samples, measured.window_s)
    claims = churn[(churn.t >= low) & (churn.t < high)]
    dead_here = _inside(dead, low, high)
    row = {"stretch": name, "start_s": round(low, 2), "end_s": round(high, 2),
           "dead_tuples_median": _round(dead_here.median()) if len(dead_here) else None,
           "dead_tuples_max": _round(dead_here.max()) if len(dead_here) else None,
           "claim_p99_ms": sample_stats(claims.latency_us.to_numpy()).get("p99_ms"),
           "claims": len(claims)}
    for role in BYSTANDERS:
        values = _inside(series.get(role, pd.Series(dtype=float)), low, high)
        row[f"{role}_p99_ms_median_s"] = _round(values.median()) if len(values) else None
        row[f"{role}_p99_ms_worst_s"] = _round(values.max()) if len(values) else None
    return row


def recovery_s(dead: pd.Series, act_start_s: float, act_end_s: float) -> float | None:
    """Seconds after the act until dead tuples are back at their median before it."""
    before = _inside(dead, 0.0, act_start_s)
    after = dead[np.asarray(dead.index, dtype=float) >= np.ceil(act_end_s)].dropna()
    if before.empty or after.empty:
        return None
    back = after[after <= before.median()]
    return None if back.empty else round(max(0.0, float(back.index[0]) - act_end_s), 1)


def stretches(measured: Any, series: dict[str, pd.Series], dead: pd.Series) -> dict[str, Any]:
    """The three stretches and the recovery time of a run with an act (``{}`` without one)."""
    if "act_start_s" not in measured.events or measured.events.get("act_start_s") is None:
        return {}
    spans = bounds(measured.events, measured.window_s, getattr(measured, "warmup_s", 0.0))
    rows = [stretch_row(name, *spans[name], measured, series, dead) for name in STRETCHES]
    return {"stretches": rows,
            "recovery_s": recovery_s(dead, spans["during"][0], spans["during"][1]),
            "dead_tuples_peak": _round(dead.max()) if len(dead) else None}
