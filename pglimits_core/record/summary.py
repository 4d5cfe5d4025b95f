"""``summary.json``: per role, operation and (non-warmup) phase — counts, rates, latencies.

Derived entirely from the run's merged histograms and counters, so it is recomputable from
``histograms/`` + the manifest. Warmup phases are left out (they stay labelled in the time
series and histograms). Latency fields are microseconds; rates are per second of the phase.
Open loop: ``offered_rate`` vs ``achieved_rate`` (ops that finished and actually *started inside
the phase*, idle polls included, errors and ``late`` starts not) and ``sustained`` = achieved ≥
95 % of offered. Closed loop has no
offered rate; its only latency is ``service_time`` (a closed loop cannot measure waiting).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pglimits_core.record import histograms as hist
from pglimits_core.record.results import RoleInfo, RunResult

SCHEMA_VERSION = 1
#: Below this fraction of the offered rate a point is "not sustained", not a latency figure.
SUSTAINED_FRACTION = 0.95


class LatencyStats(BaseModel):
    """Percentiles in µs; a percentile is None when ``missing`` says there were too few samples."""

    model_config = ConfigDict(extra="forbid")
    count: int = Field(ge=0)
    mean_us: float | None
    max_us: int | None
    p50_us: int | None
    p95_us: int | None
    p99_us: int | None
    p999_us: int | None
    missing: dict[str, str] = Field(default_factory=dict)


class OpSummary(BaseModel):
    """One role's operation in one phase."""

    model_config = ConfigDict(extra="forbid")
    role: str
    op: str
    phase: str
    loop: Literal["open", "closed"]
    workers: int = Field(ge=1)
    duration_s: float = Field(gt=0)
    ops: int = Field(ge=0)
    items: int = Field(ge=0)
    idle_polls: int = Field(ge=0)
    errors: int = Field(ge=0)
    missed: int = Field(ge=0)
    late: int = Field(default=0, ge=0)  # open loop: started after the phase ended (timed, not achieved)
    ops_per_s: float
    items_per_s: float
    offered_rate: float | None = None
    achieved_rate: float | None = None
    sustained: bool | None = None
    latencies: dict[str, LatencyStats] = Field(default_factory=dict)


class Summary(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int = SCHEMA_VERSION
    run_id: str
    status: Literal["complete", "failed"]
    error: str | None = None
    entries: list[OpSummary]


def latency_stats(histogram) -> LatencyStats:
    """HDR histogram (µs) -> stats with the too-few-samples rule applied."""
    count = histogram.get_total_count()
    values, missing = hist.percentiles_us(histogram)
    return LatencyStats(
        count=count,
        mean_us=histogram.get_mean_value() if count else None,
        max_us=histogram.get_max_value() if count else None,
        **{f"{name}_us": value for name, value in values.items()},
        missing=missing,
    )


def _rates(role: RoleInfo, counts: dict[str, int], duration_s: float) -> dict:
    rates = {"ops_per_s": counts["ops"] / duration_s, "items_per_s": counts["items"] / duration_s}
    if role.loop == "open" and role.offered_rate:
        achieved = max(0, counts["ops"] + counts["idle_polls"] - counts.get("late", 0)) / duration_s
        rates.update(offered_rate=role.offered_rate, achieved_rate=achieved,
                     sustained=achieved >= SUSTAINED_FRACTION * role.offered_rate)
    return rates


def op_summary(run: RunResult, role: RoleInfo, phase_name: str) -> OpSummary:
    duration_s = run.phase(phase_name).duration_s
    counts = run.counts.get((role.name, role.op, phase_name)) or dict.fromkeys(
        ("ops", "items", "idle_polls", "errors", "missed", "late"), 0)
    latencies = {
        kind: latency_stats(h) for (r, o, kind, p), h in sorted(run.histograms.items())
        if (r, o, p) == (role.name, role.op, phase_name)
    }
    return OpSummary(
        role=role.name, op=role.op, phase=phase_name, loop=role.loop, workers=role.workers,
        duration_s=duration_s, ops=counts["ops"], items=counts["items"],
        idle_polls=counts["idle_polls"], errors=counts["errors"], missed=counts["missed"],
        late=counts.get("late", 0),
        latencies=latencies, **_rates(role, counts, duration_s),
    )


def build_summary(run: RunResult, run_id: str) -> Summary:
    """Summary of every role in every non-warmup phase it was active in."""
    entries = [
        op_summary(run, role, phase.name)
        for phase in run.phases if not phase.warmup
        for role in run.roles if not role.active_phases or phase.name in role.active_phases
    ]
    return Summary(run_id=run_id, status=run.status, error=run.error, entries=entries)
