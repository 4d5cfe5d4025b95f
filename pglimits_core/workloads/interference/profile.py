"""The interference study's profile section (``interference:`` in ``configs/profiles/*.yaml``).

The bystanders' rates are stated numbers, a fraction of their own ceiling here (the comment
beside each profile value says which). The churn's are fractions (``levels``) of either the
churn design's own capacity, measured first in the same run on the same server
(``churn_capacity``: what the levels mean is then a share of this box's capacity, whatever the
box), or a stated ``queue_rate``; each window's record checks the rate was sustained
(``churn.sustained``).

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


class BystanderCapacity(Strict):
    """How a shared tenant's own capacity is measured first: the harness closed loop, alone."""

    workers: PositiveInt = 8
    duration_s: PositiveFloat = 30.0
    warmup_s: NonNegativeFloat = 5.0


class Bystanders(Strict):
    """The read tenants, each open loop at a fixed rate (queries/s): the search study's ranked
    full-text query, the vector study's HNSW query at ``vector_ef`` (its recall ≈ 0.95 ef) and,
    where planned, the OLTP tenant's point lookups. A tenant in ``shares`` is offered that share
    of its own capacity, measured first in the run (``capacity``); the others their stated rate."""

    fts_rate: PositiveFloat | None = None
    vector_rate: PositiveFloat | None = None
    vector_ef: PositiveInt = Field(ge=10, description="hnsw.ef_search: the vector study's ef for recall 0.95")
    #: worker processes per tenant (an open loop keeps every intended start however many there are)
    workers: PositiveInt = 2
    #: untimed queries of each tenant before the study's first window (caches hold the indexes)
    warmup_queries: PositiveInt = 200
    #: the OLTP tenant: pgbench's select-only transaction (one account's balance by primary key)
    #: open loop at this rate on the Postgres side (None: no OLTP tenant unless it has a share)
    oltp_rate: PositiveFloat | None = None
    #: accounts in its table (pgbench's scale 10: 1,000,000)
    oltp_rows: PositiveInt = 100_000
    #: tenant -> the share of its measured capacity each window offers it
    shares: dict[Literal["fts", "vector", "oltp"], float] = Field(default_factory=dict)
    capacity: BystanderCapacity | None = None

    @model_validator(mode="after")
    def every_tenant_has_a_rate(self) -> Bystanders:
        if self.shares and self.capacity is None:
            raise ValueError("bystanders.shares needs bystanders.capacity: how each tenant's capacity is measured")
        if bad := {t: s for t, s in self.shares.items() if not 0 < s <= 1}:
            raise ValueError(f"bystanders.shares {bad}: a share is in (0, 1]")
        for tenant in ("fts", "vector"):
            if getattr(self, f"{tenant}_rate") is None and tenant not in self.shares:
                raise ValueError(f"bystanders: give {tenant}_rate or a share for {tenant}")
        return self

    def has_oltp(self) -> bool:
        return self.oltp_rate is not None or "oltp" in self.shares


class Stall(Strict):
    """A bounded act inside a churn window: ``before_s`` of plain churn, the act for ``act_s``
    (the xmin held, or autovacuum off on the queue table), then ``after_s`` to watch recovery."""

    before_s: PositiveFloat
    act_s: PositiveFloat
    after_s: PositiveFloat
    #: the churn level (a value of ``levels``) the act runs at
    level: PositiveFloat = 1.0
    #: autovacuum off only: end the act once the queue holds this many dead tuples (at most
    #: ``act_s``): the debt autovacuum then pays at once (None: off for ``act_s``)
    until_dead: PositiveInt | None = None
    #: the first this many repetitions run the act (None: every one); a long act costs minutes
    repetitions: PositiveInt | None = None

    def runs_in(self, repetition: int) -> bool:
        return self.repetitions is None or repetition < self.repetitions

    @property
    def window_s(self) -> float:
        return self.before_s + self.act_s + self.after_s


