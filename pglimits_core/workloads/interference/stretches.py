"""Before / during / after an act (held xmin, autovacuum off), and the autovacuum that followed it.

``before`` = [warm-up end, act start), ``during`` = [act start, act end), ``after`` = [act end,
window end), the edges the act's exact start and end times (not the second they fall in). Per
stretch: the queue table's dead tuples (median and largest of the vacuum sampler's readings
taken inside it), the churn's job p99 (one pgbench transaction = enqueue + claim + ack, three
commits; exact, from every transaction that completed in the stretch) and each bystander's
per-second p99 over the whole seconds inside it (median and worst; a second cut by an act edge
is neither stretch's: the bystanders' histograms cover the whole window, so a stretch has only
their per-second values).

After the act: the seconds from the act's end to the start of the next autovacuum of the queue
table (where the naptime tick fell, not how long the debt took), and that vacuum's elapsed time
and tuples removed (from the server log: the debt it paid).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pglimits_core.workloads.interference.evidence import (
    BYSTANDERS,
    JOB_TABLES,
    churn_in_window,
    log_entries,
    sample_stats,
)

STRETCHES = ("before", "during", "after")


def bounds(events: dict[str, Any], window_s: float, warmup_s: float = 0.0) -> dict[str, tuple[float, float]]:
    """The three stretches; ``before`` starts after the warm-up (the start-up transient is no
    part of "before the act")."""
    start, end = float(events["act_start_s"]), float(events["act_end_s"])
    return {"before": (min(warmup_s, start), start), "during": (start, end), "after": (end, window_s)}


def whole_seconds(series: pd.Series, low: float, high: float) -> pd.Series:
    """Per-second values whose second [s, s + 1) lies wholly inside [low, high)."""
    index = np.asarray(series.index, dtype=float)
    return series[(index >= low) & (index + 1 <= high + 1e-9)].dropna()


def dead_samples(frame: Any) -> pd.Series:
    """The churn's dead tuples (the queue table's, plus the rotated queue's partitions' where a
    window sampled them) indexed by each reading's exact time (s on the window's axis)."""
    columns = [f"{table}.n_dead_tup" for table in JOB_TABLES]
    if frame is None or len(frame) == 0 or not any(c in frame for c in columns):
        return pd.Series(dtype=float)
    rows = frame[frame["sampler"] == "vacuum"]
    dead = rows[[c for c in columns if c in rows]].sum(axis=1, min_count=1)
    kept = dead.notna()
    return pd.Series(dead[kept].to_numpy(dtype=float), index=rows["t"][kept].to_numpy(dtype=float))


def _round(value: Any) -> Any:
    return None if value is None or pd.isna(value) else round(float(value), 3)


def stretch_values(name: str, low: float, high: float, series: dict[str, pd.Series], dead: pd.Series) -> dict[str, Any]:
    """One stretch's dead tuples (readings at exact times) and bystanders (whole seconds)."""
    index = np.asarray(dead.index, dtype=float)
    dead_here = dead[(index >= low) & (index < high)].dropna()
    row = {"stretch": name, "start_s": round(low, 2), "end_s": round(high, 2),
           "dead_tuples_median": _round(dead_here.median()) if len(dead_here) else None,
           "dead_tuples_max": _round(dead_here.max()) if len(dead_here) else None}
    for role in BYSTANDERS:
        values = whole_seconds(series.get(role, pd.Series(dtype=float)), low, high)
        row[f"{role}_p99_ms_median_s"] = _round(values.median()) if len(values) else None
        row[f"{role}_p99_ms_worst_s"] = _round(values.max()) if len(values) else None
        row[f"{role}_worst_at_s"] = float(values.idxmax()) if len(values) else None
    return row


def job_values(jobs: pd.DataFrame, low: float, high: float) -> dict[str, Any]:
    """The churn's job (enqueue + claim + ack) p99 over the transactions completed in [low, high)."""
    here = jobs[(jobs.t >= low) & (jobs.t < high)]
    return {"job_p99_ms": sample_stats(here.latency_us.to_numpy()).get("p99_ms"), "jobs": len(here)}


def after_act_vacuum(entries: list[dict[str, Any]], act_end_s: float) -> dict[str, Any]:
    """The first autovacuum of the queue table (or of a rotated queue's partition, skipping one
    that removed nothing) that started after the act: how long after the act's end it started, how
    long it ran and what it removed (None where not known)."""
    after = sorted((e for e in entries if e.get("table") in JOB_TABLES and e.get("kind", "vacuum") == "vacuum"
                    and e.get("start_s") is not None and e["start_s"] >= act_end_s), key=lambda e: e["start_s"])
    # a rotated queue's drained, empty slot may be vacuumed first (0 tuples): the debt is elsewhere
    after = [e for e in after if e.get("tuples_removed") != 0] or after
    if not after:
        return {"next_autovacuum_after_act_s": None, "that_vacuum_elapsed_s": None,
                "that_vacuum_tuples_removed": None}
    first = after[0]
    return {"next_autovacuum_after_act_s": round(first["start_s"] - act_end_s, 2),
            "that_vacuum_elapsed_s": first.get("elapsed_s"), "that_vacuum_tuples_removed": first.get("tuples_removed")}


def stretches(measured: Any, series: dict[str, pd.Series], dead: pd.Series) -> dict[str, Any]:
    """The three stretches and the autovacuum after the act of a run with an act (``{}`` without
    one). ``dead``: the per-second series (its peak); the stretches read the exact readings."""
    if "act_start_s" not in measured.events or measured.events.get("act_start_s") is None:
        return {}
    spans = bounds(measured.events, measured.window_s, getattr(measured, "warmup_s", 0.0))
    jobs = churn_in_window(measured.churn_samples, measured.window_s)
    exact = dead_samples(measured.frame)
    rows = [{**stretch_values(name, *spans[name], series, exact), **job_values(jobs, *spans[name])}
            for name in STRETCHES]
    return {"stretches": rows, **after_act_vacuum(log_entries(measured), spans["during"][1]),
            "dead_tuples_peak": _round(dead.max()) if len(dead) else None}
