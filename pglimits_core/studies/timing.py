"""Where a study's time goes: per point, its wall time and the part spent under measured load.

A full study's budget is spent as much on what surrounds the measurement windows (prefills,
resets and VACUUMs, index builds, server restarts, JVM warm-up, drains) as on the windows
themselves. ``run_points`` times every point; a load run adds the seconds its load driver or C
tool ran (``RecordedRun.load_s``). ``breakdown`` sums them per experiment, and the outcome file
keeps them, so a reader (and ``run_all.py``) can see which experiment to make cheaper.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class PointTime:
    experiment: str
    variant: str
    wall_s: float
    load_s: float  # 0.0 for a point with no load run (a build, a drill, a reused record)

    def to_dict(self) -> dict[str, Any]:
        return {key: round(value, 2) if isinstance(value, float) else value for key, value in asdict(self).items()}


@contextmanager
def stopwatch() -> Iterator[dict[str, float]]:
    """``with stopwatch() as t:`` ... ``t["s"]`` is the block's wall seconds after it ends."""
    started, elapsed = time.monotonic(), {"s": 0.0}
    try:
        yield elapsed
    finally:
        elapsed["s"] = time.monotonic() - started


def load_seconds(result: Any) -> float:
    """The load seconds of a point's result: its run record's, or the sum over a list of them."""
    results = result if isinstance(result, list) else [result]
    return sum(getattr(r, "load_s", None) or 0.0 for r in results)


def breakdown(times: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per experiment, largest first: points, wall minutes, minutes under load, and the rest
    (set-up and tear-down around the windows) as a share of the wall time."""
    totals: dict[str, dict[str, float]] = defaultdict(lambda: {"points": 0, "wall_s": 0.0, "load_s": 0.0})
    for entry in times:
        total = totals[entry["experiment"]]
        total["points"] += 1
        total["wall_s"] += entry["wall_s"]
        total["load_s"] += entry["load_s"]
    rows = [{"experiment": name, "points": int(t["points"]), "wall_min": round(t["wall_s"] / 60, 1),
             "under_load_min": round(t["load_s"] / 60, 1),
             "around_load_pct": round(100 * (1 - t["load_s"] / t["wall_s"])) if t["wall_s"] else None}
            for name, t in totals.items()]
    return sorted(rows, key=lambda row: -row["wall_min"])


def breakdown_lines(workload: str, outcome: dict[str, Any]) -> list[str]:
    """The breakdown as text for a terminal: one line per experiment, then the servers' start."""
    rows = breakdown(outcome.get("timings", []))
    lines = [f"  {workload} {row['experiment']}: {row['wall_min']} min over {row['points']} points, "
             f"{row['under_load_min']} min under load ({row['around_load_pct']} % around it)" for row in rows]
    if outcome.get("servers_start_s") is not None:
        lines.append(f"  {workload} servers: {outcome['servers_start_s']:.0f} s to start")
    return lines


def committed_time_table(runs_dirs: dict[str, Path]) -> str:
    """Markdown: per workload (its committed runs directory), the study's wall time and, per
    experiment, points and minutes — from the ``<workload>.outcome.json`` the export copied.
    A workload whose records predate the timing record says so."""
    import json

    lines = ["| workload | experiment | points | wall min | under load min | around the load |", "|---|---|---:|---:|---:|---:|"]
    for workload, runs in runs_dirs.items():
        path = Path(runs) / f"{workload}.outcome.json"
        timings = json.loads(path.read_text()).get("timings") if path.exists() else None
        if not timings:
            lines.append(f"| {workload} | not recorded in these records (they predate the per-point timing) | | | | |")
            continue
        rows = breakdown(timings)
        total = sum(row["wall_min"] for row in rows)
        lines.append(f"| **{workload}** | **all** | **{sum(row['points'] for row in rows)}** | **{total:.1f}** | | |")
        lines += [f"| | {row['experiment']} | {row['points']} | {row['wall_min']} | {row['under_load_min']} | "
                  f"{row['around_load_pct']} % |" for row in rows]
    return "\n".join(lines)
