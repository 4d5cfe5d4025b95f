"""A tool's measurements as a ``RunResult``: the same summary, histograms and time series a load
driver run has, so a tool point is a run record like any other.

Two shapes: ``sampled_step`` from per-transaction samples (pgbench's ``--log``: completion
time and latency of every transaction; exact HDR histograms, per-second series, a warm-up cut
out by time), and ``aggregate_step`` from a tool that reports only totals (redis-benchmark:
requests and requests/s; no histogram — its own percentiles go in the record as reported).
Every step is closed loop: the tool's clients send the next request when the last returns.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pglimits_core.record import histograms as hist
from pglimits_core.record.recorder import COUNT_FIELDS
from pglimits_core.record.results import PhaseInfo, RoleInfo, RunResult, WorkerStatus
from pglimits_core.record.timeseries import KEY_COLUMNS

LATENCY_KIND = "service_time"  # a closed loop measures service time only


@dataclass
class StepMeasure:
    """One tool command's measurements: its phases, counts and histograms per phase, and its
    per-second rows (second since the run's start)."""

    op: str
    workers: int
    phases: list[PhaseInfo]
    counts: dict[str, dict[str, int]]
    histograms: dict[str, Any] = field(default_factory=dict)  # phase -> HdrHistogram (µs)
    seconds: list[dict[str, Any]] = field(default_factory=list)


def _counts(ops: int, items: int, errors: int = 0) -> dict[str, int]:
    return {"ops": ops, "items": items, "idle_polls": 0, "errors": errors, "missed": 0, "late": 0}


def aggregate_step(op: str, phase: str, workers: int, ops: int, duration_s: float,
                   items_per_op: int = 1) -> StepMeasure:
    """A step the tool reports as totals only: ``ops`` in ``duration_s`` (the tool's own time)."""
    return StepMeasure(op, workers, [PhaseInfo(phase, duration_s)], {phase: _counts(ops, ops * items_per_op)})


def sampled_step(op: str, workers: int, samples: list[tuple[float, int]], warmup_s: float, duration_s: float,
                 items_per_op: int = 1, failed: int = 0) -> StepMeasure:
    """``samples`` = (completion time in s since the run's start, latency µs) per transaction.
    Phase "warmup" is [0, warmup_s), "measure" [warmup_s, warmup_s + duration_s); a completion
    after that (the tool stopping) is left out."""
    windows = [("warmup", 0.0, warmup_s), ("measure", warmup_s, warmup_s + duration_s)]
    phases = [PhaseInfo("warmup", warmup_s, warmup=True)] if warmup_s > 0 else []
    phases.append(PhaseInfo("measure", duration_s))
    step = StepMeasure(op, workers, phases, {}, {p.name: hist.new_histogram() for p in phases})
    per_second: dict[tuple[str, int], list[int]] = defaultdict(list)
    for done_s, latency_us in samples:
        name = next((n for n, start, end in windows if start <= done_s < end), None)
        if name is None or name not in step.histograms:
            continue
        hist.record_us(step.histograms[name], latency_us)
        per_second[(name, int(done_s))].append(latency_us)
    for phase in phases:
        ops = sum(len(v) for (name, _), v in per_second.items() if name == phase.name)
        step.counts[phase.name] = _counts(ops, ops * items_per_op, failed if phase.name == "measure" else 0)
    step.seconds = [_second_row(name, second, values, items_per_op)
                    for (name, second), values in sorted(per_second.items(), key=lambda kv: kv[0][1])]
    return step


def _second_row(phase: str, second: int, latencies: list[int], items_per_op: int) -> dict[str, Any]:
    histogram = hist.new_histogram(hist.SECOND_DIGITS)
    for value in latencies:
        hist.record_us(histogram, value)
    return {"phase": phase, "second": second, "ops": len(latencies), "items": len(latencies) * items_per_op,
            "idle_polls": 0, "errors": 0, f"{LATENCY_KIND}_count": histogram.get_total_count(),
            f"{LATENCY_KIND}_p50_us": histogram.get_value_at_percentile(50.0),
            f"{LATENCY_KIND}_p99_us": histogram.get_value_at_percentile(99.0),
            f"{LATENCY_KIND}_max_us": histogram.get_max_value()}


def tool_run_result(role: str, steps: list[StepMeasure], error: str | None = None,
                    params: dict[str, Any] | None = None) -> RunResult:
    """One ``RunResult`` of the steps run one after another (each its own phases, ``role``
    active only in them); failed when ``error`` says why."""
    roles = [RoleInfo(role, s.op, "closed", s.workers, active_phases=tuple(p.name for p in s.phases)) for s in steps]
    histograms = {(role, s.op, LATENCY_KIND, phase): h for s in steps for phase, h in s.histograms.items()
                  if h.get_total_count()}
    counts = {(role, s.op, phase): c for s in steps for phase, c in s.counts.items()}
    rows = [{"role": role, "op": s.op, **row} for s in steps for row in s.seconds]
    frame = pd.DataFrame.from_records(rows) if rows else pd.DataFrame(columns=[*KEY_COLUMNS, *COUNT_FIELDS])
    if rows:
        frame = frame.sort_values(KEY_COLUMNS, ignore_index=True)
    status = WorkerStatus(role, 0, "failed" if error else "ok", error, ended_by="duration")
    return RunResult(phases=[p for s in steps for p in s.phases], roles=roles, workers=[status],
                     histograms=histograms, counts=counts, timeseries=frame,
                     status="failed" if error else "complete", error=error, params=params or {})
