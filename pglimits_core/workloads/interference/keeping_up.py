"""Whether the churn kept its offered rate all through a window, not only on average.

A window's average hides a collapse: a 60-s hold in a 170-s window let the queue fall to a third
of its rate while held and catch up after, and the window's average still read "sustained". So
the churn is sustained only where every stretch of the window completed at least
``SUSTAINED_SHARE`` of the offered jobs/s:

- a window with an act: its own stretches (before, while the act ran, after; the edges the stalls
  table uses, from the record's ``outcome.stretches``) — the catch-up after it may run above the
  rate, the stretch while held may not fall below it;
- any other window: its measured seconds cut in ``THIRDS`` (the churn's completed jobs per
  second, from the record's ``timeseries.parquet``), so a rate that sags as a backlog grows in
  the last third is seen;
- a hold a server timeout released early: also the seconds it stood (``held_rate``).

``lowest_rate`` is that stretch's rate (jobs/s); a record without the per-second counts or the
stretches gives None, and the window's average alone decides (the older records).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pglimits_core.workloads.interference.points import SUSTAINED_SHARE

THIRDS = 3
CHURN = "churn"


def stretch_rates(stretches: list[dict[str, Any]]) -> list[float]:
    """Completed jobs/s of each recorded act stretch (``jobs`` over its seconds)."""
    rates = []
    for stretch in stretches:
        jobs = stretch.get("jobs", stretch.get("claims"))
        seconds = (stretch.get("end_s") or 0) - (stretch.get("start_s") or 0)
        if jobs is not None and seconds > 0:
            rates.append(jobs / seconds)
    return rates


def churn_counts(path: Any) -> pd.Series:
    """The churn's completed jobs per whole second of the window (empty: not recorded)."""
    found = Path(path) / "timeseries.parquet" if path else None
    if found is None or not found.exists():
        return pd.Series(dtype=float)
    try:
        frame = pd.read_parquet(found, columns=["role", "second", "items"])
    except (OSError, ValueError, KeyError):
        return pd.Series(dtype=float)
    return frame[frame.role == CHURN].groupby("second")["items"].sum().astype(float)


def mean_rate(counts: pd.Series, low: float, high: float) -> float | None:
    """Jobs/s over the whole seconds [s, s + 1) inside [low, high) (None: no whole second)."""
    seconds = list(range(int(np.ceil(low - 1e-9)), int(np.floor(high + 1e-9))))
    if not seconds or counts.empty:
        return None
    return float(counts.reindex(seconds, fill_value=0).sum()) / len(seconds)


def third_rates(path: Any, warmup_s: float, window_s: float) -> list[float]:
    """Completed jobs/s in each third of the measured seconds (whole seconds from the warm-up's
    end to the window's), from the churn's per-second counts."""
    counts = churn_counts(path)
    if counts.empty or window_s - warmup_s < THIRDS:
        return []
    edges = np.linspace(round(warmup_s), int(window_s), THIRDS + 1)
    return [rate for low, high in zip(edges, edges[1:], strict=False)
            if (rate := mean_rate(counts, float(np.floor(low)), float(np.floor(high)))) is not None]


def held_rate(path: Any, events: dict[str, Any]) -> tuple[float, float | None] | None:
    """Where a server timeout released a hold before the act's planned end: (seconds held, the
    churn's jobs/s over them). The act's recorded stretches run to the planned end, so they
    average the stall with the catch-up after the release; this is the stall alone."""
    released, start = events.get("horizon_released_s"), events.get("act_start_s")
    if released is None or start is None:
        return None
    return float(released), mean_rate(churn_counts(path), float(start), float(start) + float(released))


def lowest_rate(record_path: Any, outcome: dict[str, Any], params: dict[str, Any]) -> float | None:
    """The lowest completed jobs/s over the window's stretches (module docstring), the seconds a
    released hold stood among them; None without churn or without the evidence."""
    if not params.get("churn_rate"):
        return None
    stretches = outcome.get("stretches") or []
    rates = (stretch_rates(stretches) if stretches else
             third_rates(record_path, float(params.get("warmup_s") or 0.0), float(params.get("window_s") or 0.0)))
    held = held_rate(record_path, outcome.get("events") or {})
    rates += [held[1]] if held and held[1] is not None else []
    return round(min(rates), 2) if rates else None


def sustained(rows: pd.DataFrame) -> bool | None:
    """The churn met its offered rate in every window, over the window and in each of its
    stretches (None: no churn)."""
    offered = pd.to_numeric(rows.churn_rate, errors="coerce")
    if not (offered > 0).any():
        return None
    enough = pd.to_numeric(rows.jobs_per_s, errors="coerce") >= SUSTAINED_SHARE * offered
    lowest = pd.to_numeric(rows.get("churn_low_per_s", pd.Series(index=rows.index, dtype=float)), errors="coerce")
    # a stretch not recorded does not overrule the window's average
    throughout = lowest.isna() | (lowest >= SUSTAINED_SHARE * offered)
    return bool((enough & throughout).all())


#: above this share of its scheduled jobs never run, an act window's job p99 is a lower bound (a
#: bar, not a noise estimate: Poisson scheduling over an act window's ~300,000 jobs moves the count
#: by well under 0.5 %)
NEVER_RAN_BAR = 0.01


def unrun_share(stretches: list[dict[str, Any]]) -> float | None:
    """One window's share of the jobs pgbench's schedule offered from the warm-up's end to the
    window's end that never completed (its act's stretches: jobs, start_s, end_s, offered_per_s);
    they waited longer than the window and no p99 of the completed ones counts them (censored)."""
    try:
        seconds = max(float(s["end_s"]) for s in stretches) - min(float(s["start_s"]) for s in stretches)
        scheduled = max(float(s["offered_per_s"]) for s in stretches) * seconds
        done = sum(float(s["jobs"]) for s in stretches)
    except (KeyError, TypeError, ValueError):
        return None
    return None if not scheduled > 0 or np.isnan(scheduled) else max(0.0, 1 - done / scheduled)


def never_ran(rows: pd.DataFrame) -> float:
    """The largest ``unrun_share`` over an act's repetitions (rows of the stalls table)."""
    needed = {"jobs", "start_s", "end_s", "offered_per_s", "repetition"}
    if rows.empty or not needed <= set(rows):
        return 0.0
    shares = [unrun_share(one.to_dict("records")) for _, one in rows.groupby("repetition")]
    return max([0.0, *(s for s in shares if s is not None)])
