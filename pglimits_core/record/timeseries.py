"""Per-second time series: throughput and latency percentiles over time, per role/op/phase.

One row per (role, op, phase, second since the run's common start). Columns: ``ops``,
``items``, ``idle_polls``, ``errors`` (counts completed in that second) and, per latency kind
present, ``<kind>_p50_us``, ``<kind>_p99_us``, ``<kind>_max_us`` and ``<kind>_count`` (µs,
from the workers' per-second 2-digit HDR histograms merged; NaN where a kind has no sample).
A per-second p99 from fewer than 100 samples is reported anyway here (it is a plot, not a
claim); ``<kind>_count`` lets a reader mask such points.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import pandas as pd

from pglimits_core.record import histograms as hist
from pglimits_core.record.recorder import COUNT_FIELDS

if TYPE_CHECKING:
    from pglimits_core.record.recorder import WorkerResult

KEY_COLUMNS = ["role", "op", "phase", "second"]


def _count_rows(results: list[WorkerResult]) -> dict[tuple, dict[str, float]]:
    rows: dict[tuple, dict[str, float]] = defaultdict(lambda: dict.fromkeys(COUNT_FIELDS, 0))
    for result in results:
        for (phase, second), values in result.second_counts.items():
            row = rows[(result.role, result.op, phase, second)]
            for name, value in zip(COUNT_FIELDS, values, strict=True):
                row[name] += value
    return rows


def _add_latency_columns(results: list[WorkerResult], rows: dict[tuple, dict[str, float]]) -> None:
    grouped: dict[tuple, list[bytes]] = defaultdict(list)
    for result in results:
        for (kind, phase, second), encoded in result.second_histograms.items():
            grouped[(result.role, result.op, phase, second, kind)].append(encoded)
    for (*row_key, kind), encoded in grouped.items():
        merged = hist.merge_encoded(encoded, hist.SECOND_DIGITS)
        row = rows[tuple(row_key)]
        row[f"{kind}_count"] = merged.get_total_count()
        row[f"{kind}_p50_us"] = merged.get_value_at_percentile(50.0)
        row[f"{kind}_p99_us"] = merged.get_value_at_percentile(99.0)
        row[f"{kind}_max_us"] = merged.get_max_value()


def timeseries_frame(results: list[WorkerResult]) -> pd.DataFrame:
    """Merge every worker's per-second counts and histograms into one tidy DataFrame."""
    rows = _count_rows(results)
    _add_latency_columns(results, rows)
    records = [dict(zip(KEY_COLUMNS, key, strict=True), **values) for key, values in rows.items()]
    frame = pd.DataFrame.from_records(records, columns=None if records else KEY_COLUMNS)
    return frame.sort_values(KEY_COLUMNS, ignore_index=True) if records else frame
