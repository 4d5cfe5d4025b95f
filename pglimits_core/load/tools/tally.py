"""What a compiled load's log becomes in a run record, by phase: counts, HDR histograms and
per-second rows — the part qload's and psload's readers share (each adds its own events)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import numpy as np
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

    # --- the same, for a whole log at once (numpy): a fast compiled load logs millions of events,
    # and one Python call per event took minutes a window; these count and record exactly what
    # the per-event methods above do, value for value

    def phase_masks(self, ns: np.ndarray) -> dict[str, np.ndarray]:
        """Per phase, which of ``ns`` fall in it (``phase_of``, element-wise)."""
        return {name: (ns >= start) & (ns < end) for name, (start, end) in self.bounds.items()}

    def record_many_us(self, role: str, op: str, kind: str, phase: str, values_us: np.ndarray) -> None:
        """``record_us`` of every value: each distinct whole µs once, with its count."""
        if len(values_us) == 0:
            return
        histogram = self.histograms.setdefault((role, op, kind, phase), hist.new_histogram())
        whole = np.maximum(1, np.rint(values_us)).astype(np.int64)
        for value, count in zip(*np.unique(np.minimum(whole, hist.HIGHEST_US), return_counts=True), strict=True):
            histogram.record_value(int(value), int(count))

    def count_per_second(self, role: str, op: str, phase: str, field: str, ns: np.ndarray) -> None:
        """Add one to ``field`` of the per-second row of each of ``ns`` (all in ``phase``)."""
        seconds, counts = np.unique(np.floor_divide(ns, 1e9).astype(np.int64), return_counts=True)
        for second, count in zip(seconds.tolist(), counts.tolist(), strict=True):
            self.per_second[(role, op, phase, second)][field] += count

    def latency_per_second(self, role: str, op: str, phase: str, kind: str, ns: np.ndarray,
                           values_us: np.ndarray) -> None:
        """Per second of ``ns`` (each value's own instant, all in ``phase``): ``<kind>_p50_us``,
        ``_p99_us``, ``_max_us`` and ``_count`` of ``values_us`` in its per-second row, as
        ``record.timeseries`` names them — a long window's latency over time."""
        if len(ns) == 0:
            return
        by_second = pd.Series(values_us).groupby(np.floor_divide(ns, 1e9).astype(np.int64))
        quantiles = by_second.quantile([0.5, 0.99]).unstack()
        for second, p50, p99, most, count in zip(quantiles.index.tolist(), quantiles[0.5], quantiles[0.99],
                                                 by_second.max(), by_second.size(), strict=True):
            self.per_second[(role, op, phase, int(second))].update(
                {f"{kind}_p50_us": float(p50), f"{kind}_p99_us": float(p99), f"{kind}_max_us": float(most),
                 f"{kind}_count": int(count)})

    def open_loop_sends(self, role: str, op: str, intended: np.ndarray, began: np.ndarray, done: np.ndarray) -> None:
        """``open_loop_send`` of every row of the three arrays (ns)."""
        for phase, inside in self.phase_masks(intended).items():
            i, b, d = intended[inside], began[inside], done[inside]
            count = self.counts[(role, op, phase)]
            count["ops"] += len(i)
            count["items"] += len(i)
            count["late"] += int(np.count_nonzero(b >= self.bounds[phase][1]))
            self.record_many_us(role, op, "latency", phase, (d - i) / 1000)
            self.record_many_us(role, op, "schedule_lag", phase, (b - i) / 1000)
            self.record_many_us(role, op, "service_time", phase, (d - b) / 1000)
            self.count_per_second(role, op, phase, "ops", i)

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
