"""The search study's plan: every point a profile's ``search:`` section asks for, in run order.

Load (every system's index built from scratch, timed) and correctness (every query checked on
every variant) come first: a variant that answers wrongly is not measured. Then repetitions as
rounds over the throughput sweeps — within a round every stream, client count and variant in
turn, so drift on the shared box spreads over every system — then the crossover (match-set size
buckets), the latency points, whose offered rates come from this run's throughput records, and
the capacity experiment (``capacity.py``: the ceiling — through pgbench and vegeta where the
system has one (``ceiling.py``) — and the highest rate holding each target).
"""

from __future__ import annotations

from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.experiments.capacity import capacity_points
from pglimits_core.studies.study import Point, point
from pglimits_core.workloads.search.capacity import search_designs
from pglimits_core.workloads.search.correctness import correctness_point
from pglimits_core.workloads.search.loading import load_point
from pglimits_core.workloads.search.mechanism import SYSTEM as MECHANISM_SYSTEM
from pglimits_core.workloads.search.mechanism import mechanism_point
from pglimits_core.workloads.search.points import crossover_point, latency_point, throughput_point
from pglimits_core.workloads.search.prepared import Setup, prepared
from pglimits_core.workloads.search.queries import decade_streams
from pglimits_core.workloads.search.systems.registry import jvm_servers
from pglimits_core.workloads.search.variant import SearchVariant, load_variant, variant
from pglimits_core.workloads.search.warmup import WarmupRule
from pglimits_core.workloads.search.writes import writes_point


def setup_of(section: Any, profile: Any) -> Setup:
    spec = profile.datasets.corpus
    if spec is None:
        raise PGLimitsError(f"profile {profile.name} has no datasets.corpus for the search study",
                            f"add datasets: corpus: {{documents: ...}} to configs/profiles/{profile.name}.yaml")
    crossover = section.crossover
    return Setup(spec, profile.name, profile.seed, crossover.per_decade if crossover else None,
                 crossover.top_fraction if crossover else 0.2, section.load.batch_docs, warmup_rule(section))


def warmup_rule(section: Any) -> WarmupRule:
    """The profile's warm-up knobs; its clients default to the throughput sweeps' largest count
    (the load the warm-up prepares the server for)."""
    clients = section.warmup_clients or max(c for sweep in section.throughput for c in sweep.clients)
    return WarmupRule(cap_s=section.warmup_s, min_s=section.warmup_min_s, slice_s=section.warmup_slice_s,
                      tolerance=section.warmup_tolerance, clients=clients)


def variants_of(section: Any) -> list[SearchVariant]:
    variants = [variant(**spec) for spec in section.variants]
    labels = [v.label for v in variants]
    if len(set(labels)) != len(labels):
        twice = next(label for label in labels if labels.count(label) > 1)
        raise PGLimitsError(f"search.variants lists {twice!r} twice", "give each variant once")
    sweeps = [*(("throughput", s) for s in section.throughput), ("crossover", section.crossover),
              ("latency", section.latency), ("capacity", section.capacity), ("writes", section.writes)]
    for name, sweep in sweeps:
        unknown = [label for label in getattr(sweep, "variants", None) or [] if label not in labels]
        if unknown:
            raise PGLimitsError(f"search.{name}.variants names {unknown[0]!r}, which is not a variant of the profile",
                                f"use one of: {', '.join(labels)}")
    return variants


def prepare(section: Any, profile: Any) -> None:
    """Before any server starts: the dataset verified, every stream with queries."""
    setup = setup_of(section, profile)
    data = prepared(setup)
    streams = {stream for sweep in section.throughput for stream in sweep.streams}
    streams |= set(section.latency.streams) if section.latency else set()
    streams |= {section.capacity.stream, *section.capacity.ceiling_streams} if section.capacity else set()
    for stream in sorted(streams):
        data.queries.stream(stream, setup.seed)  # raises, naming the fix, if it has no queries


def server_options(section: Any) -> dict[str, dict[str, Any]]:
    """Both JVM engines get the same heap."""
    return {name: {"heap": section.heap} for name in jvm_servers()}


