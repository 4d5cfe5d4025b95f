"""Writes while querying read back from the run records (``experiments.writes``): one table row per
(variant, write rate, repetition), joining its two runs — the writes run and the cleanup run — and
a per-second timeline of both on one axis. Everything comes from the records alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from pglimits_core.analysis.runs import measurement_window
from pglimits_core.experiments.writes import (
    AFTER,
    BEFORE,
    CLEANUP,
    CLEANUP_STAGE,
    EXPERIMENT,
    MOMENTS,
    PHASES,
    WRITES_STAGE,
    WRITING,
)
from pglimits_core.samplers.classify import measured_rows

MIB = 2**20
#: a writer that achieved less than this share of its offered rate did not offer the stated load
SUSTAINED_SHARE = 0.95
KEYS = ["variant", "write_pct_per_min", "repetition"]


#: the columns a workload's shown writes table leads and ends with (its quality columns between)
SHOWN_FIRST = ("variant", "write_pct_per_min", "query_per_s_offered", "write_per_s_done", "writes_sustained",
               "write_p99_ms", "load_cpu_pct_writing", "p99_ms_before", "p99_ms_writing", "p99_ms_after",
               "p99_ms_cleanup")
SHOWN_LAST = ("dead_versions_after_writes", "dead_versions_after_cleanup", "cleanup_s", "cleanup_within_phase")


def shown_lines(writes: pd.DataFrame, caption: str, quality_columns: tuple[str, ...]) -> list[str]:
    """A README's writes-while-querying table: rates, p99 per phase, ``quality_columns``, what the
    writes left and the cleanup; nothing where the experiment did not run."""
    if writes.empty:
        return []
    cols = [c for c in (*SHOWN_FIRST, *quality_columns, *SHOWN_LAST) if c in writes]
    return [f"{caption}:", "", writes[cols].round(3).to_markdown(index=False), ""]


def writes_columns(manifest: dict[str, Any]) -> dict[str, Any]:
    """A workload's ``entry_rows`` run columns for this experiment: a writes or cleanup run's
    whole outcome under ``writes`` (nested: the table reads it), nothing for any other run."""
    params = manifest.get("params", {})
    return {"writes": params.get("outcome") or {}} if params.get("experiment") == EXPERIMENT else {}


def _stage(frame: pd.DataFrame, stage: str) -> pd.DataFrame:
    if frame.empty or "experiment" not in frame or "stage" not in frame:
        return pd.DataFrame()
    return frame[(frame["experiment"] == EXPERIMENT) & (frame["stage"] == stage)]


def writes_table(frame: pd.DataFrame, quality_key: str) -> pd.DataFrame:
    """One row per point (``KEYS``): each phase's query p99 from the intended start (ms) and
    achieved queries/s, the writes offered, done and missed and the writers' own p99, whether the
    writers sustained the rate, ``quality_key`` at the three moments, the cleanup's seconds and
    kind, and what the writes left (``_state_columns``). ``frame``: one row per run × role ×
    measured phase (``analysis.runs.entry_rows`` with ``writes_columns``)."""
    writes = _stage(frame, WRITES_STAGE)
    if writes.empty:
        return pd.DataFrame()
    cleanups = {tuple(run.iloc[0][KEYS]): run for _, run in _stage(frame, CLEANUP_STAGE).groupby("run_id", sort=False)}
    rows = []
    for _, run in writes.groupby("run_id", sort=False):
        cleanup = cleanups.get(tuple(run.iloc[0][KEYS]))
        rows.append({**_writes_row(run, quality_key), **_cleanup_row(cleanup, quality_key)})
    return pd.DataFrame(rows).sort_values(KEYS, ignore_index=True)


def _writes_row(run: pd.DataFrame, quality_key: str) -> dict[str, Any]:
    first = run.iloc[0]
    outcome = first.get("writes") or {}
    row = {**{key: first.get(key) for key in KEYS}, "status": first["status"], "limit": first.get("limit"),
           "query_per_s_offered": outcome.get("query_per_s"), "write_per_s_offered": outcome.get("write_per_s")}
    row.update(_phase_columns(run, (BEFORE, WRITING, AFTER)))
    writer = _role(run, "writer", WRITING)
    row["write_per_s_done"] = _get(writer, "achieved_rate")
    row["writes_missed"] = _get(writer, "missed")
    row["write_errors"] = _get(writer, "errors")
    row["write_p99_ms"] = _get(writer, "service_time_p99_ms")  # the write's own time: a commit / an ack
    # from each write's intended start on the writers' open-loop schedule: with the wait of a writer
    # that fell behind (a stalled index), which the write's own time leaves out
    row["write_p99_from_intended_ms"] = _get(writer, "latency_p99_ms")
    offered, done = row["write_per_s_offered"], row["write_per_s_done"]
    row["writes_sustained"] = None if not offered or done is None else bool(done >= SUSTAINED_SHARE * offered)
    row.update(_writing_cpu(first))
    quality, state = outcome.get("quality") or {}, outcome.get("state") or {}
    for moment in MOMENTS[:2]:
        row[f"{quality_key}_{moment}"] = (quality.get(moment) or {}).get(quality_key)
    return {**row, **_state_columns(state.get("before") or {}, state.get("after_writes") or {})}


def _cleanup_row(run: pd.DataFrame | None, quality_key: str) -> dict[str, Any]:
    """The cleanup run's columns; where it is missing, each says so by being None."""
    if run is None:
        return {f"p99_ms_{CLEANUP}": None, f"query_per_s_{CLEANUP}": None, f"{quality_key}_after_cleanup": None,
                "cleanup_s": None, "cleanup_within_phase": None, "cleanup_kind": None}
    first = run.iloc[0]
    outcome = first.get("writes") or {}
    row = _phase_columns(run, (CLEANUP,))
    row[f"{quality_key}_after_cleanup"] = ((outcome.get("quality") or {}).get("after_cleanup") or {}).get(quality_key)
    seconds = _get(_role(run, "cleanup", CLEANUP), "service_time_max_ms")
    row["cleanup_s"] = None if seconds is None else round(seconds / 1000.0, 3)
    row["cleanup_within_phase"] = None if seconds is None else bool(seconds / 1000.0 <= first.get("cleanup_s", 0))
    row["cleanup_kind"] = outcome.get("cleanup_kind")
    after = (outcome.get("state") or {}).get("after_cleanup") or {}
    row["dead_versions_after_cleanup"] = after.get("dead_versions")
    row["index_mib_after_cleanup"] = _mib(after.get("index_bytes"))
    row["server_pss_mib_after_cleanup"] = _mib(after.get("server_pss_bytes"))  # after the point's queries: warm
    return row


