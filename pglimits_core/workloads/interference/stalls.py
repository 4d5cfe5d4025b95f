"""The stalls table, rebuilt from each act run's record with the edges ``stretches`` uses (the
act's exact start and end; the dead-tuple readings at their exact times from ``samplers.parquet``,
the bystanders' whole seconds from ``outcome.series``); the churn's job p99 per stretch is the one
recorded (pgbench's transactions are not kept, and were cut at the exact edges already). After
the act: the wait for the next autovacuum of the queue table and what that vacuum did (the
parsed log kept beside the record; without it, the spans in the outcome: no elapsed or removed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from pglimits_core.workloads.interference import paired
from pglimits_core.workloads.interference.evidence import BYSTANDERS, JOB_TABLES
from pglimits_core.workloads.interference.keeping_up import held_rate, unrun_share
from pglimits_core.workloads.interference.stretches import (
    STRETCHES,
    after_act_vacuum,
    bounds,
    dead_samples,
    stretch_values,
)

#: the Postgres sampler's shared-buffer hits per second (the scan work a stretch did)
HITS = "blks_hit_per_s"
#: the host sampler's load-side CPU (the bystanders' and the churn tool's processes; the study
#: process), % of one core; a second where they used ``LOAD_SATURATED`` of the load set is one
#: where the load generator, not the server, may have made the worst p99
LOAD_CPU = ("client_cpu_pct", "harness_cpu_pct")
LOAD_SATURATED = 0.9


def samplers_of(path: Any) -> pd.DataFrame | None:
    """The run's sampler rows (only the columns the dead tuples need), None when not readable."""
    found = Path(path) / "samplers.parquet" if path else None
    if found is None or not found.exists():
        return None
    try:
        frame = pd.read_parquet(found)
    except (OSError, ValueError):
        return None
    kept = ("sampler", "t", HITS, *LOAD_CPU, *(f"{table}.n_dead_tup" for table in JOB_TABLES))
    return frame[[c for c in kept if c in frame]]


def recorded_jobs(stretch: dict[str, Any]) -> dict[str, Any]:
    """The recorded job p99 and count of a stretch (older records named them claim_p99_ms, claims)."""
    return {"job_p99_ms": stretch.get("job_p99_ms", stretch.get("claim_p99_ms")),
            "jobs": stretch.get("jobs", stretch.get("claims"))}


def mechanism_evidence(frame: pd.DataFrame | None, vacuums: list[dict[str, Any]], low: float, high: float) -> dict[str, Any]:
    """A stretch's median buffer hits per second (the Postgres sampler's readings inside it) and
    the queue-table vacuums that started inside it: tuples removed (summed) and the most any of
    them found not yet removable (None where the log does not say)."""
    hits = None
    if frame is not None and HITS in frame:
        rows = frame[(frame["sampler"] == "postgres") & (frame["t"] >= low) & (frame["t"] < high)][HITS].dropna()
        hits = round(float(rows.median()), 1) if len(rows) else None
    here = [v for v in vacuums if v.get("table") in JOB_TABLES and v.get("kind", "vacuum") == "vacuum"
            and v.get("start_s") is not None and low <= v["start_s"] < high]
    return {"buffer_hits_per_s_median": hits, "vacuums_started": len(here),
            "vacuum_tuples_removed": _total(here, "tuples_removed"),
            "vacuum_not_yet_removable_max": max((v["not_yet_removable"] for v in here
                                                 if v.get("not_yet_removable") is not None), default=None)}


def _total(entries: list[dict[str, Any]], key: str) -> Any:
    known = [e[key] for e in entries if e.get(key) is not None]
    return sum(known) if known else None


def run_stretches(run: Any, entries: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """One act run's three stretch rows and, on ``after``, the autovacuum that followed the act."""
    outcome = run.outcome
    recorded = {s["stretch"]: s for s in outcome.get("stretches") or []}
    events = outcome.get("events") or {}
    if events.get("act_start_s") is None or events.get("act_end_s") is None:
        return []
    spans = bounds(events, float(run.window_s), paired.warmup_of(run))
    frame = samplers_of(run.get("path"))
    series = {role: paired.per_second(outcome, role) for role in BYSTANDERS}
    vacuums = entries if entries is not None else (outcome.get("vacuum") or {}).get("spans") or []
    offered = (outcome.get("churn") or {}).get("offered_per_s")
    rows = []
    for name in STRETCHES:
        values = (stretch_values(name, *spans[name], series, dead_samples(frame)) if frame is not None
                  else {k: v for k, v in recorded.get(name, {}).items() if k not in ("claim_p99_ms", "claims")})
        after = after_act_vacuum(vacuums, spans["during"][1]) if name == "after" else {}
        jobs = recorded_jobs(recorded.get(name, {}))
        rows.append({**values, **jobs, **churn_rates(jobs["jobs"], spans[name], offered),
                     **(held_columns(run.get("path"), events) if name == "during" else {}),
                     **load_evidence(frame, values, run.get("load_cpus")),
                     **mechanism_evidence(frame, vacuums, *spans[name]), **after})
    # the window's jobs that never ran: where above the bar, every stretch's job p99 is a lower bound
    unrun = unrun_share(rows)
    return [{**row, "jobs_never_ran_share": None if unrun is None else round(unrun, 4)} for row in rows]


def saturated_seconds(frame: pd.DataFrame | None, load_cpus: Any) -> set[int] | None:
    """The whole seconds in which the load's CPU set was saturated (None: the placement or the
    load's CPU not recorded — the older records)."""
    if frame is None or not load_cpus or pd.isna(load_cpus) or not set(LOAD_CPU) <= set(frame):
        return None
    host = frame[frame["sampler"] == "host"]
    busy = host[list(LOAD_CPU)].sum(axis=1, min_count=1)
    return {int(t) for t, pct in zip(host["t"], busy, strict=True)
            if pd.notna(pct) and pct >= LOAD_SATURATED * 100 * float(load_cpus)}


def load_evidence(frame: pd.DataFrame | None, values: dict[str, Any], load_cpus: Any) -> dict[str, Any]:
    """How many of the stretch's seconds saw the load's set saturated, and the bystanders whose
    worst second was one of them (that worst second then describes the load generator)."""
    busy = saturated_seconds(frame, load_cpus)
    if busy is None:
        return {"load_saturated_s": None, "worst_s_load_bound": None}
    low, high = values["start_s"], values["end_s"]
    here = {t for t in busy if low <= t < high}
    bound = [role for role in BYSTANDERS if (at := values.get(f"{role}_worst_at_s")) is not None and int(at) in here]
    return {"load_saturated_s": len(here), "worst_s_load_bound": ", ".join(bound) or "none"}


def held_columns(path: Any, events: dict[str, Any]) -> dict[str, Any]:
    """On a released hold's ``during`` row: how long the horizon stood and the churn's jobs/s
    over those seconds (the stretch itself runs to the act's planned end)."""
    held = held_rate(path, events)
    if held is None:
        return {"held_s": None, "held_completed_per_s": None}
    return {"held_s": round(held[0], 2), "held_completed_per_s": None if held[1] is None else round(held[1], 1)}


def churn_rates(jobs: Any, span: tuple[float, float], offered: Any) -> dict[str, Any]:
    """The churn's offered jobs/s and what it completed per second in the stretch (the hold
    cells read whether the queue kept its rate while held, not over the whole window)."""
    seconds = span[1] - span[0]
    return {"offered_per_s": offered,
            "completed_per_s": round(jobs / seconds, 1) if jobs is not None and seconds > 0 else None}
