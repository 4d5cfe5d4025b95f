"""The interference study's profile section (``interference:`` in ``configs/profiles/*.yaml``).

Every rate is a stated number, set per box from the other studies' results: the bystanders' as
a fraction of their own ceiling here (the comment beside each profile value says which), the
churn's as fractions (``levels``) of ``queue_rate``: jobs/s a quiet 2-vCPU box sustains with the
bystanders beside it (each window's record checks it: ``churn.sustained``).

``backlog``: jobs kept waiting in the queue during the churn (prefilled before each window; each
churn transaction adds one and takes one, so the depth stays put). A backlog makes the queue
table and its indexes big enough for autovacuum to have real pages to scan, as the source's
queue did (376k dead tuples); a few hundred jobs make a 10-30 ms vacuum that cannot produce a
few-hundred-ms episode. ``dedicated``: the other side of the study — the same rates on
OpenSearch, Qdrant and a Redis reliable queue, each its own server, at ``dedicated.levels``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt, model_validator

from pglimits_core.profiles import Strict


class Bystanders(Strict):
    """The read tenants, each open loop at a fixed rate (queries/s): the search study's ranked
    full-text query and the vector study's HNSW query at ``vector_ef`` (its recall ≈ 0.95 ef)."""

    fts_rate: PositiveFloat
    vector_rate: PositiveFloat
    vector_ef: PositiveInt = Field(ge=10, description="hnsw.ef_search: the vector study's ef for recall 0.95")
    #: worker processes per tenant (an open loop keeps every intended start however many there are)
    workers: PositiveInt = 2
    #: untimed queries of each tenant before the study's first window (caches hold the indexes)
    warmup_queries: PositiveInt = 200


class Stall(Strict):
    """A bounded act inside a churn window: ``before_s`` of plain churn, the act for ``act_s``
    (the xmin held, or autovacuum off on the queue table), then ``after_s`` to watch recovery."""

    before_s: PositiveFloat
    act_s: PositiveFloat
    after_s: PositiveFloat
    #: the churn level (a value of ``levels``) the act runs at
    level: PositiveFloat = 1.0

    @property
    def window_s(self) -> float:
        return self.before_s + self.act_s + self.after_s


class Dedicated(Strict):
    """The dedicated side: FTS on OpenSearch, vectors on Qdrant, the churn on a Redis reliable
    queue, at ``levels`` (a subset of the study's, 0 included: its own baseline). The acts and the
    control are Postgres-only (no vacuum, no xmin elsewhere): they have no dedicated window."""

    levels: list[NonNegativeFloat] = Field(min_length=1)
    #: the churn's harness worker processes (redis-benchmark cannot pace: a paced harness load)
    churn_workers: PositiveInt = 2
    #: the Redis queue's persistence (the queue study's option): ``always`` fsyncs every write
    #: before its reply, the durability class (per_commit) of the Postgres churn's commits
    churn_appendfsync: Literal["none", "everysec", "always"] = "always"
    #: OpenSearch's JVM heap (-Xms = -Xmx)
    heap: str = "1g"
    #: untimed queries of each engine once, at set-up, beyond every window's ``warmup_queries``: a
    #: JVM compiles its hot paths after thousands of calls (OpenSearch's service time fell from
    #: ~19 ms to a few ms over a quick window without it)
    engine_warmup_queries: PositiveInt = 2000
    #: seconds of unrecorded open-loop bystander load (the study's rates, the engines' own
    #: workers) before each repetition's first dedicated window: the closed-loop warm-up above
    #: left the JVM still warming through the first window (server CPU 55 % -> 38 %, GC only there)
    warmup_window_s: NonNegativeFloat = 0.0


class InterferenceProfile(Strict):
    """Levels of churn x mechanisms x repetitions, every run a window with all tenants at once."""

    bystanders: Bystanders
    #: jobs/s the churn sustains on a quiet box beside the bystanders: levels scale it
    queue_rate: PositiveFloat
    #: fractions of ``queue_rate``; 0 is the baseline (no churn)
    levels: list[NonNegativeFloat] = Field(min_length=1)
    #: pgbench clients of the churn (``-R`` spreads the rate over them)
    churn_clients: PositiveInt = 2
    #: jobs waiting in the queue during the churn, prefilled before each window (each churn
    #: transaction enqueues one and claims + acks one: the depth stays put)
    backlog: PositiveInt = 1000
    payload_bytes: PositiveInt = 845
    window_s: PositiveFloat
    repetitions: PositiveInt = 1
    #: (b) the same statement count on a table that makes no dead tuples, at this level (None: not run)
    control_level: PositiveFloat | None = None
    held_xmin: Stall | None = None
    autovacuum_off: Stall | None = None
    #: autovacuum cycles on the queue table a window must hold after its warm-up to count as "long
    #: enough" (the alignment table pools the repetitions: its verdict names the cycles it had)
    min_cycles: PositiveInt = 3
    #: seconds at the start of every window left out of every statistic (their own phase: the
    #: first second's p99 on the shared Postgres was 2.5x the rest of the window); each profile
    #: states its own (full: 2 s), none unless it does
    warmup_s: NonNegativeFloat = 0.0
    #: the dedicated side (None: Postgres side only)
    dedicated: Dedicated | None = None

    @model_validator(mode="after")
    def acts_at_a_churn_level(self) -> InterferenceProfile:
        """A stall or control is measured against churn at a level the sweep also runs."""
        for name in ("control_level", "held_xmin", "autovacuum_off"):
            value = getattr(self, name)
            level = value if not isinstance(value, Stall) else value.level
            if value is not None and level not in self.levels:
                raise ValueError(f"{name} level {level} is not one of levels {self.levels}")
        if 0 not in self.levels:
            raise ValueError("levels must include 0: the baseline every inflation is measured against")
        if self.dedicated is not None:
            if extra := sorted(set(self.dedicated.levels) - set(self.levels)):
                raise ValueError(f"dedicated levels {extra} are not among levels {self.levels}")
            if 0 not in self.dedicated.levels:
                raise ValueError("dedicated levels must include 0: the dedicated side's own baseline")
        acts = [s.before_s for s in (self.held_xmin, self.autovacuum_off) if s is not None]
        if self.warmup_s >= min([self.window_s, *acts]):
            raise ValueError(f"warmup_s {self.warmup_s} must end before the window and before any act starts")
        return self
