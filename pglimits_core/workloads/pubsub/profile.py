"""The pub/sub study's profile section (``pubsub:`` in ``configs/profiles/*.yaml``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, NonNegativeInt, PositiveFloat, PositiveInt, model_validator

from pglimits_core.profiles import CapacitySpec, ForVariants, Strict


class FanoutSweep(ForVariants):
    """Every subscriber count × every open-loop rate (messages/s, all publishers together), plus
    a closed-loop flat-out run when ``closed_loop``."""

    subscribers: list[PositiveInt] = Field(min_length=1)
    rates: list[PositiveFloat] = Field(default_factory=list)
    closed_loop: bool = True
    publishers: PositiveInt = 1
    payload_bytes: PositiveInt = 64
    duration_s: PositiveFloat
    warmup_s: PositiveFloat = 1.0


class CommitSerialization(ForVariants):
    """Unrelated writers alone, beside NOTIFY publishers, and notifying in their own transaction
    (Postgres variants only)."""

    writers: PositiveInt = 4
    #: messages/s of the separate publisher in the ``beside_notify`` mode
    notify_rate: PositiveFloat = 1000
    duration_s: PositiveFloat = 3
    warmup_s: PositiveFloat = 1.0
    #: rounds over every mode / variant (a failure mode is a measurement too: its spread shows)
    repetitions: PositiveInt = 1


class IdleListeners(ForVariants):
    """Flat-out publishing to ``subscribers`` with this many idle listeners on other channels."""

    idle: list[NonNegativeInt] = Field(min_length=1)
    subscribers: PositiveInt = 1
    duration_s: PositiveFloat = 3
    warmup_s: PositiveFloat = 1.0
    #: rounds over every mode / variant (a failure mode is a measurement too: its spread shows)
    repetitions: PositiveInt = 1


class StuckSubscriber(ForVariants):
    """Subscriber 0 stops reading for ``stall_s`` (Postgres: inside an open transaction) while
    publishers send ``rate`` messages/s of ``payload_bytes``; bounded by the run's own deadline."""

    subscribers: PositiveInt = 3
    rate: PositiveFloat = 2000
    payload_bytes: PositiveInt = 4000
    stall_s: PositiveFloat = 5
    #: also run the same load with nobody stuck: what the others' latency is without the stall
    control: bool = True
    duration_s: PositiveFloat = 8
    warmup_s: PositiveFloat = 1.0
    #: rounds over every mode / variant (a failure mode is a measurement too: its spread shows)
    repetitions: PositiveInt = 1

    @model_validator(mode="after")
    def stall_inside_the_window(self) -> StuckSubscriber:
        """The stuck subscriber resumes inside the measured window, so what it does after (and
        what it lost) is measured; a longer stall would only meet the run's deadline."""
        if self.stall_s >= self.duration_s:
            raise ValueError(f"stall_s {self.stall_s} must be shorter than duration_s {self.duration_s}")
        return self


class PayloadLimit(ForVariants):
    sizes: list[PositiveInt] = Field(min_length=1)


class PubsubCapacity(CapacitySpec):
    """``capacity:`` (``experiments.capacity``): the core experiment's knobs plus the load's shape.
    A design per chosen variant and fan-out in ``subscribers``; ``ceiling_clients`` are the
    flat-out publishers of the ceiling, ``publishers`` the open-loop ones sharing a rate point's
    offered messages/s; the target is delivery p99 from the intended publish."""

    targets_ms: list[PositiveFloat] = Field(default_factory=lambda: [10.0], min_length=1)
    subscribers: list[PositiveInt] = Field(default_factory=lambda: [1, 10, 50], min_length=1)
    publishers: PositiveInt = 4
    payload_bytes: PositiveInt = 64
    #: who offers a rate point: the harness's Python publishers and subscriber processes, or
    #: psload (Go, tools/psload: the same verbs and accounting, compiled)
    load: Literal["harness", "psload"] = "harness"


class PubsubProfile(Strict):
    variants: list[dict[str, Any]] = Field(min_length=1)
    repetitions: PositiveInt = 1
    fanout: list[FanoutSweep] = Field(min_length=1)
    commit_serialization: CommitSerialization | None = None
    #: one setting, or one per group of variants (Redis can hold far more connections than
    #: Postgres's max_connections allows)
    idle_listeners: IdleListeners | list[IdleListeners] | None = None
    #: the pub/sub study's Postgres ``max_connections`` (None: configs/servers/postgres.conf's): a
    #: LISTEN holds a backend of its own and no pooler can share it, so 1,000 idle listeners need
    #: it raised. Every listener still costs its backend's memory, which the idle points measure.
    postgres_max_connections: PositiveInt | None = None
    stuck_subscriber: StuckSubscriber | None = None
    payload_limit: PayloadLimit | None = None
    capacity: PubsubCapacity | None = None
