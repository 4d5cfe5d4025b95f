"""The vector study's plan: every point a profile's ``vectors:`` section asks for, in run order.

The dataset's difficulty first (it needs no server state), then each engine's build (the index
every sweep point queries), then the sweep in rounds — repetition, ef, variant, client count —
so drift on the shared box spreads over every system and ef rather than landing on one; then the
open-loop latency at a matched rate (it reads the sweep's records), the capacity experiment per
(engine, ef) design (``capacity.py``: the ceiling — through each engine's C load tool
(``ceiling.py``) — then the highest rate holding the p99 target, on the same plain index), and the
filtered search (Qdrant's tagged collection replaces its plain one), and writes while querying
last: its rewrites and cleanups change an index every earlier point reads as built.
"""

from __future__ import annotations

from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.experiments.capacity import capacity_points
from pglimits_core.studies.study import Point, point
from pglimits_core.workloads.vectors.capacity import vectors_designs
from pglimits_core.workloads.vectors.points import (
    VARIANTS,
    Setup,
    VectorsVariant,
    build_point,
    check_ef,
    difficulty_point,
    filtered_point,
    latency_point,
    sweep_point,
)
from pglimits_core.workloads.vectors.writes import writes_point


def setup_of(section: Any, profile: Any) -> Setup:
    spec = profile.datasets.vectors
    if spec is None:
        raise PGLimitsError(f"profile {profile.name} has a vectors section but no datasets.vectors spec",
                            f"add datasets: vectors: {{...}} to configs/profiles/{profile.name}.yaml")
    return Setup(spec, section.m, section.ef_construction, section.recall_epsilon)


def plan(section: Any, profile: Any) -> list[Point]:
    """``section`` is a ``workloads.vectors.workload.VectorsProfile``."""
    check_ef(section.ef)
    unknown = [label for label in section.variants if label not in VARIANTS]
    if unknown:
        raise PGLimitsError(f"vectors.variants names {unknown[0]!r}", f"use some of: {', '.join(VARIANTS)}")
    setup = setup_of(section, profile)
    variants = [VARIANTS[label] for label in section.variants]
    hnsw = [v for v in variants if not v.exact]
    d = section.difficulty
    # recorded under the variant that computes it (its record's params say so): plan and record agree
    points = [point("difficulty", VARIANTS["pgvector hnsw"], difficulty_point, setup=setup, lid_k=d.lid_k,
                    sample=d.sample)]
    points += [point("build", v, build_point, setup=setup, repetition=r)
               for r in range(section.build_repetitions) for v in hnsw]
    points += sweep_points(section, setup, variants)
    filtered = _filtered_variants(section.filtered, hnsw)
    points += latency_points(section.latency, setup, hnsw)
    points += capacity_points(section.capacity.plan() if section.capacity else None,
                              vectors_designs(section.capacity, setup, variants))
    return points + filtered_points(section.filtered, setup, filtered) + writes_points(section.writes, setup, hnsw)


def _filtered_variants(f: Any, hnsw: list[VectorsVariant]) -> list[VectorsVariant]:
    """The filtered search's variants: its own list (known, approximate), else the sweep's."""
    if f is None or f.variants is None:
        return hnsw
    bad = [label for label in f.variants if label not in VARIANTS or VARIANTS[label].exact]
    if bad:
        raise PGLimitsError(f"vectors.filtered.variants names {bad[0]!r}",
                            f"use some of: {', '.join(k for k, v in VARIANTS.items() if not v.exact)}")
    return [VARIANTS[label] for label in f.variants]


def sweep_points(section: Any, setup: Setup, variants: list[VectorsVariant]) -> list[Point]:
    """In rounds: repetition, ef, variant, client count."""
    points = []
    for r in range(section.repetitions):
        for ef in section.ef:
            for v in variants:
                if v.exact and ef != section.ef[0]:
                    continue  # the exact scan has no ef: measured once per round
                points += [_sweep(section, setup, v, None if v.exact else ef, c, r) for c in section.clients]
    return points


def latency_points(lat: Any, setup: Setup, hnsw: list[VectorsVariant]) -> list[Point]:
    """After the sweep, whose records give each engine's matched ef and the common rate."""
    if lat is None:
        return []
    return [point("latency", v, latency_point, setup=setup, hnsw=hnsw, target_recall=lat.recall,
                  fraction=lat.fraction, workers=lat.workers, repetition=r, duration_s=lat.duration_s,
                  warmup_s=lat.warmup_s)
            for r in range(lat.repetitions) for v in hnsw]


def filtered_points(f: Any, setup: Setup, hnsw: list[VectorsVariant]) -> list[Point]:
    """After the sweep (a tagged build replaces the plain one): the builds of the systems whose
    filter needs one, then rounds over selectivity, ef and engine."""
    if f is None:
        return []
    check_ef(f.ef)
    bad = [p for p in f.selectivity_pct if not 1 <= p <= 99]
    if bad:
        raise PGLimitsError(f"vectors.filtered.selectivity_pct has {bad[0]}", "give percentages from 1 to 99")
    points = [point("build_tagged", v, build_point, setup=setup, repetition=0, tagged=True)
              for v in hnsw if v.system_class.filter_needs_own_build]
    for r in range(f.repetitions):
        for pct in f.selectivity_pct:
            for ef in f.ef:
                points += [point("filtered", v, filtered_point, setup=setup, selectivity_pct=pct, ef=ef,
                                 clients=f.clients, repetition=r, duration_s=f.duration_s, warmup_s=f.warmup_s,
                                 recall_queries=f.recall_queries)
                           for v in hnsw]
    return points


def writes_points(w: Any, setup: Setup, hnsw: list[VectorsVariant]) -> list[Point]:
    """In rounds: repetition, write rate, engine. The matched rate comes from the sweep's records
    over every approximate engine of the study, as the latency section's does."""
    if w is None:
        return []
    bad = [label for label in w.variants if label not in VARIANTS or VARIANTS[label].exact]
    if bad:
        raise PGLimitsError(f"vectors.writes.variants names {bad[0]!r}",
                            f"use some of: {', '.join(k for k, v in VARIANTS.items() if not v.exact)}")
    return [point("writes", VARIANTS[label], writes_point, setup=setup, hnsw=hnsw, target_recall=w.recall,
                  fraction=w.fraction, timing=w.timing(pct),
                  repetition=r, rebuild=w.rebuild, recall_queries=w.recall_queries)
            for r in range(w.repetitions) for pct in w.write_pct_per_min for label in w.variants]


def _sweep(section: Any, setup: Setup, v: VectorsVariant, ef: int | None, clients: int, repetition: int) -> Point:
    # Recall is scored once per (engine, ef): at the first client count of the first repetition.
    # Every repetition queries the one build, whose answers do not change between repetitions
    # (three scored repetitions of every engine and ef agreed exactly, recall_spread 0.000, in a
    # full run of 182 points), and scoring 1,000 queries one by one was half the sweep's time.
    # The exact scan's answers are the truth up to ties, and it answers ~7 queries/s per
    # connection over 200k vectors: its recall is a check, scored on the first queries only.
    with_recall = clients == section.clients[0] and repetition == 0
    recall_queries = section.exact_recall_queries if v.exact else None
    return point("sweep", v, sweep_point, setup=setup, ef=ef, clients=clients, repetition=repetition,
                 with_recall=with_recall, duration_s=section.duration_s, warmup_s=section.warmup_s,
                 recall_queries=recall_queries)
