"""Resources per message and Postgres queue health, from each run's ``samplers.parquet``.

Resources (issue: "server and client CPU, RSS, disk bytes written per message, at a fixed
common rate") come from the open-loop latency runs, where every system was offered the same
rate. Queue health (dead tuples, table size, autovacuum) comes from the Postgres samplers.
Resources are per message, so they come from the measured window's sampler rows
(``analysis.runs.measured_samplers``; a record without the window's bounds: every row). Queue
health reads every row: the whole run, warm-up included, is its time line.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pglimits_core.analysis.runs import by_role, measured, measured_samplers
from pglimits_core.workloads.queue.durability_tables import sort_by_class

SAMPLERS_FILE = "samplers.parquet"


def sampler_frame(run_path: str | Path) -> pd.DataFrame:
    path = Path(run_path) / SAMPLERS_FILE
    return pd.read_parquet(path) if path.exists() else pd.DataFrame()


def _columns_ending(frame: pd.DataFrame, suffix: str) -> list[str]:
    return [c for c in frame.columns if c.endswith(suffix)]


def _median(frame: pd.DataFrame, column: str) -> float | None:
    return frame[column].median() if column in frame and frame[column].notna().any() else None


def _per_message(frame: pd.DataFrame, column: str, messages_per_s: float | None) -> float | None:
    if column not in frame or not messages_per_s:
        return None
    return frame[column].mean() / messages_per_s


def _cpu_us_per_msg(cpu_pct: float | None, messages_per_s: float | None) -> float | None:
    """% of one core at a message rate -> CPU microseconds per message."""
    return None if cpu_pct is None or not messages_per_s else cpu_pct * 1e4 / messages_per_s


def _idle_polls_per_s(run) -> float | None:
    polls, seconds = getattr(run, "consumer_idle_polls", None), getattr(run, "consumer_duration_s", None)
    return None if polls is None or pd.isna(polls) or not seconds else polls / seconds


def resources_row(run, samplers: pd.DataFrame) -> dict:
    rate = run.consumed_per_s
    client, server = _median(samplers, "client_cpu_pct"), _median(samplers, "server_cpu_pct")
    polls = _idle_polls_per_s(run)
    return {"variant": run.variant, "durability_class": getattr(run, "durability_class", None),
            "offered_per_s": run.offered_rate, "consumed_per_s": rate,
            "client_cpu_pct": client, "server_cpu_pct": server,
            "client_cpu_us_per_msg_with_polling": _cpu_us_per_msg(client, rate),
            "server_cpu_us_per_msg_with_polling": _cpu_us_per_msg(server, rate),
            "idle_polls_per_s": polls, "idle_polls_per_msg": polls / rate if polls is not None and rate else None,
            "server_rss_max_mb": (samplers["server_rss_max_bytes"].max() / 2**20
                                  if "server_rss_max_bytes" in samplers else None),
            "disk_write_bytes_per_msg": _per_message(samplers, "disk_write_bytes_per_s", rate),
            "wal_bytes_per_msg": _per_message(samplers, "wal_bytes_per_s", rate),
            "worker_busy_events": getattr(run, "worker_busy_events", None),
            "worker_busy_wait_ms": getattr(run, "worker_busy_wait_ms", None)}


def resources_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per latency run: CPU (% of one core, median) and CPU µs per message, consumers' idle polls
    per second and per message, peak server RSS, disk and WAL bytes per message, SQLite busy waits.

    Idle polls are empty claims; a consumer backs off 1 ms after each one. At low rates they are
    most of the consumers' work, so CPU per message here includes that polling (on both sides:
    each empty claim is a round trip the server answers too) — read it beside the poll counts.
    Disk bytes are system-wide (the box runs nothing else of note during a run); RSS is the
    largest single server process, because summing Postgres backends counts shared_buffers
    once per backend (see samplers.host). Busy waits are summed over the load workers."""
    runs = _latency_runs(frame)
    rows = [resources_row(run, measured_samplers(run.path)) for run in runs.itertuples()]
    return sort_by_class(pd.DataFrame(rows), ["offered_per_s", "variant"]) if rows else pd.DataFrame()


def _latency_runs(frame: pd.DataFrame) -> pd.DataFrame:
    rows = measured(frame)
    rows = rows[rows.experiment == "latency"]
    if rows.empty:
        return rows
    producer, consumer = by_role(rows)
    return producer.assign(consumed_per_s=consumer.items_per_s, consumer_idle_polls=consumer.idle_polls,
                           consumer_duration_s=consumer.get("duration_s")).reset_index()


def health_row(run, samplers: pd.DataFrame) -> dict:
    dead = _columns_ending(samplers, ".n_dead_tup")
    size = _columns_ending(samplers, ".total_bytes")
    vacuums = _columns_ending(samplers, ".autovacuum_count_delta")
    return {"variant": run.variant, "durability_class": getattr(run, "durability_class", None),
            "experiment": run.experiment, "rate": run.rate,
            "consumers": run.consumers,
            "dead_tuples_max": samplers[dead].max().max() if dead else None,
            "table_and_index_mb_max": samplers[size].max().max() / 2**20 if size else None,
            "autovacuum_runs": samplers[vacuums].sum().sum() if vacuums else None,
            "vacuum_seen_running": bool(samplers.get("vacuums_running", pd.Series(dtype=float)).fillna(0).max() > 0),
            "wal_mb_per_s_mean": (samplers["wal_bytes_per_s"].mean() / 2**20 if "wal_bytes_per_s" in samplers else None)}


def queue_health_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Dead tuples, table+index size, autovacuum runs and WAL rate for every Postgres queue run."""
    if frame.empty:
        return pd.DataFrame()
    runs = frame.drop_duplicates("run_id")
    rows = []
    for run in runs.itertuples():
        samplers = sampler_frame(run.path)
        if not _columns_ending(samplers, ".n_dead_tup"):
            continue  # not a Postgres run
        rows.append(health_row(run, samplers))
    return pd.DataFrame(rows)


def dead_tuple_series(frame: pd.DataFrame, experiment: str = "latency") -> pd.DataFrame:
    """Long-form (variant, t, dead_tuples) for the Postgres runs of one experiment at its top rate."""
    runs = frame[(frame.experiment == experiment)].drop_duplicates("run_id")
    if runs.empty:
        return pd.DataFrame(columns=["variant", "t", "dead_tuples"])
    top = runs[runs.rate == runs.rate.max()]
    parts = []
    for run in top.itertuples():
        samplers = sampler_frame(run.path)
        dead = _columns_ending(samplers, ".n_dead_tup")
        if dead:
            rows = samplers.dropna(subset=dead[:1])
            parts.append(pd.DataFrame({"variant": run.variant, "t": rows.t, "dead_tuples": rows[dead].sum(axis=1)}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["variant", "t", "dead_tuples"])
