"""One window's evidence, as the run record's ``outcome``: what each tenant saw, what vacuum did,
and whether the two line up in time.

- Per tenant (``fts``, ``vector``, ``churn``): p50/p99/max over the window after its warm-up
  (the first ``warmup_s`` seconds are their own phase: a start-up transient), from the intended
  start (the bystanders' open loops; pgbench ``-R`` logs from the scheduled start too), and the
  per-second p99 series (every second, the warm-up's included, for the figure).
- Maintenance spans: every autovacuum and auto-ANALYZE run on the queue and control tables
  inside the window, sub-second, from the server log (``log_autovacuum_min_duration = 0``: its
  end stamp and elapsed), each with its table and kind; the parsed log lines are kept in the run
  directory (``autovacuum-log.json``). Without a readable log: the per-second vacuum sampler,
  which misses runs shorter than a second (``windows_source`` says which). The cycle count is
  the queue table's autovacuum runs after the warm-up.
- Alignment per tenant, this run alone: inside-vs-outside per-second p99 and its exact p = k/n
  (``permutation``; the alignment table pools the repetitions).
- A run with an act (held xmin, autovacuum off): before / during / after stretches and the
  recovery time (see ``stretches``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pglimits_core.load.background import PHASE
from pglimits_core.samplers.vacuum import parse_autovacuum_log, vacuum_windows
from pglimits_core.workloads.interference import permutation as perm
from pglimits_core.workloads.interference.churn import QUEUE_TABLE, QUEUE_TABLES
from pglimits_core.workloads.interference.rotation import PARTITIONS

DEAD = f"{QUEUE_TABLE}.n_dead_tup"
#: the tables that hold the churn's jobs: the queue, or the rotated queue's partitions
JOB_TABLES = (QUEUE_TABLE, *PARTITIONS)
BYSTANDERS = ("fts", "vector", "oltp")
#: the tables whose maintenance spans are evidence: the queue's and every control table's (the
#: control's append-only tables are auto-ANALYZEd too)
TABLES = (*QUEUE_TABLES, *PARTITIONS)


def _ms(us: float | None) -> float | None:
    return None if us is None or (isinstance(us, float) and np.isnan(us)) else round(float(us) / 1000, 3)


def ran(result: Any, roles: tuple[str, ...]) -> list[str]:
    """Those of ``roles`` the load ran (the OLTP tenant only where planned)."""
    present = {info.name for info in getattr(result, "roles", None) or []}
    return [role for role in roles if role in present]


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


def churn_in_window(samples: list[tuple[float, int]], window_s: float, from_s: float = 0.0) -> pd.DataFrame:
    """The churn's transactions that completed inside [from_s, window): ``t`` (s), ``latency_us``."""
    frame = pd.DataFrame(samples, columns=["t", "latency_us"])
    return frame[(frame.t >= from_s) & (frame.t < window_s)]


def churn_series(churn: pd.DataFrame) -> pd.Series:
    if churn.empty:
        return pd.Series(dtype=float)
    grouped = churn.groupby(np.floor(churn.t).astype(int))["latency_us"]
    return grouped.quantile(0.99) / 1000


def dead_series(frame: Any) -> pd.Series:
    """The churn's dead tuples per second (the vacuum sampler's rows): the queue table's, plus the
    rotated queue's partitions' where a window sampled them."""
    columns = [f"{table}.n_dead_tup" for table in JOB_TABLES]
    if frame is None or len(frame) == 0 or not any(c in frame for c in columns):
        return pd.Series(dtype=float)
    rows = frame[frame["sampler"] == "vacuum"]
    dead = rows[[c for c in columns if c in rows]].sum(axis=1, min_count=1)
    kept = dead.notna()
    return pd.Series(dead[kept].to_numpy(dtype=float), index=np.floor(rows["t"][kept].to_numpy()).astype(int))


#: the server sampler's per-second columns a timeline carries: (record name, sampler column, scale)
SERVER_SERIES = (("wal_mb_per_s", "wal_bytes_per_s", 1e-6), ("checkpoints", "checkpoints_timed_delta", 1.0),
                 ("checkpoints", "checkpoints_req_delta", 1.0))


def server_series(frame: Any) -> dict[str, pd.Series]:
    """WAL written (MB/s) and checkpoints completed per second (timed and requested together),
    from the server sampler's rows, indexed by second."""
    if frame is None or len(frame) == 0 or "sampler" not in frame:
        return {}
    rows = frame[frame["sampler"] == "postgres"]
    found: dict[str, pd.Series] = {}
    for name, column, scale in SERVER_SERIES:
        if column not in rows:
            continue
        values = rows[column].astype(float) * scale
        series = pd.Series(values.to_numpy(), index=np.floor(rows["t"].to_numpy()).astype(int)).dropna()
        found[name] = found[name].add(series, fill_value=0) if name in found else series
    return found


