"""The window's tenants as one ``RunResult``: the bystanders' (from the load driver) with the churn
added as a third role ``churn`` (from pgbench's log, put on the same axis and phase), so the run
record's summary, histograms and per-second series hold every tenant.

The churn's latency kind is ``latency``: under ``-R`` pgbench measures each transaction from its
scheduled start, as the harness's open loops do. Only transactions completed inside the window
count; pgbench's own summary and command line stay in ``outcome``/``params`` beside them.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from pglimits_core.load.background import PHASE
from pglimits_core.load.tools.result import LATENCY_KIND, sampled_step
from pglimits_core.record.results import RoleInfo, RunResult, WorkerStatus
from pglimits_core.record.rundir import atomic_write_bytes
from pglimits_core.record.timeseries import KEY_COLUMNS
from pglimits_core.workloads.interference.window import WARMUP

ROLE = "churn"


def churn_step(measured: Any, load: Any) -> Any:
    """pgbench's transactions in the window as the bystanders' phases: ``warmup`` (its first
    ``warmup_s``) and ``load`` (the rest), kind ``latency``."""
    warmup = getattr(measured, "warmup_s", 0.0)
    step = sampled_step(load.op, load.clients, measured.churn_samples, warmup, measured.window_s - warmup,
                        failed=measured.churn_failed)
    names = {"measure": PHASE, "warmup": WARMUP}
    step.phases = [replace(p, name=names[p.name]) for p in step.phases]
    step.histograms = {names[k]: h for k, h in step.histograms.items()}
    step.counts = {names[k]: c for k, c in step.counts.items()}
    step.seconds = [{**{k.replace(LATENCY_KIND, "latency"): v for k, v in row.items()}, "phase": names[row["phase"]]}
                    for row in step.seconds]
    return step


def churn_error(measured: Any) -> str | None:
    """The churn's error: its thread's, else its tool's (pgbench's result, qload's jobs)."""
    tool = measured.churn_result
    return measured.churn_error or (tool.error if tool is not None else "the churn's load tool returned nothing")


def merged_result(measured: Any, load: Any) -> RunResult:
    """The bystanders' result, plus the churn role when there was churn."""
    bystanders = measured.bystanders
    if load is None:
        return bystanders
    step = churn_step(measured, load)
    error = churn_error(measured)
    role = RoleInfo(ROLE, step.op, "open", step.workers, offered_rate=load.jobs_per_s)
    rows = pd.DataFrame.from_records([{"role": ROLE, "op": step.op, **row} for row in step.seconds])
    timeseries = pd.concat([bystanders.timeseries, rows], ignore_index=True) if len(rows) else bystanders.timeseries
    errors = "; ".join(e for e in (bystanders.error, error and f"churn: {error}") if e) or None
    return replace(
        bystanders, roles=[*bystanders.roles, role],
        workers=[*bystanders.workers, WorkerStatus(ROLE, 0, "failed" if error else "ok", error, "duration")],
        histograms={**bystanders.histograms,
                    **({(ROLE, step.op, "latency", PHASE): step.histograms[PHASE]}
                       if step.histograms[PHASE].get_total_count() else {})},
        counts={**bystanders.counts, (ROLE, step.op, PHASE): step.counts[PHASE]},
        timeseries=timeseries.sort_values(KEY_COLUMNS, ignore_index=True) if len(timeseries) else timeseries,
        status="failed" if errors else bystanders.status, error=errors)


def write_json(path: Path, name: str, value: Any) -> None:
    """A small JSON file beside the record (e.g. the parsed autovacuum log lines)."""
    atomic_write_bytes(path / name, json.dumps(value, indent=1, default=str).encode())


def write_samplers(path: Path, frame: Any) -> None:
    """The samplers' per-second rows (every sampler, the window's axis) as ``samplers.parquet``."""
    if frame is None or len(frame) == 0:
        return
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    atomic_write_bytes(path / "samplers.parquet", buffer.getvalue())
