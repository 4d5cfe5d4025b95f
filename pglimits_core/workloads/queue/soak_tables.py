"""The soak's tables (``soak.py``): the ceiling at each backlog depth, the long run in one row per
design, and its time line — from the run records alone (summary, ``timeseries.parquet``: the
per-second send → claim p99 by each message's intended send; ``samplers.parquet``: the server's
per-second statistics, on the samplers' clock, which starts with the run's own within a second).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pglimits_core.analysis.runs import measured
from pglimits_core.workloads.queue.durability_tables import sort_by_class
from pglimits_core.workloads.queue.health import _columns_ending, sampler_frame
from pglimits_core.workloads.queue.soak import DEPTH, SOAK

TIMESERIES_FILE = "timeseries.parquet"
#: seconds a time-line bucket spans (the chart's points); the first and last minute of the table
BUCKET_S, EDGE_S = 30, 60
P99 = "end_to_end_p99_us"


def _runs(frame: pd.DataFrame, experiment: str) -> pd.DataFrame:
    if frame.empty or not {"experiment", "phase", "role"} <= set(frame.columns):
        return pd.DataFrame()
    rows = measured(frame)
    return rows[(rows.experiment == experiment) & (rows.phase == "measure")]


def depth_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per design and depth: the jobs/s its consumers claimed flat out from that backlog, the
    depth the window left, which CPU set was the limit."""
    runs = _runs(frame, DEPTH)
    if runs.empty:
        return pd.DataFrame()
    rows = [{"variant": variant, "durability_class": run.durability_class.iloc[0], "depth": int(run.depth.iloc[0]),
             "left_in_queue": run.left_in_queue.iloc[0], "jobs_per_s": run.items_per_s.max(),
             "limit": run["limit"].iloc[0], "server_cores_used": run.server_cores_exact.iloc[0],
             "run_id": run_id}
            for (run_id, variant), run in runs.groupby(["run_id", "variant"], sort=False)]
    return sort_by_class(pd.DataFrame(rows), ["variant", "depth"])


def soak_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per design: the offered and claimed rate, send → claim p99 over the whole window, in its
    first and last minute (median of the per-second p99s) and its worst second, and what the
    server's tables did meanwhile (Postgres: dead tuples, table + index size, autovacuum runs,
    checkpoints; Redis: memory)."""
    runs = _runs(frame, SOAK)
    if runs.empty:
        return pd.DataFrame()
    rows = []
    for run_id, run in runs.groupby("run_id", sort=False):
        consumer = run[run.role == "consumer"].iloc[0]
        seconds = latency_seconds(consumer.path)
        rows.append({"variant": consumer.variant, "durability_class": consumer.durability_class,
                     "offered_per_s": consumer.rate, "share_of_ceiling": consumer.share,
                     "ceiling_per_s": consumer.ceiling_per_s, "claimed_per_s": consumer.items_per_s,
                     "minutes": round(consumer.duration_s / 60, 1), "p99_ms": consumer.end_to_end_p99_ms,
                     **edge_p99s(seconds), "missed": consumer.missed, "left_in_queue": consumer.left_in_queue,
                     **server_over_time(sampler_frame(consumer.path)), "run_id": run_id})
    return sort_by_class(pd.DataFrame(rows), ["variant"])


def latency_seconds(run_path: str | Path) -> pd.DataFrame:
    """The measured window's per-second send → claim p99 (ms) and claims, by second from its start."""
    path = Path(run_path) / TIMESERIES_FILE
    frame = pd.read_parquet(path) if path.exists() else pd.DataFrame()
    if frame.empty or P99 not in frame:
        return pd.DataFrame(columns=["t", "p99_ms", "claims"])
    rows = frame[(frame.role == "consumer") & (frame.phase == "measure")].sort_values("second")
    start = rows.second.min()
    return pd.DataFrame({"t": rows.second - start, "p99_ms": rows[P99] / 1000,
                         "claims": rows.get("items", pd.Series(np.nan, index=rows.index))}).reset_index(drop=True)


