"""The queue over time and at depth: what seconds-long windows cannot show.

Users ask "am I going to die after 500 jobs/s for an hour?" and "must I keep the job table under
1M rows?". Two experiments answer on this box, per design of the profile's ``soak:`` section:

- **depth** — the design's ceiling (``ceiling.ceiling_point``: pgbench running the Postgres
  design's own statements, qload's burn-down for Redis; ``clients`` consumers flat out) from a
  prefilled, settled backlog of each of ``depths`` jobs. A burn-down empties what it claims, so
  the record says the depth it started from and the depth it left; a depth the window would
  nearly empty (a 10,000-job backlog lasts a few seconds at these rates) cannot be held for a
  steady window this way, and the profile names none.
- **soak** — the open-loop load (qload: producers at a fixed offered rate, closed-loop
  consumers, send → claim from the intended send) at ``share`` of the ceiling measured from the
  first depth, for ``duration_s`` on an empty queue: the per-second send → claim p99 (by the
  second each message was meant to be sent), and the Postgres samplers' dead tuples, table and
  index size, autovacuum runs and checkpoints second by second — bloat at the claim head and
  vacuum keeping up (or not) need minutes to show.

The soak's offered rate is learned from the first depth's record (``Ceilings``), so a resumed
study that reuses that record offers the same rate; a soak whose ceiling failed fails with why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.studies.study import Point
from pglimits_core.workloads.queue.ceiling import CAPACITY_TOOLS, ceiling_point
from pglimits_core.workloads.queue.prefill_size import consumed_per_s
from pglimits_core.workloads.queue.qload_points import qload_point

if TYPE_CHECKING:
    from pglimits_core.studies.runner import RecordedRun
    from pglimits_core.studies.study import StudyRun
    from pglimits_core.workloads.queue.points import QueueVariant

DEPTH, SOAK = "depth", "soak"


@dataclass
class Ceilings:
    """Each design's ceiling from the first depth, jobs/s, as its record gave it (or why not)."""

    found: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def learn(self, label: str, recorded: Any) -> None:
        rate = consumed_per_s(recorded, role=None)
        if getattr(recorded, "status", None) == "complete" and rate:
            self.found[label] = round(rate, 1)
        else:
            self.errors[label] = getattr(recorded, "error", None) or "its ceiling run measured no jobs/s"

    def of(self, label: str) -> float:
        if label not in self.found:
            raise PGLimitsError(f"queue soak: {label}'s ceiling was not measured "
                                f"({self.errors.get(label, 'its depth point has not run')})",
                                "see the depth record's error, fix it and rerun the study with --resume")
        return self.found[label]


def depth_point(run: StudyRun, v: QueueVariant, depth: int, clients: int, duration_s: int, warmup_s: int,
                ceilings: Ceilings | None = None) -> RecordedRun:
    """The ceiling from a backlog of ``depth`` jobs; ``ceilings`` (the first depth's) learns it."""
    recorded = ceiling_point(run, v, clients, duration_s, warmup_s, depth, requests=0, recorded_as=DEPTH,
                             extra_params={"depth": depth}, tool=CAPACITY_TOOLS[v.system])
    if ceilings is not None:
        ceilings.learn(v.label, recorded)
    return recorded


def soak_point(run: StudyRun, v: QueueVariant, ceilings: Ceilings, share: float, duration_s: float,
               warmup_s: float, producers: int, consumers: int) -> RecordedRun:
    """The open-loop load at ``share`` of the design's ceiling for ``duration_s``."""
    ceiling = ceilings.of(v.label)
    return qload_point(run, v, round(share * ceiling, 1), producers, consumers, duration_s, warmup_s,
                       experiment=SOAK, extra_params={"share": share, "ceiling_per_s": ceiling, "warmup_s": warmup_s})


def soak_points(spec: Any, variants: list[QueueVariant]) -> list[Point]:
    """Per design named: its depth points (the first teaching the soak its rate), then its soak."""
    if spec is None:
        return []
    chosen = [v for v in variants if spec.includes(v.label)]
    for v in chosen:
        if v.system not in CAPACITY_TOOLS:
            raise PGLimitsError(f"queue.soak names {v.label!r}, but {v.system} has no ceiling tool here",
                                f"name variants of {', '.join(sorted(CAPACITY_TOOLS))}")
    points = []
    for v in chosen:
        ceilings = Ceilings()
        for index, depth in enumerate(spec.depths):
            params = {"depth": depth, "clients": spec.clients, "duration_s": spec.ceiling_s,
                      "warmup_s": spec.ceiling_warmup_s}
            learns = ceilings if index == 0 else None
            points.append(Point(DEPTH, v.label, v.server, params,
                                lambda run, v=v, params=params, learns=learns: depth_point(run, v, **params,
                                                                                           ceilings=learns)))
        params = {"share": spec.share, "duration_s": spec.duration_s, "warmup_s": spec.warmup_s,
                  "producers": spec.producers, "consumers": spec.consumers}
        points.append(Point(SOAK, v.label, v.server, params,
                            lambda run, v=v, params=params, ceilings=ceilings: soak_point(run, v, ceilings,
                                                                                          **params)))
    return points
