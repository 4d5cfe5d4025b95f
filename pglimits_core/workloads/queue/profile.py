"""The queue study's profile section (``queue:`` in ``configs/profiles/*.yaml``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt

from pglimits_core.profiles import CapacitySpec, ForVariants, Strict


class MoreConsumers(ForVariants):
    """Consumer counts measured for the named variants only (e.g. 64, where contention is the
    point), on top of the sweep's ``consumers``."""

    variants: list[str] = Field(min_length=1)
    consumers: list[PositiveInt] = Field(min_length=1)
    #: rounds that measure these counts (default: every round of the section): a curve's shape
    #: point (one consumer, 64) needs fewer repetitions than the headline counts
    repetitions: PositiveInt | None = None

    def in_round(self, repetition: int) -> bool:
        return self.repetitions is None or repetition < self.repetitions


class MoreRates(ForVariants):
    """Offered rates measured for the named variants only (those whose burn-down can reach
    them), on top of the sweep's ``rates``."""

    variants: list[str] = Field(min_length=1)
    rates: list[PositiveFloat] = Field(min_length=1)


class ThroughputSweep(ForVariants):
    """``prefill`` is the most a point prefills: a variant's first point, then the size its
    earlier points justify (``prefill_size.py``) when ``size_prefill`` (the default).
    ``more_consumers``: one entry or several (each its own variants and counts)."""

    consumers: list[PositiveInt] = Field(min_length=1)
    more_consumers: MoreConsumers | list[MoreConsumers] | None = None
    prefill: PositiveInt
    size_prefill: bool = True
    duration_s: PositiveFloat
    warmup_s: PositiveFloat = 1.0

    def consumers_for(self, label: str, repetition: int = 0) -> list[int]:
        """The consumer counts of variant ``label`` in round ``repetition``, ascending (the
        prefill sizing learns upward)."""
        more = {c for extra in self.extra_consumers() if extra.includes(label) and extra.in_round(repetition)
                for c in extra.consumers}
        return sorted(set(self.consumers) | more) if self.includes(label) else []

    def extra_consumers(self) -> list[MoreConsumers]:
        """``more_consumers`` as a list (none, one entry or several)."""
        extra = self.more_consumers
        return [] if extra is None else extra if isinstance(extra, list) else [extra]


class SteadySweep(ForVariants):
    """Producers hold the backlog near ``target_depth``; consumers swept (the SQLite seed's runs)."""

    consumers: list[PositiveInt] = Field(min_length=1)
    producers: PositiveInt = 2
    target_depth: PositiveInt = 5000
    duration_s: PositiveFloat
    warmup_s: PositiveFloat = 1.0


class LatencySweep(ForVariants):
    rates: list[PositiveFloat] = Field(min_length=1)
    more_rates: MoreRates | None = None
    producers: PositiveInt = 2
    consumers: PositiveInt = 2
    duration_s: PositiveFloat
    warmup_s: PositiveFloat = 1.0

    def rates_for(self, label: str) -> list[float]:
        """The offered rates of variant ``label``, ascending."""
        more = self.more_rates.rates if self.more_rates and self.more_rates.includes(label) else []
        return sorted(set(self.rates) | set(more)) if self.includes(label) else []


class MatchedRates(Strict):
    """``matched:`` the source studies' latency claims at their rates over steady windows — the
    latency sweep's open loop (producers at a fixed offered rate, one message per enqueue, send →
    claim from the intended send) driven by ``load`` (the compiled qload by default, which also
    offers the rates the Python producers cannot), ``repetitions`` rounds of ``duration_s``; ``at``:
    groups of variants with the rates each is offered."""

    at: list[MoreRates] = Field(min_length=1)
    producers: PositiveInt = 4
    consumers: PositiveInt = 4
    duration_s: PositiveFloat
    warmup_s: PositiveFloat = 5.0
    load: Literal["harness", "qload"] = "qload"
    repetitions: PositiveInt = 3

    @property
    def variants(self) -> list[str]:
        return list(dict.fromkeys(label for group in self.at for label in group.variants))

    def rates_for(self, label: str) -> list[float]:
        """The offered rates of variant ``label``, ascending."""
        return sorted({rate for group in self.at if label in group.variants for rate in group.rates})


class RecoveryDrill(ForVariants):
    """Crash drill (``drills.recovery``): labels of queue variants ("sqlite_wal batch=1"),
    seconds of producer load before the SIGKILL, and the producer's rate (null: flat out)."""

    variants: list[str] = Field(min_length=1)
    load_s: PositiveFloat = 5
    rate: PositiveFloat | None = 1000
    #: drills per variant, each its own run record (restart time is plotted against WAL replayed)
    drills: PositiveInt = 1


class ConsumerCrashDrill(ForVariants):
    """Consumer-crash drill (``drills.consumer_crash``): ``consumers`` burn down
    ``prefill`` messages with the design's reaper running every ``visibility_timeout_s``/2;
    consumer 0 SIGKILLs itself holding a claimed batch after ``kill_after_acks`` acknowledged
    batches (a deterministic moment); ``duration_s`` must leave the reaper time to bring the
    claims back (> time to the kill + the visibility timeout)."""

    consumers: PositiveInt = 4
    prefill: PositiveInt = 20000
    kill_after_acks: PositiveInt = 200
    visibility_timeout_s: PositiveInt = 2  # pgmq's vt_s is whole seconds
    duration_s: PositiveFloat = 8
    #: drills per variant, each its own run record
    drills: PositiveInt = 1


