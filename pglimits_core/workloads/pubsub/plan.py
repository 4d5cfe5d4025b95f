"""The pub/sub study's plan: every point a profile's ``pubsub:`` section asks for, in run order.

Repetitions are rounds over every variant (drift on the shared box spreads over all systems);
then the failure modes (commit serialization, idle listeners, the stuck subscriber, the largest
payload), once each, and last the capacity experiment (``capacity.py``: per design its ceiling
and the rate holding each target).
"""

from __future__ import annotations

from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.experiments.capacity import capacity_points
from pglimits_core.studies.study import Point, point
from pglimits_core.workloads.pubsub.capacity import pubsub_designs
from pglimits_core.workloads.pubsub.failures import (
    COMMIT_MODES,
    commit_point,
    idle_listeners_point,
    payload_point,
    stuck_point,
)
from pglimits_core.workloads.pubsub.points import PubsubVariant, fanout_point, variant

FILTERED = ("commit_serialization", "idle_listeners", "stuck_subscriber", "payload_limit", "capacity")


def plan(section: Any, profile: Any) -> list[Point]:
    """``section`` is a ``workloads.pubsub.profile.PubsubProfile``."""
    variants = [variant(**spec) for spec in section.variants]
    check_filters(section, variants)
    points = []
    for repetition in range(section.repetitions):
        for v in variants:
            points += fanout_points(section, v, repetition)
    return (points + commit_points(section.commit_serialization, variants)
            + idle_points(section.idle_listeners, variants) + stuck_points(section.stuck_subscriber, variants)
            + payload_points(section.payload_limit, variants)
            + capacity_points(section.capacity.plan() if section.capacity else None,
                              pubsub_designs(section.capacity, variants)))


def stalls(stuck: Any) -> list[float]:
    """The stall, and 0 (nobody stuck, the same load) as its control."""
    return [stuck.stall_s, 0.0] if stuck.control else [stuck.stall_s]


def rounds(experiment: Any) -> range:
    return range(experiment.repetitions if experiment is not None else 0)


def as_list(experiment: Any) -> list[Any]:
    """An experiment given once or as a list of variants' own settings."""
    return [] if experiment is None else experiment if isinstance(experiment, list) else [experiment]


def chosen(experiment: Any, variants: list[PubsubVariant]) -> list[PubsubVariant]:
    return [v for v in variants if experiment is not None and experiment.includes(v.label)]


def check_filters(section: Any, variants: list[PubsubVariant]) -> None:
    """A label in an experiment's ``variants`` filter that names no variant is a typo that would
    drop points silently: a one-line error naming it."""
    labels = {v.label for v in variants}
    experiments = [e for name in FILTERED for e in as_list(getattr(section, name))] + list(section.fanout)
    for experiment in filter(None, experiments):
        unknown = [label for label in experiment.variants if label not in labels]
        if unknown:
            raise PGLimitsError(f"pubsub: a variants filter names {unknown[0]!r}, which is not a variant of the profile",
                                f"use one of: {', '.join(sorted(labels))}")


def fanout_points(section: Any, v: PubsubVariant, repetition: int) -> list[Point]:
    points = []
    for sweep in section.fanout:
        if not sweep.includes(v.label):
            continue
        rates = [*sweep.rates, *([None] if sweep.closed_loop else [])]
        points += [point("fanout", v, fanout_point, subscribers=n, publishers=sweep.publishers, rate=rate,
                         duration_s=sweep.duration_s, warmup_s=sweep.warmup_s, payload_bytes=sweep.payload_bytes,
                         extra_params={"repetition": repetition})
                   for n in sweep.subscribers for rate in rates]
    return points


def commit_points(cs: Any, variants: list[PubsubVariant]) -> list[Point]:
    """Every mode per round, for the variants whose publishes can share a writer's transaction."""
    return [point("commit_serialization", v, commit_point, mode=mode, writers=cs.writers, notify_rate=cs.notify_rate,
                  duration_s=cs.duration_s, warmup_s=cs.warmup_s, repetition=r)
            for r in rounds(cs) for v in chosen(cs, variants) if v.transactional for mode in COMMIT_MODES]


def idle_points(idle_listeners: Any, variants: list[PubsubVariant]) -> list[Point]:
    return [point("idle_listeners", v, idle_listeners_point, idle=idle, subscribers=il.subscribers,
                  duration_s=il.duration_s, warmup_s=il.warmup_s, repetition=r)
            for il in as_list(idle_listeners) for r in rounds(il) for v in chosen(il, variants) for idle in il.idle]


def stuck_points(st: Any, variants: list[PubsubVariant]) -> list[Point]:
    return [point("stuck_subscriber", v, stuck_point, stall_s=stall, subscribers=st.subscribers, rate=st.rate,
                  duration_s=st.duration_s, warmup_s=st.warmup_s, payload_bytes=st.payload_bytes, repetition=r)
            for r in rounds(st) for v in chosen(st, variants) for stall in stalls(st)]


def payload_points(pl: Any, variants: list[PubsubVariant]) -> list[Point]:
    return [point("payload_limit", v, payload_point, sizes=list(pl.sizes)) for v in chosen(pl, variants)]
