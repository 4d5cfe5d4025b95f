"""Study profiles (``configs/profiles/<name>.yaml``), validated: unknown keys and bad values are
errors naming the key. ``quick`` runs on a 2-core box in minutes; ``full`` uses the source
study's sizes and repetitions. Each workload's section (``queue:``, ...) is optional and
validated by the workload's own model (``registry``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError

from pglimits_core import registry
from pglimits_core.config import profiles_dir
from pglimits_core.datasets.corpus import CorpusSpec
from pglimits_core.datasets.vectors import VectorSpec
from pglimits_core.errors import PGLimitsError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ForVariants(Strict):
    """An experiment of a study with variants; ``variants`` (labels, e.g. "pg_delete batch=1")
    limits it to some of the section's variants — empty means every one."""

    variants: list[str] = Field(default_factory=list, description="labels; empty = all")

    def includes(self, label: str) -> bool:
        return not self.variants or label in self.variants


class CliffSearch(ForVariants):
    """The highest offered rate a variant sustains with its p99 under ``p99_bound_ms``: probes of
    ``probe_s`` from ``start_rate``, at most ``max_probes``; a rate near the edge holds only if
    each of its ``repeats`` measurements passes. A workload adds who produces and who consumes."""

    start_rate: PositiveFloat = 1000
    probe_s: PositiveFloat = 3
    p99_bound_ms: PositiveFloat = 50
    max_probes: PositiveInt = 5
    #: measurements per rate near the edge; a rate holds only if every one passes
    repeats: PositiveInt = 3


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
    datasets: Datasets = Field(default_factory=Datasets)
    #: workload name -> its validated section (``registry``); a missing one is not run
    workloads: dict[str, Any] = Field(default_factory=dict)

    def section(self, workload: str) -> Any:
        """The profile's section for ``workload`` (its own pydantic model), None if it has none."""
        return self.workloads.get(workload)


def _workload_sections(name: str, path: Path, raw: dict[str, Any]) -> dict[str, Any]:
    """Pops each registered workload's section out of ``raw`` and validates it with the
    workload's own model; the error names the key path (``queue.throughput.consumers``)."""
    sections = {}
    for workload in registry.names():
        if workload in raw:
            try:
                sections[workload] = registry.workload(workload).section.model_validate(raw.pop(workload))
            except ValidationError as exc:
                raise _invalid(name, path, exc, prefix=(workload,)) from None
    return sections


def _invalid(name: str, path: Path, exc: ValidationError, prefix: tuple[str, ...] = ()) -> PGLimitsError:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in (*prefix, *first["loc"]))
    fix = f"fix {path}"
    if first["type"] == "extra_forbidden" and not prefix and len(first["loc"]) == 1:
        fix += f" (the workload sections are: {', '.join(registry.names())})"
    return PGLimitsError(f"profile {name}: {where}: {first['msg']}", fix)


def load_profile(name: str) -> Profile:
    path = profiles_dir() / f"{name}.yaml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in profiles_dir().glob("*.yaml")))
        raise PGLimitsError(f"unknown profile {name!r}", f"use one of: {known}")
    raw = yaml.safe_load(path.read_text()) or {}
    if not isinstance(raw, dict):
        raise PGLimitsError(f"profile {name}: not a mapping of keys to values", f"fix {path}")
    sections = _workload_sections(name, path, raw)  # what is left are the profile's own keys
    try:
        return Profile(name=name, **raw, workloads=sections)
    except ValidationError as exc:
        raise _invalid(name, path, exc) from None
    except PGLimitsError as exc:  # a dataset spec's own check (it names the field)
        raise PGLimitsError(f"profile {name}: datasets: {exc.problem}", f"in {path}: {exc.fix}") from None
