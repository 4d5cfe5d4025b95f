"""What a compiled load's log becomes in a run record, by phase: counts, HDR histograms and
per-second rows — the part qload's and psload's readers share (each adds its own events)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pandas as pd

from pglimits_core.record import histograms as hist
from pglimits_core.record.recorder import COUNT_FIELDS
from pglimits_core.record.results import PhaseInfo, RunResult, WorkerStatus
from pglimits_core.record.timeseries import KEY_COLUMNS


class PhaseTally:
    """The warm-up (if any) and the measured window on the tool's clock (ns since its start), a
    count row per (role, op, phase) of ``role_ops``, histograms and per-second rows."""

    def __init__(self, warmup_s: float, duration_s: float, role_ops: tuple[tuple[str, str], ...]):
        self.phases = ([PhaseInfo("warmup", warmup_s, warmup=True)] if warmup_s > 0 else []) + \
            [PhaseInfo("measure", duration_s)]
        spans = {"warmup": (0.0, warmup_s * 1e9), "measure": (warmup_s * 1e9, (warmup_s + duration_s) * 1e9)}
        self.bounds = {p.name: spans[p.name] for p in self.phases}
        self.histograms: dict[tuple, Any] = {}
        self.counts = {(role, op, p.name): {k: 0 for k in (*COUNT_FIELDS, "missed", "late")}
                       for role, op in role_ops for p in self.phases}
        self.per_second: dict[tuple, dict[str, int]] = defaultdict(lambda: {k: 0 for k in COUNT_FIELDS})

    def phase_of(self, ns: float) -> str | None:
        return next((name for name, (start, end) in self.bounds.items() if start <= ns < end), None)

    def record_us(self, role: str, op: str, kind: str, phase: str, value_us: float) -> None:
        histogram = self.histograms.setdefault((role, op, kind, phase), hist.new_histogram())
        hist.record_us(histogram, max(1, round(value_us)))

    def open_loop_send(self, role: str, op: str, intended: int, began: int, done: int) -> None:
        """One open-loop operation in the phase of its intended start: ``latency`` from it,
        ``schedule_lag`` and ``service_time``; one that began after its phase ended is ``late``."""
        if (phase := self.phase_of(intended)) is None:
            return
        count = self.counts[(role, op, phase)]
        count["ops"] += 1  # as the harness counts: a late start is an op, not achieved (summary)
        count["items"] += 1
        count["late"] += began >= self.bounds[phase][1]
        self.record_us(role, op, "latency", phase, (done - intended) / 1000)
        self.record_us(role, op, "schedule_lag", phase, (began - intended) / 1000)
        self.record_us(role, op, "service_time", phase, (done - began) / 1000)
        self.per_second[(role, op, phase, int(intended // 1e9))]["ops"] += 1

    def frame(self) -> pd.DataFrame:
        rows = [{"role": role, "op": op, "phase": phase, "second": second, **values}
                for (role, op, phase, second), values in sorted(self.per_second.items())]
        return pd.DataFrame.from_records(rows) if rows else pd.DataFrame(columns=[*KEY_COLUMNS, *COUNT_FIELDS])


def reported(tool: str, output: Any) -> tuple[dict[str, Any], str | None]:
    """The one JSON object a compiled load prints last, and the run's error (None: it ran)."""
    error = output.failure()
    if error is not None:
        return {}, error
    try:
        return json.loads(output.stdout.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        return {}, f"{tool} printed no result: {output.stdout[-300:]!r}"


def finished(result: RunResult, error: str | None, reported: dict[str, Any], output: Any) -> RunResult:
    """The result's status, its one worker (the tool) and what the tool reported, in its params."""
    result.status, result.error = ("failed", error) if error else ("complete", None)
    result.workers = [WorkerStatus("tool", 0, "failed" if error else "ok", error, ended_by="duration")]
    result.params = {"tool_reported": reported, "tool_elapsed_s": round(output.elapsed_s, 3)}
    return result