def logged_runs(measured: Any) -> list[Any]:
    """Every autovacuum and auto-ANALYZE run the server logged during the window (any table)."""
    if not (measured.log_readable and measured.log_text):
        return []
    return [*parse_autovacuum_log(measured.log_text), *parse_autovacuum_log(measured.log_text, analyze=True)]


def log_entries(measured: Any) -> list[dict[str, Any]]:
    """The parsed log lines on the window's axis, kept in the run directory for a reviewer."""
    origin = measured.origin_epoch_s
    return [{"table": v.table, "kind": v.kind, "start_s": round(v.start_epoch_s - origin, 3),
             "end_s": round(v.end_epoch_s - origin, 3), "elapsed_s": v.elapsed_s,
             "tuples_removed": v.tuples_removed, "remain": v.remain, "not_yet_removable": v.not_yet_removable,
             "logged_at": v.end_time.isoformat()} for v in logged_runs(measured)]


def maintenance_spans(measured: Any) -> tuple[list[dict[str, Any]], str]:
    """Autovacuum and auto-ANALYZE spans on the queue and control tables that overlap the window
    (sub-second, from the log), or the vacuum sampler's 1 s runs when the log cannot be read
    (it misses runs shorter than its interval: most autovacuums here last 0-110 ms)."""
    if measured.log_readable:
        spans = [{k: e[k] for k in ("table", "kind", "start_s", "end_s")} for e in log_entries(measured)
                 if e["table"] in TABLES]
        source = "server log"
    else:
        spans = [{"table": w.table, "kind": "vacuum", "start_s": round(w.start_s, 3), "end_s": round(w.end_s, 3)}
                 for w in vacuum_windows(measured.frame, tables=list(TABLES), auto_only=True)]
        source = "vacuum sampler (1 s resolution: misses runs shorter than a second)"
    inside = [s for s in spans if s["end_s"] > 0 and s["start_s"] < measured.window_s]
    return sorted(inside, key=lambda s: (s["start_s"], s["table"])), source


def vacuum_cycles(spans: list[dict[str, Any]], warmup_s: float) -> int:
    """Autovacuum runs on the queue table after the warm-up (the cycles a window held)."""
    return sum(1 for s in spans if s["table"] in JOB_TABLES and s["kind"] != "analyze" and s["end_s"] >= warmup_s)


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 3) if values else None


def alignment(series: pd.Series, spans: list[dict[str, Any]], warmup_s: float) -> dict[str, Any]:
    """This run alone: inside-vs-outside per-second p99 after the warm-up and its exact p = k/n
    (one run cannot go below cycles/n: the table pools the repetitions)."""
    seconds, values = perm.kept(list(series.index), list(series.to_numpy()), warmup_s)
    mask = perm.inside_mask(seconds, [(s["start_s"], s["end_s"]) for s in spans])
    result = perm.pooled_test([perm.shift_stats(values, mask)])
    return {"inside_p99_ms": _mean(list(values[mask])), "outside_p99_ms": _mean(list(values[~mask])),
            "inside_seconds": int(mask.sum()), "outside_seconds": int((~mask).sum()),
            "observed_ms": None if result.observed is None else round(result.observed, 3),
            "k": result.k, "n": result.n, "p_value": result.p, "reason": result.reason}


def tenant_series(measured: Any) -> dict[str, pd.Series]:
    """Per-second p99 of every tenant on [0, window) (the drain second past it left out, so the
    record's ``series`` is what the statistics used)."""
    series = {role: bystander_series(measured.bystanders, role) for role in ran(measured.bystanders, BYSTANDERS)}
    series["churn"] = churn_series(churn_in_window(measured.churn_samples, measured.window_s))
    clipped = {role: s[np.asarray(s.index, dtype=float) < measured.window_s] for role, s in series.items()}
    return {role: s.groupby(level=0).max() for role, s in clipped.items() if len(s)}


def compact(series: dict[str, pd.Series], dead: pd.Series, window_s: float,
            server: dict[str, pd.Series] | None = None) -> dict[str, list[Any]]:
    """Every per-second series on one grid 0..window-1 (None where a second had no value): each
    tenant's p99, the queue's dead tuples, and the server's WAL and checkpoints."""
    seconds = list(range(int(np.ceil(window_s))))
    def column(s: pd.Series) -> list[Any]:
        s = s.groupby(level=0).max().reindex(seconds)
        return [None if pd.isna(v) else round(float(v), 3) for v in s]
    return {"second": seconds, **{f"{role}_p99_ms": column(s) for role, s in series.items()},
            "dead_tuples": column(dead), **{name: column(s) for name, s in (server or {}).items()}}