def _phase_columns(run: pd.DataFrame, phases: tuple[str, ...]) -> dict[str, Any]:
    row = {}
    for phase in phases:
        clients = _role(run, "client", phase)
        row[f"p99_ms_{phase}"] = _get(clients, "latency_p99_ms")
        row[f"query_per_s_{phase}"] = _get(clients, "achieved_rate")
    return row


def _role(run: pd.DataFrame, role: str, phase: str) -> pd.DataFrame:
    if "role" not in run or "phase" not in run:
        return pd.DataFrame()
    return run[(run["role"] == role) & (run["phase"] == phase)]


def _get(rows: pd.DataFrame, column: str) -> Any:
    if rows.empty or column not in rows:
        return None
    value = rows[column].iloc[0]
    return None if pd.isna(value) else value


def _writing_cpu(run: pd.Series) -> dict[str, Any]:
    """The load's and the server's CPU (median per-second %, of one core) over the ``writing``
    phase alone — the run's own CPU verdict takes its whole measured window, where 40 quiet
    seconds would dilute a load core the writers saturated — from the record's host sampler."""
    path = Path(str(run.get("path")))
    samplers, manifest = path / "samplers.parquet", path / "manifest.json"
    if not samplers.exists() or not manifest.exists():
        return {"load_cpu_pct_writing": None, "server_cpu_pct_writing": None}
    window = measurement_window(json.loads(manifest.read_text()))
    frame = pd.read_parquet(samplers)
    host = frame[frame["sampler"] == "host"] if "sampler" in frame else frame
    start = (window[0] if window else 0.0) + float(run.get("before_s") or 0)
    rows = measured_rows(host, (start, start + float(run.get("writing_s") or 0))) if window else host.iloc[0:0]
    return {"load_cpu_pct_writing": _median(rows, "client_cpu_pct"), "server_cpu_pct_writing": _median(rows, "server_cpu_pct")}