class Holds(Strict):
    """The horizons production holds (``studies.horizons``), each kind for each length: at
    ``before_s`` into a churn window at ``level`` a session holds the xmin horizon (idle in a
    transaction that took an XID, or a REPEATABLE READ query running) for the length, then lets
    go; ``after_s`` watches the recovery. A hold of ``s`` seconds is the mechanism
    ``<kind>_<s>s``. Holds cost minutes each: only the first ``repetitions`` run them."""

    kinds: list[Literal["idle_xid", "rr_query"]] = Field(min_length=1)
    seconds: list[PositiveFloat] = Field(min_length=1)
    level: PositiveFloat
    before_s: PositiveFloat
    after_s: PositiveFloat
    repetitions: PositiveInt = 1
    #: the server ends the holder after this many seconds (the mitigation production sets:
    #: ``idle_in_transaction_session_timeout`` / ``statement_timeout``); None: held the whole length
    timeout_s: PositiveFloat | None = None

    def acts(self) -> list[tuple[str, dict[str, float]]]:
        """(mechanism, act) per kind and length, shorter holds first."""
        from pglimits_core.workloads.interference.mechanisms import hold_mechanism

        return [(hold_mechanism(kind, seconds), {"before_s": self.before_s, "act_s": seconds,
                                                  **({"timeout_s": self.timeout_s} if self.timeout_s else {})})
                for seconds in sorted(self.seconds) for kind in self.kinds]

    def window_s(self, act_s: float) -> float:
        return self.before_s + act_s + self.after_s


class Mitigation(Strict):
    """What postpones the split, re-measured on one planned window (``mechanism`` at ``level``,
    the same length, act and rates) with one change, in the first ``repetitions``:

    - ``tuned_autovacuum``: the queue table's own autovacuum settings — scale factor 0 with
      ``vacuum_threshold`` dead tuples, no cost delay — so a vacuum starts early and never naps;
    - ``holder_timeout``: the server ends a hold's session after ``timeout_s``
      (``idle_in_transaction_session_timeout`` / ``statement_timeout``, what production sets);
    - ``partition_rotation``: the churn on a queue partitioned into a ring of slots, the oldest
      truncated every ``period_s`` once drained (``rotation``: PgQ's way; no vacuum needed,
      whatever horizon is held);
    - ``batch_claim``: the churn moves ``batch`` jobs per transaction — one INSERT of ``batch``
      jobs, one claim of ``batch``, one ack of them — at the same jobs/s (``batch`` times fewer
      transactions, commits and WAL flushes; the same dead tuples per job). Its jobs are made
      ``batch`` at a time, so a job's latency is its transaction's: a producer that gathers them
      one by one would hold each up to ``batch`` / rate more (6.5 ms at 1,535 jobs/s and 10),
      which no record here holds.
    """

    name: Literal["tuned_autovacuum", "holder_timeout", "partition_rotation", "batch_claim"]
    mechanism: str
    level: PositiveFloat
    vacuum_threshold: PositiveInt = 1000
    timeout_s: PositiveFloat | None = None
    period_s: PositiveFloat = 20.0
    batch: PositiveInt = 10
    repetitions: PositiveInt = 1

    @model_validator(mode="after")
    def what_it_needs(self) -> Mitigation:
        from pglimits_core.workloads.interference.mechanisms import is_hold

        if self.name == "holder_timeout" and (self.timeout_s is None or not is_hold(self.mechanism)):
            raise ValueError(f"holder_timeout needs timeout_s and a hold's mechanism (idle_xid_<s>s, "
                             f"rr_query_<s>s), not {self.mechanism!r}")
        if self.name == "batch_claim" and self.batch < 2:
            raise ValueError(f"batch_claim needs batch >= 2 (1 is the unmitigated churn), not {self.batch}")
        if self.name == "partition_rotation" and not (self.mechanism == "churn" or is_hold(self.mechanism)):
            raise ValueError(f"partition_rotation rotates the churn's queue: a churn level or a hold, "
                             f"not {self.mechanism!r}")
        return self

    def settings(self) -> dict[str, float] | None:
        """The queue table's reloptions the mitigation sets (None: it sets none)."""
        if self.name != "tuned_autovacuum":
            return None
        return {"autovacuum_vacuum_scale_factor": 0, "autovacuum_vacuum_threshold": self.vacuum_threshold,
                "autovacuum_vacuum_cost_delay": 0}


