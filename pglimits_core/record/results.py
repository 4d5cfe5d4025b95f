"""The parent's view of a run: every worker's record merged per role, operation and phase.

``merge_worker_results`` adds the workers' HDR histograms (exact: counts add) and counters.
The load driver builds a ``RunResult``; the run directory writer and ``summary`` read it.
Latency values are microseconds; durations of phases are seconds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hdrh.histogram import HdrHistogram

from pglimits_core.record import histograms as hist
from pglimits_core.record.recorder import COUNT_FIELDS, WorkerResult

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class PhaseInfo:
    """A named stretch of the run; warmup phases are recorded but left out of summaries."""

    name: str
    duration_s: float
    warmup: bool = False


@dataclass(frozen=True)
class RoleInfo:
    """What the summary needs to know about a role. ``offered_rate`` is ops/s (open loop)."""

    name: str
    op: str
    loop: str  # "open" | "closed"
    workers: int
    offered_rate: float | None = None
    active_phases: tuple[str, ...] = ()


@dataclass(frozen=True)
class WorkerStatus:
    role: str
    worker: int
    status: str  # "ok" | "failed" | "died" (killed on purpose, ``Role.may_die``: not a failure)
    error: str | None = None
    ended_by: str = ""  # "duration" | "max_ops" | "stop"; "" when the worker never reported


@dataclass
class RunResult:
    """Merged measurements of one run (``status`` "complete" or "failed" + ``error``)."""

    phases: list[PhaseInfo]
    roles: list[RoleInfo]
    workers: list[WorkerStatus]
    histograms: dict[tuple[str, str, str, str], HdrHistogram]  # (role, op, kind, phase)
    counts: dict[tuple[str, str, str], dict[str, int]]  # (role, op, phase) -> counts
    timeseries: pd.DataFrame  # see record.timeseries
    status: str = "complete"
    error: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    error_samples: dict[str, dict[str, str]] = field(default_factory=dict)  # role -> samples
    #: [start, end] of the measured (non-warm-up) phases on the ``time.monotonic()`` clock, the
    #: samplers' clock; None when the load did not say (samplers.classify.measured_rows reads it)
    window_monotonic_s: tuple[float, float] | None = None

    def phase(self, name: str) -> PhaseInfo:
        return next(p for p in self.phases if p.name == name)

    def encoded_histograms(self) -> dict[tuple[str, str, str, str], bytes]:
        """Every merged histogram HDR-encoded, for ``histograms/`` in the run directory."""
        return {key: hist.encode(h) for key, h in self.histograms.items()}


def measured_window(phases: list[PhaseInfo], start_s: float,
                    ended_s: float | None = None) -> tuple[float, float] | None:
    """[start, end] of the measured phases of a run whose phases ran back to back from
    ``start_s``: from the first non-warm-up phase's start to the last one's end, cut at
    ``ended_s`` (the load stopped early); None when every phase is a warm-up."""
    offset, span = 0.0, None
    for phase in phases:
        if not phase.warmup:
            span = (span[0] if span else start_s + offset, start_s + offset + phase.duration_s)
        offset += phase.duration_s
    if span is None or ended_s is None:
        return span
    return span[0], min(span[1], ended_s)


def _merge_histograms(results: list[WorkerResult]) -> dict[tuple[str, str, str, str], HdrHistogram]:
    grouped: dict[tuple[str, str, str, str], list[bytes]] = defaultdict(list)
    for result in results:
        for (kind, phase), encoded in result.phase_histograms.items():
            grouped[(result.role, result.op, kind, phase)].append(encoded)
    return {key: hist.merge_encoded(encoded) for key, encoded in grouped.items()}


def _merge_counts(results: list[WorkerResult]) -> dict[tuple[str, str, str], dict[str, int]]:
    totals: dict[tuple[str, str, str], dict[str, int]] = defaultdict(
        lambda: dict.fromkeys((*COUNT_FIELDS, "missed", "late"), 0)
    )
    for result in results:
        for (phase, _second), values in result.second_counts.items():
            row = totals[(result.role, result.op, phase)]
            for name, value in zip(COUNT_FIELDS, values, strict=True):
                row[name] += value
        for phase, missed in result.missed.items():
            totals[(result.role, result.op, phase)]["missed"] += missed
        for phase, late in getattr(result, "late", {}).items():
            totals[(result.role, result.op, phase)]["late"] += late
    return dict(totals)


def merge_worker_results(
    results: list[WorkerResult], phases: list[PhaseInfo], roles: list[RoleInfo],
    statuses: list[WorkerStatus], params: dict[str, Any] | None = None,
) -> RunResult:
    """Merge the workers' records; the run failed if any worker did (reasons joined)."""
    from pglimits_core.record.timeseries import timeseries_frame  # pandas: parent only

    failures = [f"{s.role}[{s.worker}]: {s.error}" for s in statuses if s.status not in ("ok", "died")]
    samples: dict[str, dict[str, str]] = defaultdict(dict)
    for result in results:
        for name, message in result.error_samples.items():
            samples[result.role].setdefault(name, message)
    return RunResult(
        phases=phases, roles=roles, workers=statuses,
        histograms=_merge_histograms(results), counts=_merge_counts(results),
        timeseries=timeseries_frame(results),
        status="failed" if failures else "complete",
        error="; ".join(failures) or None, params=params or {}, error_samples=dict(samples),
    )