def _median(rows: pd.DataFrame, column: str) -> float | None:
    values = pd.to_numeric(rows[column], errors="coerce").dropna() if column in rows else pd.Series(dtype=float)
    return round(float(values.median()), 1) if len(values) else None


def _state_columns(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What the writes left: dead versions after them (the system's count) and the versions they
    made dead (Postgres: the ``n_tup_del`` delta), the background cleanups that ran meanwhile
    (autovacuum, autoanalyze), segments, the index's size and the server's memory before and after."""
    columns = {"dead_versions_after_writes": after.get("dead_versions"),
               "versions_made_dead": _delta(before, after, "deleted_total"),
               "autovacuum_runs_during": _delta(before, after, "autovacuum_count"),
               "autoanalyze_runs_during": _delta(before, after, "autoanalyze_count"),
               "segments_after_writes": after.get("segments")}
    for moment, state in (("before", before), ("after_writes", after)):
        columns[f"index_mib_{moment}"] = _mib(state.get("index_bytes"))
        columns[f"server_pss_mib_{moment}"] = _mib(state.get("server_pss_bytes"))
    return columns


def _delta(before: dict[str, Any], after: dict[str, Any], key: str) -> Any:
    first, last = before.get(key), after.get(key)
    return None if first is None or last is None else last - first


def _mib(value: Any) -> float | None:
    return None if value is None else round(value / MIB, 1)


# --- the timeline -----------------------------------------------------------------------------------

#: seconds left blank between the writes run and the cleanup run on the timeline's axis
GAP_S = 5


def writes_timeline(frame: pd.DataFrame) -> pd.DataFrame:
    """Per point and second, both runs on one axis (the cleanup run ``GAP_S`` after the writes
    run's end): the queries completed and their p99 from the intended start (ms; the highest where
    a second holds two phases; NaN where none completed: a stall), the writes done, and the phase
    windows as planned (``writing_from``/``writing_to``, ``cleanup_from``/``cleanup_to``)."""
    writes = _stage(frame, WRITES_STAGE).drop_duplicates("run_id")
    cleanups = {tuple(r[KEYS]): r for _, r in _stage(frame, CLEANUP_STAGE).drop_duplicates("run_id").iterrows()}
    parts = []
    for _, run in writes.iterrows():
        first = _seconds(run, offset=0)
        if first.empty:
            continue
        writing_from = float(run.get("warmup_s") or 0) + float(run.get("before_s") or 0)
        end = writing_from + float(run.get("writing_s") or 0) + float(run.get("after_s") or 0)
        cleanup = cleanups.get(tuple(run[KEYS]))
        second = _seconds(cleanup, offset=int(end) + GAP_S) if cleanup is not None else pd.DataFrame()
        part = pd.concat([first, second], ignore_index=True)
        part = part.assign(writing_from=writing_from, writing_to=writing_from + float(run.get("writing_s") or 0),
                           cleanup_from=int(end) + GAP_S, cleanup_to=int(end) + GAP_S + float(run.get("cleanup_s") or 0))
        for key in reversed(KEYS):
            part.insert(0, key, run[key])
        parts.append(part)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _seconds(run: pd.Series, offset: int) -> pd.DataFrame:
    """One run's per-second series from its ``timeseries.parquet``: every second from its first to
    its last (no completion: 0 queries, p99 NaN), seconds shifted by ``offset``."""
    path = Path(str(run.get("path"))) / "timeseries.parquet"
    if not path.exists():
        return pd.DataFrame()
    series = pd.read_parquet(path)
    series = series[series["phase"].isin(PHASES)]
    queries = series[series["role"] == "client"].groupby("second").agg(
        queries=("ops", "sum"), query_p99_ms=("latency_p99_us", "max"), phase=("phase", "last"))
    if queries.empty:
        return pd.DataFrame()
    queries["query_p99_ms"] = queries["query_p99_ms"] / 1000.0
    writes = series[series["role"] == "writer"].groupby("second")["ops"].sum()
    seconds = range(int(queries.index.min()), int(queries.index.max()) + 1)
    timeline = queries.reindex(seconds)
    timeline["queries"] = timeline["queries"].fillna(0).astype(int)
    timeline["writes"] = writes.reindex(seconds).fillna(0).astype(int)
    timeline["stage"] = run.get("stage")
    timeline.index = timeline.index + offset
    return timeline.rename_axis("second").reset_index()