class ChurnCapacity(Strict):
    """The churn design's own capacity on this server, measured first in the same run: pgbench
    runs the churn's script (enqueue, two-phase claim, ack: one job a transaction) closed loop at
    ``clients`` from the load's CPU set, the bystanders idle, the queue at its backlog. The
    churn ``levels`` are then fractions of that rate (``queue_rate`` is not used)."""

    clients: PositiveInt = 8
    duration_s: PositiveInt = 30
    warmup_s: int = Field(5, ge=0)


class Dedicated(Strict):
    """The dedicated side: FTS on OpenSearch, vectors on Qdrant, the churn on a Redis reliable
    queue, at ``levels`` (a subset of the study's, 0 included: its own baseline). The acts and the
    control are Postgres-only (no vacuum, no xmin elsewhere): they have no dedicated window."""

    levels: list[NonNegativeFloat] = Field(min_length=1)
    #: the churn's qload workers (each one Redis connection running whole jobs, open loop)
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


class Split(Strict):
    """The split side: the queue churns on a Postgres instance of its own (``postgres_queue``: the
    same binaries and settings) while the bystanders read from the project's, on the same server
    CPU set — what is left of the interference without the MVCC coupling. Baseline and churn
    levels (a subset of the study's, 0 included) at the Postgres side's rates."""

    levels: list[NonNegativeFloat] = Field(min_length=1)


class InterferenceProfile(Strict):
    """Levels of churn x mechanisms x repetitions, every run a window with all tenants at once."""

    bystanders: Bystanders
    #: jobs/s the churn levels are fractions of, as stated (None: ``churn_capacity`` measures it)
    queue_rate: PositiveFloat | None = None
    #: the churn's capacity measured first in the run: the levels are fractions of it
    churn_capacity: ChurnCapacity | None = None
    #: fractions of ``queue_rate`` (or of the measured capacity); 0 is the baseline (no churn)
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
    holds: Holds | None = None
    #: planned windows re-measured with one change each (what postpones the split)
    mitigations: list[Mitigation] = Field(default_factory=list)
    #: autovacuum cycles on the queue table a window must hold after its warm-up to count as "long
    #: enough" (the alignment table pools the repetitions: its verdict names the cycles it had)
    min_cycles: PositiveInt = 3
    #: seconds at the start of every window left out of every statistic (their own phase: the
    #: first second's p99 on the shared Postgres was 2.5x the rest of the window); each profile
    #: states its own (full: 2 s), none unless it does
    warmup_s: NonNegativeFloat = 0.0
    #: the dedicated side (None: Postgres side only)
    dedicated: Dedicated | None = None
    #: the split side: the queue on its own Postgres instance (None: not run)
    split: Split | None = None

    @model_validator(mode="after")
    def acts_at_a_churn_level(self) -> InterferenceProfile:
        """A stall or control is measured against churn at a level the sweep also runs."""
        if (self.queue_rate is None) == (self.churn_capacity is None):
            raise ValueError("give either queue_rate (a stated jobs/s) or churn_capacity (measured in the run), not both")
        for name in ("control_level", "held_xmin", "autovacuum_off", "holds"):
            value = getattr(self, name)
            level = value if not isinstance(value, (Stall, Holds)) else value.level
            if value is not None and level not in self.levels:
                raise ValueError(f"{name} level {level} is not one of levels {self.levels}")
        if 0 not in self.levels:
            raise ValueError("levels must include 0: the baseline every inflation is measured against")
        for name in ("dedicated", "split"):
            side = getattr(self, name)
            if side is None:
                continue
            if extra := sorted(set(side.levels) - set(self.levels)):
                raise ValueError(f"{name} levels {extra} are not among levels {self.levels}")
            if 0 not in side.levels:
                raise ValueError(f"{name} levels must include 0: the {name} side's own baseline")
        acts = [s.before_s for s in (self.held_xmin, self.autovacuum_off, self.holds) if s is not None]
        if self.warmup_s >= min([self.window_s, *acts]):
            raise ValueError(f"warmup_s {self.warmup_s} must end before the window and before any act starts")
        return self