def plan(section: Any, profile: Any) -> list[Point]:
    """``section`` is a ``workloads.search.profile.SearchProfile``."""
    variants = variants_of(section)
    setup = setup_of(section, profile)
    systems = list(dict.fromkeys(v.system for v in variants))
    points = [point("load", load_variant(system), load_point, setup=setup, repetition=rep)
              for rep in range(section.load.repetitions) for system in systems]
    points += [point("correctness", v, correctness_point, setup=setup) for v in variants]
    for rep in range(section.repetitions):
        points += throughput_round(section, setup, variants, rep)
    points += crossover_points(section, setup, variants)
    points += mechanism_points(section, setup, systems)
    points += latency_points(section, setup, variants)
    # the headline on servers every sweep has warmed: the ceiling and capacity per target; then
    # writes while querying, whose rewrites and cleanups change the index every earlier point read
    points += capacity_points(section.capacity.plan() if section.capacity else None,
                              search_designs(section.capacity, setup, variants))
    return points + writes_points(section, setup, variants)


def writes_points(section: Any, setup: Setup, variants: list[SearchVariant]) -> list[Point]:
    """In rounds: repetition, write rate, variant; the matched rate from this run's throughput
    records, as the latency points'."""
    writes = section.writes
    if writes is None:
        return []
    chosen = [v for v in variants if writes.includes(v.label)]
    for v in chosen:
        if not any(writes.stream in s.streams and s.includes(v.label) for s in section.throughput):
            raise PGLimitsError(f"search.writes needs {v.label}'s throughput in stream {writes.stream!r} "
                                "to choose its rate", "add the stream to a throughput sweep of that variant")
    labels = [v.label for v in chosen]
    return [point("writes", v, writes_point, setup=setup, stream=writes.stream, fraction=writes.fraction, labels=labels,
                  timing=writes.timing(pct),
                  repetition=rep, quality_queries=writes.quality_queries, rebuild=writes.rebuild)
            for rep in range(writes.repetitions) for pct in writes.write_pct_per_min for v in chosen]


def throughput_round(section: Any, setup: Setup, variants: list[SearchVariant], rep: int) -> list[Point]:
    return [point("throughput", v, throughput_point, setup=setup, stream=stream, clients=clients,
                  duration_s=sweep.duration_s, warmup_s=sweep.warmup_s, repetition=rep)
            for sweep in section.throughput for stream in sweep.streams for clients in sweep.clients
            for v in variants if sweep.includes(v.label)]


def crossover_points(section: Any, setup: Setup, variants: list[SearchVariant]) -> list[Point]:
    cross = section.crossover
    if cross is None:
        return []
    streams = decade_streams(setup.spec.documents, cross.top_fraction)
    return [point("crossover", v, crossover_point, setup=setup, stream=stream, clients=cross.clients,
                  duration_s=cross.duration_s, warmup_s=cross.warmup_s, repetition=rep)
            for rep in range(section.repetitions) for stream in streams
            for v in variants if cross.includes(v.label)]


def mechanism_points(section: Any, setup: Setup, systems: list[str]) -> list[Point]:
    """The EXPLAIN probe of Postgres's two statements per crossover bucket (``mechanism.py``)."""
    if section.mechanism is None:
        return []
    if section.crossover is None or MECHANISM_SYSTEM not in systems:
        raise PGLimitsError(f"search.mechanism probes the crossover's buckets on {MECHANISM_SYSTEM}",
                            f"add search.crossover and a {MECHANISM_SYSTEM} variant, or drop search.mechanism")
    return [point("mechanism", load_variant(MECHANISM_SYSTEM), mechanism_point, setup=setup,
                  repeats=section.mechanism.repeats)]


def latency_points(section: Any, setup: Setup, variants: list[SearchVariant]) -> list[Point]:
    latency = section.latency
    if latency is None:
        return []
    chosen = [v for v in variants if latency.includes(v.label)]
    labels = [v.label for v in chosen]
    for stream in latency.streams:  # the matched rate is read from this run's throughput records
        for v in chosen:
            if not any(stream in s.streams and s.includes(v.label) for s in section.throughput):
                raise PGLimitsError(f"search.latency needs {v.label}'s throughput in stream {stream!r} "
                                    "to choose its rates", "add the stream to a throughput sweep of that variant")
    return [point("latency", v, latency_point, setup=setup, stream=stream, fraction=fraction,
                  workers=latency.workers, duration_s=latency.duration_s, warmup_s=latency.warmup_s,
                  labels=labels, repetition=rep)
            for rep in range(section.repetitions) for stream in latency.streams
            for fraction in latency.fractions for v in chosen]
