"""One window's evidence, as the run record's ``outcome``: what each tenant saw, what vacuum did,
and whether the two line up in time.

- Per tenant (``fts``, ``vector``, ``churn``): p50/p99/max over the window, from the intended
  start (the bystanders' open loops; pgbench ``-R`` logs from the scheduled start too), and the
  per-second p99 series.
- Vacuum: the autovacuum runs on the queue table inside the window, from the server log (exact
  start and end: ``log_autovacuum_min_duration = 0``), or from the per-second vacuum sampler
  when the log cannot be read (``windows_source`` says which); their count is the cycle count.
- Alignment per tenant: mean per-second p99 inside the vacuum windows minus outside, and its
  circular-shift permutation p-value (``analysis.alignment``).
- A run with an act (held xmin, autovacuum off): before / during / after stretches and the
  recovery time (see ``stretches``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pglimits_core.analysis.alignment import p99_inside_outside, permutation_alignment
from pglimits_core.load.background import PHASE
from pglimits_core.samplers.vacuum import parse_autovacuum_log, vacuum_windows, windows_from_log
from pglimits_core.workloads.interference.churn import QUEUE_TABLE

DEAD = f"{QUEUE_TABLE}.n_dead_tup"
BYSTANDERS = ("fts", "vector")


def _ms(us: float | None) -> float | None:
    return None if us is None or (isinstance(us, float) and np.isnan(us)) else round(float(us) / 1000, 3)


def bystander_stats(result: Any, role: str) -> dict[str, Any]:
    """p50/p99/max (ms) and count over the window, from the role's whole-window histogram."""
    found = [h for (r, _op, kind, phase), h in result.histograms.items() if r == role and kind == "latency"
             and phase == PHASE]
    if not found or not found[0].get_total_count():
        return {"count": 0}
    h = found[0]
    return {"count": h.get_total_count(), "p50_ms": _ms(h.get_value_at_percentile(50.0)),
            "p99_ms": _ms(h.get_value_at_percentile(99.0)), "max_ms": _ms(h.get_max_value())}


def sample_stats(latencies_us: list[int] | np.ndarray) -> dict[str, Any]:
    values = np.asarray(latencies_us, dtype=float)
    if values.size == 0:
        return {"count": 0}
    return {"count": int(values.size), "p50_ms": _ms(np.percentile(values, 50)),
            "p99_ms": _ms(np.percentile(values, 99)), "max_ms": _ms(values.max())}


def bystander_series(result: Any, role: str) -> pd.Series:
    """Per-second p99 (ms) of a bystander, indexed by second from t = 0."""
    frame = result.timeseries
    if frame is None or frame.empty or "latency_p99_us" not in frame:
        return pd.Series(dtype=float)
    rows = frame[frame.role == role]
    return pd.Series(rows["latency_p99_us"].to_numpy(dtype=float) / 1000, index=rows["second"].to_numpy())


def churn_in_window(samples: list[tuple[float, int]], window_s: float) -> pd.DataFrame:
    """The churn's transactions that completed inside the window: ``t`` (s), ``latency_us``."""
    frame = pd.DataFrame(samples, columns=["t", "latency_us"])
    return frame[(frame.t >= 0) & (frame.t < window_s)]


def churn_series(churn: pd.DataFrame) -> pd.Series:
    if churn.empty:
        return pd.Series(dtype=float)
    grouped = churn.groupby(np.floor(churn.t).astype(int))["latency_us"]
    return grouped.quantile(0.99) / 1000


def dead_series(frame: Any) -> pd.Series:
    """The queue table's dead tuples per second (the vacuum sampler's rows)."""
    if frame is None or len(frame) == 0 or DEAD not in frame:
        return pd.Series(dtype=float)
    rows = frame[(frame["sampler"] == "vacuum") & frame[DEAD].notna()]
    return pd.Series(rows[DEAD].to_numpy(dtype=float), index=np.floor(rows["t"].to_numpy()).astype(int))


def queue_windows(measured: Any) -> tuple[list[Any], str]:
    """Autovacuum runs on the queue table that overlap the window, and where they come from."""
    logged = parse_autovacuum_log(measured.log_text) if measured.log_text else []
    if measured.log_readable:
        windows = windows_from_log(logged, origin_epoch_s=measured.origin_epoch_s, tables=[QUEUE_TABLE])
        source = "server log"
    else:
        windows = vacuum_windows(measured.frame, tables=[QUEUE_TABLE], auto_only=True)
        source = "vacuum sampler (1 s resolution)"
    return [w for w in windows if w.end_s > 0 and w.start_s < measured.window_s], source


def analyze_windows(measured: Any) -> list[Any]:
    """The auto-ANALYZE runs on the queue table inside the window (from the server log only):
    they follow a vacuum and can take longer than it, so they are kept beside its windows."""
    if not (measured.log_readable and measured.log_text):
        return []
    logged = parse_autovacuum_log(measured.log_text, analyze=True)
    windows = windows_from_log(logged, origin_epoch_s=measured.origin_epoch_s, tables=[QUEUE_TABLE])
    return [w for w in windows if w.end_s > 0 and w.start_s < measured.window_s]


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 3) if values else None


def alignment(series: pd.Series, windows: list[Any], trials: int, seed: int) -> dict[str, Any]:
    """Inside-vs-outside per-second p99 and its permutation p-value (None and why, if it cannot)."""
    split = p99_inside_outside(series, windows)
    result = permutation_alignment(series, windows, trials=trials, seed=seed)
    return {"inside_p99_ms": _mean(split.inside), "outside_p99_ms": _mean(split.outside),
            "inside_seconds": result.inside_seconds, "outside_seconds": result.outside_seconds,
            "observed_ms": None if result.observed_stat is None else round(result.observed_stat, 3),
            "p_value": result.p_value, "trials": result.trials, "reason": result.reason}


def tenant_series(measured: Any) -> dict[str, pd.Series]:
    series = {role: bystander_series(measured.bystanders, role) for role in BYSTANDERS}
    series["churn"] = churn_series(churn_in_window(measured.churn_samples, measured.window_s))
    return {role: s for role, s in series.items() if len(s)}


def compact(series: dict[str, pd.Series], dead: pd.Series, window_s: float) -> dict[str, list[Any]]:
    """Every per-second series on one grid 0..window-1 (None where a second had no value)."""
    seconds = list(range(int(np.ceil(window_s))))
    def column(s: pd.Series) -> list[Any]:
        s = s.groupby(level=0).max().reindex(seconds)
        return [None if pd.isna(v) else round(float(v), 3) for v in s]
    return {"second": seconds, **{f"{role}_p99_ms": column(s) for role, s in series.items()},
            "dead_tuples": column(dead)}
