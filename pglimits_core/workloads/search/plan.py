"""The search study's plan: every point a profile's ``search:`` section asks for, in run order.

Load (every system's index built from scratch, timed) and correctness (every query checked on
every variant) come first: a variant that answers wrongly is not measured. Then repetitions as
rounds over the throughput sweeps — within a round every stream, client count and variant in
turn, so drift on the shared box spreads over every system — then the crossover (match-set size
buckets) and the latency points, whose offered rates come from this run's throughput records.
"""

from __future__ import annotations

from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.studies.study import Point
from pglimits_core.workloads.search.engines import SERVERS, SearchVariant, variant
from pglimits_core.workloads.search.points import (
    LOAD_LABELS,
    Setup,
    correctness_point,
    latency_point,
    load_point,
    prepared,
    throughput_point,
)
from pglimits_core.workloads.search.queries import decade_streams


def setup_of(section: Any, profile: Any) -> Setup:
    spec = profile.datasets.corpus
    if spec is None:
        raise PGLimitsError(f"profile {profile.name} has no datasets.corpus for the search study",
                            f"add datasets: corpus: {{documents: ...}} to configs/profiles/{profile.name}.yaml")
    crossover = section.crossover
    return Setup(spec, profile.name, profile.seed, crossover.per_decade if crossover else None,
                 crossover.top_fraction if crossover else 0.2, section.load.batch_docs, section.warmup_s)


def variants_of(section: Any) -> list[SearchVariant]:
    variants = [variant(**spec) for spec in section.variants]
    labels = [v.label for v in variants]
    if len(set(labels)) != len(labels):
        twice = next(label for label in labels if labels.count(label) > 1)
        raise PGLimitsError(f"search.variants lists {twice!r} twice", "give each variant once")
    sweeps = [*(("throughput", s) for s in section.throughput), ("crossover", section.crossover),
              ("latency", section.latency)]
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
    for stream in sorted(streams):
        data.queries.stream(stream, setup.seed)  # raises, naming the fix, if it has no queries


def server_options(section: Any) -> dict[str, dict[str, Any]]:
    """Both JVM engines get the same heap."""
    return {name: {"heap": section.heap} for name in ("elasticsearch", "opensearch")}


def plan(section: Any, profile: Any) -> list[Point]:
    """``section`` is a ``workloads.search.profile.SearchProfile``."""
    variants = variants_of(section)
    setup = setup_of(section, profile)
    systems = list(dict.fromkeys(v.system for v in variants))
    points = [Point("load", LOAD_LABELS[system], SERVERS[system], {"repetition": rep},
                    lambda run, system=system, rep=rep: load_point(run.ctx, setup, system, rep, run.seed))
              for rep in range(section.load.repetitions) for system in systems]
    points += [Point("correctness", v.label, v.server, {},
                     lambda run, v=v: correctness_point(run.ctx, setup, v, run.seed)) for v in variants]
    for rep in range(section.repetitions):
        points += throughput_round(section, setup, variants, rep)
    points += crossover_points(section, setup, variants)
    return points + latency_points(section, setup, variants)


def throughput_round(section: Any, setup: Setup, variants: list[SearchVariant], rep: int) -> list[Point]:
    points = []
    for sweep in section.throughput:
        for stream in sweep.streams:
            for clients in sweep.clients:
                for v in (v for v in variants if sweep.includes(v.label)):
                    params = {"stream": stream, "clients": clients, "repetition": rep}
                    points.append(Point("throughput", v.label, v.server, params,
                                        lambda run, v=v, stream=stream, clients=clients, sweep=sweep:
                                        throughput_point(run.ctx, setup, v, stream, clients, sweep.duration_s,
                                                         sweep.warmup_s, run.seed)))
    return points


def crossover_points(section: Any, setup: Setup, variants: list[SearchVariant]) -> list[Point]:
    cross = section.crossover
    if cross is None:
        return []
    streams = decade_streams(setup.spec.documents, cross.top_fraction)
    return [Point("crossover", v.label, v.server, {"stream": stream, "clients": cross.clients, "repetition": rep},
                  lambda run, v=v, stream=stream: throughput_point(run.ctx, setup, v, stream, cross.clients,
                                                                   cross.duration_s, cross.warmup_s, run.seed,
                                                                   experiment="crossover"))
            for rep in range(section.repetitions) for stream in streams
            for v in variants if cross.includes(v.label)]


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
    return [Point("latency", v.label, v.server, {"stream": stream, "fraction": fraction, "repetition": rep},
                  lambda run, v=v, stream=stream, fraction=fraction: latency_point(
                      run.ctx, setup, v, stream, fraction, latency.workers, latency.duration_s,
                      latency.warmup_s, run.seed, labels))
            for rep in range(section.repetitions) for stream in latency.streams
            for fraction in latency.fractions for v in chosen]
