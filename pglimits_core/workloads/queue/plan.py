"""The queue study's plan: every point a profile's ``queue:`` section asks for, in run order.

Repetitions are rounds over every variant (drift on the shared box spreads over all systems);
then the capacity experiment (``capacity.py``: per design its ceiling and the rate holding each
target), the placement check and the harness benchmark (``harness_points.py``: harness and C tool
back to back), the soak (``soak.py``: ceilings from deep backlogs, then minutes at half of one),
then the consumer-crash drills (after the sweeps, whose records they must not disturb), then the backup/restore drills (they back up the live servers, so they come
before the crash drills), then the server crash drills last: they kill the servers the others measured.
The report's "what could not be run" reads this same plan.
"""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace
from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.experiments.capacity import capacity_points
from pglimits_core.studies.study import Point, point
from pglimits_core.workloads.queue.capacity import queue_designs
from pglimits_core.workloads.queue.drills.consumer_crash import EXPERIMENT as CONSUMER_CRASH
from pglimits_core.workloads.queue.drills.consumer_crash import consumer_crash_point
from pglimits_core.workloads.queue.harness_points import harness_bench_points
from pglimits_core.workloads.queue.placement_points import placement_points
from pglimits_core.workloads.queue.points import (
    QueueVariant,
    latency_point,
    steady_point,
    throughput_point,
    variant,
)
from pglimits_core.workloads.queue.prefill_size import PROBED, PrefillSizer
from pglimits_core.workloads.queue.qload_points import qload_point
from pglimits_core.workloads.queue.soak import soak_points

#: the experiment of the source studies' latency claims at their rates, over steady windows
MATCHED = "matched"

SWEEPS = ("throughput", "steady", "latency", "matched", "consumer_crash", "harness_bench", "capacity", "placement_check",
          "soak")


def plan(section: Any, profile: Any) -> list[Point]:
    """``section`` is a ``workloads.queue.profile.QueueProfile``."""
    variants = [variant(**spec) for spec in section.variants]
    check_variant_filters(section, variants)
    sizer = PrefillSizer(first=PROBED) if section.throughput.size_prefill else None  # one memory for the whole run
    points = []
    for repetition in range(section.repetitions):
        for v in variants:
            points += sweep_points(section, v, sizer, repetition)
    points += matched_points(section.matched, variants)
    points += capacity_points(section.capacity.plan() if section.capacity else None,
                              queue_designs(section.capacity, variants))
    points += placement_points(section.placement_check, variants)
    points += harness_bench_points(section.harness_bench, variants)
    points += soak_points(section.soak, variants)
    points += consumer_crash_points(section.consumer_crash, variants)
    points += backup_points(section.backup, variants)
    return points + recovery_points(section.recovery, variants)


def check_variant_filters(section: Any, variants: list[QueueVariant]) -> None:
    """A label in an experiment's ``variants`` filter that names no variant of the profile is a
    typo that would silently drop points: a one-line error naming it (the crash drill may name
    variants of its own, e.g. SQLite ``synchronous=off``, so it is not checked here)."""
    labels = {v.label for v in variants}
    filters = [(name, getattr(section, name, None)) for name in SWEEPS]
    filters += [("throughput.more_consumers", extra) for extra in section.throughput.extra_consumers()]
    filters += [("latency.more_rates", section.latency.more_rates)]
    if section.capacity is not None:
        filters += [("capacity.ceilings_only", SimpleNamespace(variants=section.capacity.ceilings_only)),
                    ("capacity.prefills", SimpleNamespace(variants=list(section.capacity.prefills)))]
    for name, spec in filters:
        unknown = [label for label in getattr(spec, "variants", None) or [] if label not in labels]
        if unknown:
            raise PGLimitsError(f"queue.{name}.variants names {unknown[0]!r}, which is not a variant of the profile",
                                f"use one of: {', '.join(sorted(labels))}")


def sweep_points(section: Any, v: QueueVariant, sizer: PrefillSizer | None = None, repetition: int = 0) -> list[Point]:
    """Round ``repetition`` of the throughput, steady-state and latency sweeps of variant ``v``
    (``sizer``: the run's prefill memory, ``prefill_size.py``)."""
    t, st, lat = section.throughput, section.steady, section.latency
    burn_down = partial(throughput_point, sizer=sizer) if sizer is not None else throughput_point
    points = [point("throughput", v, burn_down, consumers=c, prefill_count=t.prefill,
                    duration_s=t.duration_s, warmup_s=t.warmup_s)
              for c in t.consumers_for(v.label, repetition)]
    points += [point("steady", v, steady_point, consumers=c, producers=st.producers,
                     target_depth=st.target_depth, duration_s=st.duration_s, warmup_s=st.warmup_s)
               for c in (st.consumers if st and st.includes(v.label) else [])]
    return points + [point("latency", v, latency_point, rate=r, producers=lat.producers, consumers=lat.consumers,
                           duration_s=lat.duration_s, warmup_s=lat.warmup_s)
                     for r in lat.rates_for(v.label)]


def matched_points(spec: Any, variants: list[QueueVariant]) -> list[Point]:
    """``repetitions`` rounds over the matched designs, each at every one of its rates (rounds, so
    drift on the shared box spreads over every system); qload's or the harness's open loop."""
    if spec is None:
        return []
    run_point = partial(qload_point if spec.load == "qload" else latency_point, experiment=MATCHED)
    return [point(MATCHED, v, run_point, rate=r, producers=spec.producers, consumers=spec.consumers,
                  duration_s=spec.duration_s, warmup_s=spec.warmup_s)
            for _ in range(spec.repetitions) for v in variants for r in spec.rates_for(v.label)]


def consumer_crash_points(drill: Any, variants: list[QueueVariant]) -> list[Point]:
    if drill is None:
        return []
    return [point(CONSUMER_CRASH, v, consumer_crash_point, consumers=drill.consumers, prefill_count=drill.prefill,
                  kill_after_acks=drill.kill_after_acks, visibility_timeout_s=drill.visibility_timeout_s,
                  duration_s=drill.duration_s)
            for _ in range(drill.drills) for v in variants if drill.includes(v.label)]


def recovery_points(spec: Any, variants: list[QueueVariant]) -> list[Point]:
    """``drills`` rounds over the drilled variants, each drill its own record; rounds, not one
    variant's drills back to back, so drift on the shared box spreads over every system."""
    from pglimits_core.workloads.queue.drills.recovery import drilled_variant, recovery_point

    if spec is None:
        return []
    drilled = [drilled_variant(label, variants) for label in spec.variants]
    return [point("recovery", v, recovery_point, load_s=spec.load_s, rate=spec.rate, drill=index)
            for index in range(spec.drills) for v in drilled]


def backup_points(spec: Any, variants: list[QueueVariant]) -> list[Point]:
    """``drills`` rounds over the backed-up variants, each drill its own record (rounds, as the
    crash drill's, so drift on the shared box spreads over every system)."""
    from pglimits_core.workloads.queue.drills.backup import (
        EXPERIMENT,
        backed_up_variant,
        backup_point,
    )

    if spec is None:
        return []
    drilled = [backed_up_variant(label, variants) for label in spec.variants]
    return [point(EXPERIMENT, v, backup_point, queue_messages=spec.queue_messages, rate=spec.rate,
                  load_s=spec.load_s, drill=index)
            for index in range(spec.drills) for v in drilled]
