"""The ``vectors:`` section of a profile (``configs/profiles/*.yaml``); the dataset itself is
the profile's ``datasets: vectors:`` spec."""

from __future__ import annotations

from pydantic import Field, PositiveFloat

from pglimits_core.profiles import CapacitySpec, Strict, WritesSpec


class Difficulty(Strict):
    lid_k: int = Field(100, ge=2, description="neighbours of the LID estimate (ANN benchmarks use 100)")
    sample: int = Field(200, ge=1, description="queries the difficulty is measured on")


class Filtered(Strict):
    """The search filtered by an attribute keeping ``selectivity_pct`` % of the vectors."""

    selectivity_pct: list[int] = Field(default_factory=lambda: [1, 10, 50], description="each 1..99")
    variants: list[str] | None = Field(None, description="approximate variants filtered (default: the sweep's); "
                                                         "one only here (an iterative scan) needs no sweep")
    ef: list[int] = Field(min_length=1)
    clients: int = Field(1, ge=1)
    repetitions: int = Field(1, ge=1)
    duration_s: float = Field(gt=0)
    warmup_s: float = Field(0.5, ge=0)
    recall_queries: int | None = Field(None, ge=1, description="recall scored on the dataset's first N queries "
                                                               "(None: every query)")


class Latency(Strict):
    """Open loop at one rate for every engine, each at its smallest ef reaching ``recall``."""

    recall: float = Field(0.95, gt=0, le=1)
    fraction: float = Field(0.5, gt=0, le=1, description="of the lowest engine's closed-loop QPS there")
    workers: int = Field(4, ge=1)
    repetitions: int = Field(1, ge=1)
    duration_s: float = Field(gt=0)
    warmup_s: float = Field(1.0, ge=0)


class Writes(WritesSpec):
    """Writes while querying (``writes.py``; the knobs: ``profiles.WritesSpec``): each engine
    queried open loop at the rate the latency section would offer (``fraction`` of the lowest
    engine's closed-loop QPS at ``recall``, each at its own ef for it); recall on the first
    ``recall_queries`` queries before, at the end of the writes run and after the cleanup."""

    variants: list[str] = Field(default_factory=lambda: ["pgvector hnsw", "qdrant hnsw"], min_length=1)
    recall: float = Field(0.95, gt=0, le=1)
    recall_queries: int | None = Field(None, ge=1)


class RecallDesign(Strict):
    """One capacity design: an engine at the ef it needs to reach ``recall`` (the upper ef of the
    pair the sweep's records bracket the target between, so the design reaches it; the capacity
    table carries the recall measured at that ef)."""

    variant: str
    ef: int = Field(ge=10, description="hnsw.ef_search / hnsw_ef, >= k = 10")
    recall: float = Field(gt=0, le=1, description="the recall target this ef reaches")


class VectorsCapacity(CapacitySpec):
    """``capacity:`` (``experiments.capacity``): the core experiment's knobs, per design of
    ``designs`` (engine, ef); the rate points' ``workers`` open-loop workers; recall scored at the
    design's first rate point on the first ``recall_queries`` queries (None: every query)."""

    targets_ms: list[PositiveFloat] = Field(default_factory=lambda: [10.0], min_length=1)
    designs: list[RecallDesign] = Field(min_length=1)
    workers: int = Field(8, ge=1, description="open-loop workers of the rate points (a connection each)")
    recall_queries: int | None = Field(None, ge=1)


class VectorsProfile(Strict):
    variants: list[str] = Field(default_factory=lambda: ["pgvector hnsw", "qdrant hnsw", "pgvector exact"])
    m: int = Field(16, ge=2)
    ef_construction: int = Field(64, ge=4)
    ef: list[int] = Field(min_length=1, description="hnsw.ef_search / hnsw_ef values, each >= k = 10")
    clients: list[int] = Field(min_length=1, description="closed-loop clients; the first also scores recall")
    repetitions: int = Field(1, ge=1)
    build_repetitions: int = Field(1, ge=1)
    duration_s: float = Field(gt=0)
    warmup_s: float = Field(1.0, ge=0)
    exact_recall_queries: int | None = Field(None, ge=1, description="the exact scan's recall scored on the "
                                                   "dataset's first N queries (None: every query)")
    recall_epsilon: float = Field(1e-5, gt=0, description="ties: a hit scores within this of the true 10th "
                                                            "inner product")
    difficulty: Difficulty = Field(default_factory=Difficulty)
    latency: Latency | None = None
    filtered: Filtered | None = None
    capacity: VectorsCapacity | None = None
    writes: Writes | None = None