def edge_p99s(seconds: pd.DataFrame) -> dict[str, float | None]:
    """The median per-second p99 of the first and the last minute, and the worst second's."""
    timed = seconds.dropna(subset=["p99_ms"])
    if timed.empty:
        return {"first_minute_p99_ms": None, "last_minute_p99_ms": None, "worst_second_p99_ms": None}
    end = timed.t.max()
    return {"first_minute_p99_ms": timed[timed.t < EDGE_S].p99_ms.median(),
            "last_minute_p99_ms": timed[timed.t > end - EDGE_S].p99_ms.median(),
            "worst_second_p99_ms": timed.p99_ms.max()}


def server_over_time(samplers: pd.DataFrame) -> dict[str, float | None]:
    """The queue tables' dead tuples (most), size (first and last, MiB), autovacuum runs and
    checkpoints over the run; Redis's memory (first and last, MiB). None where not sampled."""
    dead, size = _columns_ending(samplers, ".n_dead_tup"), _columns_ending(samplers, ".total_bytes")
    vacuums = _columns_ending(samplers, ".autovacuum_count_delta")
    checkpoints = [c for c in ("checkpoints_timed_delta", "checkpoints_req_delta") if c in samplers]
    sized = samplers.dropna(subset=size[:1])[size].sum(axis=1) / 2**20 if size else pd.Series(dtype=float)
    memory = samplers["used_memory"].dropna() / 2**20 if "used_memory" in samplers else pd.Series(dtype=float)
    return {"dead_tuples_max": samplers[dead].sum(axis=1).max() if dead else None,
            "table_mib_first": _first(sized), "table_mib_last": _last(sized),
            "autovacuum_runs": samplers[vacuums].sum().sum() if vacuums else None,
            "checkpoints": samplers[checkpoints].sum().sum() if checkpoints else None,
            "redis_memory_mib_first": _first(memory), "redis_memory_mib_last": _last(memory)}


def _first(series: pd.Series) -> float | None:
    return float(series.iloc[0]) if len(series) else None


def _last(series: pd.Series) -> float | None:
    return float(series.iloc[-1]) if len(series) else None


def soak_series(frame: pd.DataFrame) -> pd.DataFrame:
    """The time line, one row per design and ``BUCKET_S`` bucket: the median and the worst of its
    per-second p99s, claims/s, and (Postgres) dead tuples and table + index size at its end."""
    runs = _runs(frame, SOAK)
    if runs.empty:
        return pd.DataFrame()
    parts = [bucketed(run.variant, run.path, float(run.warmup_s)) for run in runs[runs.role == "consumer"].itertuples()]
    parts = [part for part in parts if not part.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def bucketed(variant: str, run_path: str | Path, warmup_s: float) -> pd.DataFrame:
    """One design's time line; the samplers' seconds moved past the warm-up onto the window's."""
    seconds = latency_seconds(run_path)
    if seconds.empty:
        return pd.DataFrame()
    bucket = (seconds.t // BUCKET_S * BUCKET_S).astype(int)
    latency = seconds.groupby(bucket).agg(p99_ms=("p99_ms", "median"), worst_second_p99_ms=("p99_ms", "max"),
                                          claims_per_s=("claims", "mean"))
    samplers = sampler_frame(run_path)
    dead, size = _columns_ending(samplers, ".n_dead_tup"), _columns_ending(samplers, ".total_bytes")
    if dead and "t" in samplers:
        rows = samplers.dropna(subset=dead[:1])
        rows = rows[rows.t >= warmup_s].assign(t=lambda f: f.t - warmup_s)
        tables = pd.DataFrame({"dead_tuples": rows[dead].sum(axis=1).to_numpy(),
                               "table_mib": (rows[size].sum(axis=1) / 2**20).to_numpy() if size else np.nan},
                              index=(rows.t // BUCKET_S * BUCKET_S).astype(int).to_numpy())
        latency = latency.join(tables.groupby(level=0).last(), how="left")
    return latency.rename_axis("t_s").reset_index().assign(variant=variant, minute=lambda f: f.t_s / 60)


def soak_tables(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The soak's tables where its experiments ran (none otherwise)."""
    found = {"depth": depth_table(frame), "soak": soak_table(frame), "soak_series": soak_series(frame)}
    return {name: table for name, table in found.items() if not table.empty}
