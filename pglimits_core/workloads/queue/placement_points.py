"""What placement changes, on the queue: a design's ceiling under the study's split placement and
again with everything on every core (``experiments.placement``), back to back on the same
servers, each its own record (experiment ``placement``, param ``placement_mode``).

The ceiling is the capacity experiment's (``capacity.QueueDesign``): pgbench running the adapter's
SQL for a Postgres design, the harness's burn-down for Redis. The table sets the two modes side by
side: jobs/s, the cores the server and the load used (exact window CPU) and which side set the limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from pglimits_core.experiments.capacity_table import exact_of, limit_of, records_at
from pglimits_core.experiments.placement import EXPERIMENT, under
from pglimits_core.record.summary import Summary
from pglimits_core.studies.study import Point, point
from pglimits_core.workloads.queue.capacity import QueueDesign, items_per_s
from pglimits_core.workloads.queue.prefill_size import PrefillSizer
from pglimits_core.workloads.queue.profile import PlacementCheck, QueueCapacity

if TYPE_CHECKING:
    from pglimits_core.studies.runner import RecordedRun
    from pglimits_core.studies.study import StudyRun


def placement_points(section: PlacementCheck | None, variants: list[Any]) -> list[Point]:
    if section is None:
        return []
    return [point(EXPERIMENT, v, placement_point, mode=mode, clients=section.clients, duration_s=section.duration_s,
                  warmup_s=section.warmup_s, prefill=section.prefill)
            for v in variants if section.includes(v.label) for mode in section.modes]


def placement_point(run: StudyRun, v: Any, mode: str, clients: int, duration_s: int, warmup_s: int,
                    prefill: int) -> RecordedRun:
    design = QueueDesign(v, QueueCapacity(prefill=prefill), PrefillSizer(), experiment=EXPERIMENT)
    return under(run, mode, v.server,
                 lambda: design.ceiling_run(run, clients, warmup_s, duration_s, {"placement_mode": mode}))


def placement_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per design and placement mode, read back from the records."""
    if frame.empty or "experiment" not in frame or not (frame.experiment == EXPERIMENT).any():
        return frame.iloc[0:0]
    rows = [_row(record) for record in records_at(frame[frame.experiment == EXPERIMENT].path)]
    return pd.DataFrame(rows).sort_values(["variant", "placement_mode"], ignore_index=True)


def _row(record: dict[str, Any]) -> dict[str, Any]:
    manifest, exact = record["manifest"], exact_of(record["manifest"])
    rate = items_per_s(Summary.model_validate(record["summary"])) if record["summary"] else None
    return {"variant": manifest["params"]["variant"], "placement_mode": manifest["params"]["placement_mode"],
            "jobs_per_s": rate, "tool": manifest["params"].get("tool", "harness"),
            "server_cores_used": exact.get("server_cores_used"), "load_cores_used": exact.get("load_cores_used"),
            "harness_cores_used": exact.get("harness_cores_used"), "limit": limit_of(manifest),
            "held": (manifest.get("placement") or {}).get("held"), "status": manifest["status"]}
