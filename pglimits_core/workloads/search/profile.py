"""The search study's profile section (``search:`` in ``configs/profiles/*.yaml``); the corpus
itself is the profile's ``datasets: corpus:`` spec."""

from __future__ import annotations

from typing import Any

from pydantic import (
    Field,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from pglimits_core.profiles import CapacitySpec, ForVariants, Strict, WritesSpec

#: the query streams a throughput sweep can ask for: one per term-frequency class of the
#: corpus, and ``mixed`` (every class's queries, interleaved in one seeded order)
STREAMS = ("frequent", "medium", "rare", "mixed")


def known_streams(streams: list[str]) -> list[str]:
    unknown = [name for name in streams if name not in STREAMS]
    if unknown:
        raise ValueError(f"unknown stream {unknown[0]!r}; use {', '.join(STREAMS)}")
    return streams


class LoadSpec(Strict):
    """Bulk load + index build, timed; each repetition drops and rebuilds every index."""

    repetitions: PositiveInt = 1
    #: documents per ``_bulk`` request (Elasticsearch, OpenSearch) and per COPY chunk (Postgres)
    batch_docs: PositiveInt = 5000


class ThroughputSweep(ForVariants):
    """Closed loop: ``clients`` worker processes, one connection each, back to back."""

    clients: list[PositiveInt] = Field(min_length=1)
    streams: list[str] = Field(default_factory=lambda: list(STREAMS), min_length=1)
    duration_s: PositiveFloat
    warmup_s: PositiveFloat = 1.0

    _streams = field_validator("streams")(known_streams)


class CrossoverSweep(ForVariants):
    """Queries grouped by the decade of their match-set size (1-9, 10-99, ... up to at least
    ``top_fraction`` of the corpus), ``per_decade`` each, seeded with exact truth; each decade
    is a closed-loop stream at ``clients``."""

    clients: PositiveInt = 4
    per_decade: PositiveInt = 20
    top_fraction: float = Field(0.2, gt=0, le=1)
    duration_s: PositiveFloat
    warmup_s: PositiveFloat = 0.5


class LatencySweep(ForVariants):
    """Open loop at rates every system sustains: ``fractions`` of the slower system's closed-loop
    peak in the same stream (read from this run's throughput records)."""

    fractions: list[float] = Field(min_length=1)
    streams: list[str] = Field(default_factory=lambda: ["mixed"], min_length=1)
    workers: PositiveInt = 8
    duration_s: PositiveFloat
    warmup_s: PositiveFloat = 1.0

    @field_validator("fractions")
    @classmethod
    def _fractions(cls, fractions: list[float]) -> list[float]:
        if any(not 0 < f < 1 for f in fractions):
            raise ValueError("fractions of the slower system's peak must lie in (0, 1)")
        return fractions

    _streams = field_validator("streams")(known_streams)


class SearchCapacity(CapacitySpec):
    """``capacity:`` (``experiments.capacity``; the designs in ``capacity.py``): the core
    experiment's knobs plus the load's shape — the query ``stream`` every step runs, and the
    open-loop ``workers`` (processes, one connection each) that offer a rate point's queries. A
    ceiling through a load tool (pgbench, vegeta) runs whole seconds: ``ceiling_s`` and
    ``warmup_s`` are rounded up for it. A probe needs >= 100 queries for its p99 (rate x ``probe_s``)."""

    targets_ms: list[PositiveFloat] = Field(default_factory=lambda: [10.0, 100.0], min_length=1)
    stream: str = "mixed"
    #: match-set classes measured by their ceiling alone (closed loop, the same steady windows): a
    #: ceiling cell each, at a fraction of a target search's time
    ceiling_streams: list[str] = Field(default_factory=list)
    workers: PositiveInt = 8

    @field_validator("stream")
    @classmethod
    def _stream(cls, stream: str) -> str:
        return known_streams([stream])[0]

    _ceiling_streams = field_validator("ceiling_streams")(known_streams)

    @model_validator(mode="after")
    def _apart(self) -> SearchCapacity:
        if self.stream in self.ceiling_streams or len(set(self.ceiling_streams)) < len(self.ceiling_streams):
            raise ValueError(f"ceiling_streams {self.ceiling_streams} must be distinct and leave out stream "
                             f"{self.stream!r} (measured with its targets already)")
        return self


class MechanismProbe(Strict):
    """``EXPLAIN (ANALYZE, BUFFERS)`` of the ranked and unranked Postgres statements over every
    crossover bucket's queries (``mechanism.py``), ``repeats`` runs each (the fastest counts).
    Needs the crossover (its buckets) and a ``pg_gin`` variant."""

    repeats: PositiveInt = 3


class WritesSweep(WritesSpec):
    """Writes while querying (``writes.py``; the knobs: ``profiles.WritesSpec``): ``stream`` open
    loop at ``fraction`` of the slower variant's closed-loop peak in it; the answers to its first
    ``quality_queries`` queries compared with each variant's own before the writes, at the end of
    the writes run and after its cleanup run."""

    stream: str = "mixed"
    quality_queries: PositiveInt = 100

    @field_validator("stream")
    @classmethod
    def _stream(cls, stream: str) -> str:
        return known_streams([stream])[0]


class SearchProfile(Strict):
    #: ``{system: pg_gin}`` (ranked, ``ranked: false`` for the unranked match),
    #: ``{system: elasticsearch}``, ``{system: opensearch}``
    variants: list[dict[str, Any]] = Field(min_length=1)
    #: JVM heap of Elasticsearch and OpenSearch (-Xms = -Xmx), the same for both
    heap: str = "4g"
    repetitions: PositiveInt = 1
    #: the untimed warm-up before each server's first timed point (``warmup.py``): the study's
    #: queries on ``warmup_clients`` connections (default: the throughput sweeps' largest client
    #: count), in slices of ``warmup_slice_s``, until two consecutive slices' throughput agree
    #: within ``warmup_tolerance`` (a fraction) after at least ``warmup_min_s``, or at the cap
    #: ``warmup_s`` (then its record says "not steady after cap"); ``warmup_s: 0``: no warm-up
    warmup_s: float = Field(120.0, ge=0)
    warmup_min_s: PositiveFloat = 20.0
    warmup_slice_s: PositiveFloat = 5.0
    warmup_tolerance: float = Field(0.10, gt=0, lt=1)
    warmup_clients: PositiveInt | None = None
    load: LoadSpec = Field(default_factory=LoadSpec)
    #: one or more sweeps (e.g. every system at every client count, the unranked Postgres
    #: match at fewer); repetitions are rounds over all of them
    throughput: list[ThroughputSweep] = Field(min_length=1)
    crossover: CrossoverSweep | None = None
    latency: LatencySweep | None = None
    mechanism: MechanismProbe | None = None
    capacity: SearchCapacity | None = None
    writes: WritesSweep | None = None

    @model_validator(mode="after")
    def _warmup_fits_its_cap(self) -> SearchProfile:
        if self.warmup_s > 0 and max(self.warmup_min_s, self.warmup_slice_s) > self.warmup_s:
            raise ValueError(f"warmup_min_s ({self.warmup_min_s:g}) and warmup_slice_s ({self.warmup_slice_s:g}) "
                             f"must not exceed the cap warmup_s ({self.warmup_s:g})")
        return self