class BackupDrill(ForVariants):
    """Backup/restore drill (``drills.backup``): labels of queue variants (a Postgres,
    Redis or SQLite design each), the queue's size in messages at the backup (the seeds' mix,
    ~845 B a payload on average), the producer's and the consumer's rate during the hot backup,
    seconds of that load before it starts, and drills per variant (each its own run record)."""

    variants: list[str] = Field(min_length=1)
    #: the drill holds every id in memory and the queue three times on disk: 5M is ~12 GB of disk
    queue_messages: PositiveInt = Field(20000, le=5_000_000)
    rate: PositiveFloat = 200
    load_s: PositiveFloat = 2
    drills: PositiveInt = 1


class HarnessBench(ForVariants):
    """``pglimits bench harness`` as points of the study (``harness_points.py``): per variant and
    client count, the harness's closed-loop burn-down, then the same statements through the C
    tool (``ceiling.py``: pgbench for ``warmup_s + duration_s`` whole seconds on a table prefilled
    with ``prefill`` jobs, which it must outlast; redis-benchmark ``requests`` of each of the
    reliable queue's three commands) on a queue in the same state (fresh, prefilled, settled),
    back to back, so every block of records carries its own machine's harness/C-tool ratio.
    Empty ``variants``: every variant whose system has a tool. Small: ~1-2 minutes."""

    clients: list[PositiveInt] = Field(default_factory=lambda: [4], min_length=1)
    duration_s: PositiveInt = 3
    warmup_s: NonNegativeInt = 1
    prefill: PositiveInt = 60_000
    requests: PositiveInt = 100_000


class QueueCapacity(CapacitySpec):
    """``capacity:`` (``experiments.capacity``): the core experiment's knobs plus the load's shape:
    open-loop producers (one message per enqueue) and closed-loop consumers for the rate points;
    ``prefill`` is every ceiling's and check's backlog (one start state for all repetitions). ``load``:
    who drives the rate points — ``harness`` (the Python workers) or ``qload`` (the compiled load,
    ``load.tools.qload``, which also runs SQLite's engine in a compiled program).
    ``ceilings_only``: variants measured by their ceiling (and its check) alone, no rate search —
    the source studies' peak-throughput figures need no latency target. ``prefills``: a variant's
    own backlog where ``prefill`` would run out inside its windows (every repetition of it still
    starts from the same one)."""

    producers: PositiveInt = 4
    consumers: PositiveInt = 4
    prefill: PositiveInt = 800_000
    prefills: dict[str, PositiveInt] = Field(default_factory=dict)
    ceilings_only: list[str] = Field(default_factory=list)
    load: Literal["harness", "qload"] = "harness"

    def prefill_of(self, label: str) -> int:
        return self.prefills.get(label, self.prefill)


class PlacementCheck(ForVariants):
    """``placement_check:`` the designs' ceilings (``capacity.QueueDesign``) under each of ``modes``,
    back to back on the same servers (split first: the study's own placement)."""

    modes: list[str] = Field(default_factory=lambda: ["split", "shared"], min_length=2)
    clients: PositiveInt = 8
    duration_s: PositiveInt = 10
    warmup_s: PositiveInt = 2
    prefill: PositiveInt = 400_000


class Soak(ForVariants):
    """``soak:`` the queue over time and at depth (``soak.py``), per variant named (each a system
    with a capacity tool: pgbench runs a Postgres design, qload a Redis one): its ceiling from
    each backlog of ``depths`` (``clients`` consumers flat out, ``ceiling_warmup_s`` + ``ceiling_s``),
    then ``duration_s`` of the open-loop load at ``share`` of the ceiling from the first depth, on
    an empty queue — send → claim p99, dead tuples, table and index size, autovacuum runs and
    checkpoints second by second."""

    depths: list[PositiveInt] = Field(min_length=1)
    clients: PositiveInt = 8
    ceiling_s: PositiveInt = 30
    ceiling_warmup_s: NonNegativeInt = 5
    share: float = Field(0.5, gt=0, le=1)
    duration_s: PositiveFloat
    warmup_s: NonNegativeFloat = 10
    producers: PositiveInt = 4
    consumers: PositiveInt = 4


class QueueProfile(Strict):
    variants: list[dict[str, Any]] = Field(min_length=1)
    repetitions: PositiveInt = 1
    throughput: ThroughputSweep
    steady: SteadySweep | None = None
    latency: LatencySweep
    matched: MatchedRates | None = None
    consumer_crash: ConsumerCrashDrill | None = None
    recovery: RecoveryDrill | None = None
    backup: BackupDrill | None = None
    harness_bench: HarnessBench | None = None
    capacity: QueueCapacity | None = None
    #: the ceilings again with everything on every core: what placement changes
    placement_check: PlacementCheck | None = None
    soak: Soak | None = None
