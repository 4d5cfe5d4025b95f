"""The alignment table: per Postgres mechanism, level and tenant, the repetitions pooled into one
exact permutation test (``permutation``), Benjamini–Hochberg across every row.

Inputs come from each record's ``outcome`` only: the per-second p99 series (seconds 0..W−1),
the autovacuum and auto-ANALYZE spans (``vacuum.spans`` with table and kind; older records:
``vacuum.windows`` and ``vacuum.analyze_windows`` of the queue table), and the run's warm-up
(``params.warmup_s``; older records had none: the first ``WARMUP_S`` seconds are dropped here,
the reset left a start-up transient there). Each row states the pooled test's minimum detectable
effect (``permutation.Pooled.min_detectable_ms``): "none shown" is only as informative as that.
An act window (a hold, autovacuum off) is tested on its seconds before the act only
(``before_act``): from the act on, the act moves the load and the vacuums together — a released
hold's debt-paying vacuum runs inside the churn's catch-up surge, autovacuum off has none — so a
p99 inside a vacuum there cannot be told from the act's own effect.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pglimits_core.workloads.interference import permutation as perm
from pglimits_core.workloads.interference.mechanisms import order_column

#: seconds dropped from the start of every window's statistics when the record does not say
WARMUP_S = 2.0
TENANTS = ("fts", "vector", "oltp", "churn")


def spans_of(outcome: dict[str, Any]) -> list[dict[str, Any]]:
    """Every maintenance span of the run: {table, kind, start_s, end_s} (kind vacuum / analyze)."""
    vacuum = outcome.get("vacuum") or {}
    if vacuum.get("spans") is not None:
        return list(vacuum["spans"])
    old = [{"table": "jobs", "kind": "vacuum", "start_s": s, "end_s": e} for s, e in vacuum.get("windows") or []]
    return old + [{"table": "jobs", "kind": "analyze", "start_s": s, "end_s": e}
                  for s, e in vacuum.get("analyze_windows") or []]


def warmup_of(params: dict[str, Any]) -> float:
    value = params.get("warmup_s")
    return WARMUP_S if value is None else float(value)


def act_edges(outcome: dict[str, Any]) -> list[float]:
    """The act's start and end times of an act window (none for a plain window)."""
    events = outcome.get("events") or {}
    return [float(events[k]) for k in ("act_start_s", "act_end_s") if events.get(k) is not None]


def before_act(seconds: Any, values: Any, edges: list[float]) -> tuple[Any, Any]:
    """An act window's whole seconds before its act starts (all of a plain window's)."""
    if not edges:
        return seconds, values
    keep = np.floor(np.asarray(seconds, dtype=float)) + 1 <= min(edges) + 1e-9
    return seconds[keep], values[keep]


def run_stats(outcome: dict[str, Any], tenant: str, warmup_s: float) -> tuple[Any, int, int, int]:
    """One run's shift statistics for a tenant, its vacuum and analyze spans after the warm-up,
    and its inside seconds (an act window's seconds before the act only: ``before_act``)."""
    series = outcome.get("series") or {}
    seconds, values = perm.kept(series.get("second") or [], series.get(f"{tenant}_p99_ms") or [], warmup_s)
    seconds, values = before_act(seconds, values, act_edges(outcome))
    last = min(act_edges(outcome), default=float(len(series.get("second") or [])))
    spans = [s for s in spans_of(outcome) if s["end_s"] >= warmup_s and s["start_s"] < last]
    mask = perm.inside_mask(seconds, [(s["start_s"], s["end_s"]) for s in spans])
    vacuums = sum(1 for s in spans if s["kind"] != "analyze")
    return perm.shift_stats(values, mask), vacuums, len(spans) - vacuums, int(mask.sum())


def pooled_row(key: tuple, group: pd.DataFrame) -> dict[str, Any]:
    mechanism, level, tenant = key
    stats, vacuums, analyzes, inside = [], 0, 0, 0
    for _, run in group.iterrows():
        found, v, a, i = run_stats(run.outcome, tenant, warmup_of(run.params))
        stats.append(found)
        vacuums, analyzes, inside = vacuums + v, analyzes + a, inside + i
    result = perm.pooled_test(stats)
    mean = None if result.observed is None else round(result.observed / result.runs, 3)
    detectable = result.min_detectable_ms
    return {"mechanism": mechanism, "level": level, "tenant": tenant, "runs": len(group),
            "runs_tested": result.runs, "vacuum_spans": vacuums, "analyze_spans": analyzes,
            "inside_seconds": inside, "mean_inside_minus_outside_ms": mean,
            "min_detectable_ms": None if detectable is None else round(detectable, 2),
            "k": result.k, "n": result.n, "p": None if result.p is None else round(result.p, 6),
            "exact": result.exact, "reason": result.reason}


def alignment_table(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows``: the Postgres side's completed run × tenant rows (baseline left out: no churn)."""
    if rows.empty:
        return pd.DataFrame()
    runs = rows[rows.mechanism != "baseline"]
    out = [pooled_row(key, group.drop_duplicates("run_id"))
           for key, group in runs.groupby(["mechanism", "level", "tenant"], sort=False)]
    if not out:
        return pd.DataFrame()
    table = pd.DataFrame(out)
    table["q_bh"] = [None if q is None else round(q, 6) for q in perm.benjamini_hochberg(list(table.p))]
    table["verdict"] = [perm.verdict(q, c, r, d) for q, c, r, d in
                        zip(table.q_bh, table.vacuum_spans, table.reason, table.min_detectable_ms, strict=True)]
    table["p"] = [exact_p(row) for row in table.itertuples()]
    return table.sort_values(["mechanism", "level", "tenant"], key=_order, ignore_index=True)


def exact_p(row: Any) -> str:
    """p as k/n (the count it is), or why there is none."""
    if row.k is None or pd.isna(row.k):
        return "—"
    label = "" if row.exact else " (sampled)"
    return f"{int(row.k)}/{int(row.n)} = {row.p:.4f}{label}"


def _order(column: pd.Series) -> pd.Series:
    if column.name == "mechanism":
        return order_column(column)
    if column.name == "tenant":
        return column.map({t: i for i, t in enumerate(TENANTS)}).fillna(9)
    return column


def verdict_of(table: pd.DataFrame, mechanism: str, level: Any, tenant: str) -> str | None:
    """The alignment verdict of one row (None: not in the table)."""
    if table.empty:
        return None
    found = table[(table.mechanism == mechanism) & (table.level == level) & (table.tenant == tenant)]
    return None if found.empty else str(found.verdict.iloc[0])
