"""Study profiles (``configs/profiles/<name>.yaml``), validated: unknown keys and bad values are
errors naming the key. ``quick`` runs on a 2-core box in minutes; ``full`` uses the source
study's sizes and repetitions."""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError

from pglimits_core.config import PROFILES_DIR
from pglimits_core.datasets.corpus import CorpusSpec
from pglimits_core.datasets.vectors import VectorSpec
from pglimits_core.errors import PGLimitsError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ForVariants(Strict):
    """An experiment of the queue study; ``variants`` (labels, e.g. "pg_delete batch=1") limits
    it to some of the profile's queue variants — empty means every one."""

    variants: list[str] = Field(default_factory=list, description="labels; empty = all")

    def includes(self, label: str) -> bool:
        return not self.variants or label in self.variants


class ThroughputSweep(ForVariants):
    consumers: list[PositiveInt] = Field(min_length=1)
    prefill: PositiveInt
    duration_s: PositiveFloat
    warmup_s: PositiveFloat = 1.0


class SteadySweep(ForVariants):
    """Producers hold the backlog near ``target_depth``; consumers swept (the SQLite seed's runs)."""

    consumers: list[PositiveInt] = Field(min_length=1)
    producers: PositiveInt = 2
    target_depth: PositiveInt = 5000
    duration_s: PositiveFloat
    warmup_s: PositiveFloat = 1.0


class LatencySweep(ForVariants):
    rates: list[PositiveFloat] = Field(min_length=1)
    producers: PositiveInt = 2
    consumers: PositiveInt = 2
    duration_s: PositiveFloat
    warmup_s: PositiveFloat = 1.0


class CliffSearch(ForVariants):
    start_rate: PositiveFloat = 1000
    producers: PositiveInt = 2
    consumers: PositiveInt = 4
    probe_s: PositiveFloat = 3
    p99_bound_ms: PositiveFloat = 50
    max_probes: PositiveInt = 5
    #: measurements per rate near the edge; a rate holds only if every one passes
    repeats: PositiveInt = 3


class RecoveryDrill(ForVariants):
    """Crash drill (``studies.queue_recovery``): labels of queue variants ("sqlite_wal batch=1"),
    seconds of producer load before the SIGKILL, and the producer's rate (null: flat out)."""

    variants: list[str] = Field(min_length=1)
    load_s: PositiveFloat = 5
    rate: PositiveFloat | None = 1000
    #: drills per variant, each its own run record (restart time is plotted against WAL replayed)
    drills: PositiveInt = 1


class ConsumerCrashDrill(ForVariants):
    """Consumer-crash drill (``studies.queue_consumer_crash``): ``consumers`` burn down
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


class QueueProfile(Strict):
    variants: list[dict[str, Any]] = Field(min_length=1)
    repetitions: PositiveInt = 1
    throughput: ThroughputSweep
    steady: SteadySweep | None = None
    latency: LatencySweep
    cliff: CliffSearch | None = None
    consumer_crash: ConsumerCrashDrill | None = None
    recovery: RecoveryDrill | None = None


class Datasets(Strict):
    """The seeded datasets of the search and vector workloads (``pglimits datasets build``);
    the specs validate themselves, so their fields and defaults live in ``datasets/`` only."""

    corpus: CorpusSpec | None = None
    vectors: VectorSpec | None = None


class Profile(Strict):
    name: str
    description: str = ""
    seed: int = 42
    #: server name -> URL/DSN of a server you run (e.g. docker compose); attached, never started
    external: dict[str, str] = Field(default_factory=dict)
    queue: QueueProfile
    datasets: Datasets = Field(default_factory=Datasets)


def load_profile(name: str) -> Profile:
    path = PROFILES_DIR / f"{name}.yaml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")))
        raise PGLimitsError(f"unknown profile {name!r}", f"use one of: {known}")
    try:
        return Profile(name=name, **yaml.safe_load(path.read_text()))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise PGLimitsError(f"profile {name}: {where}: {first['msg']}", f"fix {path}") from None
    except PGLimitsError as exc:  # a dataset spec's own check (it names the field)
        raise PGLimitsError(f"profile {name}: datasets: {exc.problem}", f"in {path}: {exc.fix}") from None
