"""Study profiles (``configs/profiles/<name>.yaml``), validated: unknown keys and bad values are
errors naming the key; a YAML syntax error names the file and the line; an empty file is refused.
A profile is given by name (``quick``, ``quick.yaml``) or by path (``configs/profiles/quick.yaml``,
``/abs/path/x.yaml``): every caller (``run_all.py``, ``pglimits``, the notebooks) accepts both. ``quick`` runs on a 2-core box in minutes; ``full`` uses the source
study's sizes and repetitions. Each workload's section (``queue:``, ...) is optional and
validated by the workload's own model (``registry``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError

from pglimits_core import registry
from pglimits_core.config import PROJECT_ROOT, profiles_dir, repo_relative
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


class CapacitySpec(ForVariants):
    """The capacity experiment (``experiments.capacity``): the ceiling at ``ceiling_clients``
    (``repetitions`` windows of ``ceiling_s``), then per latency target a search with probes of
    ``probe_s`` from ``start_rate`` (at most ``max_probes``) and ``confirmations`` steady windows of
    ``steady_s`` at the rate found (a failure steps down × ``step_down``, at most ``max_steps_down``
    times). A window that decides a cell is ``steady_s`` long: 30 s or more in ``full``. Where a
    design's ceiling ran the system's C tool, ``check_repetitions`` windows of the harness at the
    same clients check that the two loads agree."""

    targets_ms: list[PositiveFloat] = Field(default_factory=lambda: [10.0, 50.0], min_length=1)
    ceiling_clients: list[PositiveInt] = Field(default_factory=lambda: [4], min_length=1)
    ceiling_s: PositiveFloat = 30
    warmup_s: PositiveFloat = 5
    repetitions: PositiveInt = 3
    probe_s: PositiveFloat = 5
    start_rate: PositiveFloat = 500
    max_probes: PositiveInt = 8
    steady_s: PositiveFloat = 30
    confirmations: PositiveInt = 3
    # x0.7 up to 3 times (to 0.34 of the rate found): a 5-s probe that held can fail its 30-s
    # windows by far more than one small step (a queue stalling 11-21 s into a window)
    step_down: float = Field(0.7, gt=0, lt=1)
    max_steps_down: int = Field(3, ge=0)
    #: windows of the agreement check (the harness on the ceiling a C tool measured; 0: none)
    check_repetitions: int = Field(1, ge=0)
    #: after a compiled load's confirmations, one harness window at the lowest confirmed rate
    rate_check: bool = True
    #: start the search at this share of the ceiling the design has just measured (where its
    #: design reads a ceiling's rate), not at ``start_rate``: doubling from a fixed start spends
    #: the probes far below a fast server's knee and leaves the bracket wide
    start_share: float | None = Field(None, gt=0, le=1)
    #: steady sets bisecting a bracket a step down left wider than ``narrow_to`` (0: none)
    narrow_steps: int = Field(0, ge=0)
    narrow_to: float = Field(1.2, gt=1)

    def plan(self) -> Any:
        from pglimits_core.experiments.capacity import CapacityPlan

        return CapacityPlan(tuple(self.targets_ms), tuple(self.ceiling_clients), self.ceiling_s, self.warmup_s,
                            self.repetitions, self.probe_s, self.start_rate, self.max_probes, self.steady_s,
                            self.confirmations, self.step_down, self.max_steps_down,
                            check_repetitions=self.check_repetitions, rate_check=self.rate_check,
                            start_share=self.start_share, narrow_steps=self.narrow_steps, narrow_to=self.narrow_to)


class WritesSpec(ForVariants):
    """Writes while querying (``experiments.writes``): per write rate (``write_pct_per_min`` % of
    the collection per minute) and repetition, a writes run — queries for ``before_s``, then with
    ``writers`` processes rewriting for ``writing_s``, then ``after_s`` — and a cleanup run of
    ``cleanup_s`` while the system's cleanup runs; ``rebuild``: each point from a fresh build."""

    write_pct_per_min: list[PositiveFloat] = Field(min_length=1, description="share of the collection "
                                                   "rewritten per minute, one point each (1 = 1 %/min)")
    fraction: float = Field(0.5, gt=0, lt=1, description="of the slower system's closed-loop rate")
    workers: PositiveInt = Field(8, description="open-loop query workers (a connection each)")
    repetitions: PositiveInt = 1
    before_s: PositiveFloat
    writing_s: PositiveFloat
    after_s: PositiveFloat
    cleanup_s: PositiveFloat = Field(30.0, description="the cleanup run: queries this long while the "
                                                       "system's cleanup runs once from its start")
    writers: PositiveInt = Field(1, description="writer processes, the write rate split between them")
    warmup_s: float = Field(1.0, ge=0)
    rebuild: bool = Field(True, description="each point from a fresh build (else: the index as the "
                                            "point before left it, after its cleanup)")

    def timing(self, write_pct_per_min: float) -> Any:
        from pglimits_core.experiments.writes import WritesTiming

        return WritesTiming(write_pct_per_min, self.before_s, self.writing_s, self.after_s, self.warmup_s,
                            self.workers, self.cleanup_s, self.writers)


class Datasets(Strict):
    """The seeded datasets of the search and vector workloads (``pglimits datasets build``);
    the specs validate themselves, so their fields and defaults live in ``datasets/`` only."""

    corpus: CorpusSpec | None = None
    vectors: VectorSpec | None = None


class PlacementSpec(Strict):
    """Where servers and load run (``pglimits_core.placement``): ``split`` gives the servers one
    CPU set and the load the other (default: the first and second half of the allowed CPUs, CPU 0
    and CPU 1 on a 2-core box); ``shared`` runs everything on every CPU (the old placement)."""

    mode: Literal["split", "shared"] = "split"
    server_cpus: list[int] | None = None
    load_cpus: list[int] | None = None

    def resolve(self) -> Any:
        from pglimits_core.placement import resolve

        return resolve(self.mode, self.server_cpus, self.load_cpus)


class Profile(Strict):
    name: str
    description: str = ""
    seed: int = 42
    #: server name -> URL/DSN of a server you run (e.g. docker compose); attached, never started
    external: dict[str, str] = Field(default_factory=dict)
    datasets: Datasets = Field(default_factory=Datasets)
    #: workload name -> its validated section (``registry``); a missing one is not run
    workloads: dict[str, Any] = Field(default_factory=dict)
    #: the files each figure is written as: PNG (the report, the README) and SVG (for a write-up);
    #: rendering each costs a full draw, seconds per workload on a 2-vCPU box
    figure_formats: list[Literal["png", "svg"]] = Field(default_factory=lambda: ["png", "svg"], min_length=1)
    #: each server's harness ceiling (a no-op round trip on one connection, as a study begins and
    #: ends; ``studies.calibration``) runs this long after a warm-up as long, capped at 1 s
    harness_ceiling_s: float = Field(1.5, gt=0, le=10)
    #: the CPU sets of servers and load (split: the two-host setup on one box)
    placement: PlacementSpec = Field(default_factory=PlacementSpec)

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


#: what ``--profile`` accepts, for every command's help
PROFILE_HELP = ("a profile name (quick, full, ...: configs/profiles/<name>.yaml) or the path of a profile "
                "file, with or without .yaml (quick.yaml, configs/profiles/quick.yaml, /abs/path/x.yaml)")
SUFFIXES = (".yaml", ".yml")


def profile_path(name_or_path: str) -> Path:
    """The file of profile ``name_or_path``: a bare name (``quick``, ``quick.yaml``) in
    ``profiles_dir()``; a path (``configs/profiles/quick``, ``/abs/x.yaml``) from the working
    directory, else from the repository (a notebook runs in ``notebooks/``)."""
    given = Path(str(name_or_path)).expanduser()
    if not given.name or given.name == "..":  # "", ".", "/": no file to look for
        raise _unknown(name_or_path, None)
    explicit = given.suffix in SUFFIXES
    files = [given] if explicit else [given.with_name(given.name + suffix) for suffix in SUFFIXES]
    if len(given.parts) == 1 and not given.is_absolute():  # a name; an explicit x.yaml may be here too
        candidates = [profiles_dir() / file.name for file in files] + ([given] if explicit else [])
    else:
        candidates = files + ([] if given.is_absolute() else [PROJECT_ROOT / file for file in files])
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise _unknown(name_or_path, candidates[0])
    return found.resolve()


def _unknown(name_or_path: str, looked: Path | None) -> PGLimitsError:
    known = ", ".join(sorted(p.stem for suffix in SUFFIXES for p in profiles_dir().glob(f"*{suffix}")))
    where = f" (no file {repo_relative(looked)})" if looked else ""
    return PGLimitsError(f"unknown profile {str(name_or_path)!r}{where}",
                         f"use one of: {known} (in {repo_relative(profiles_dir())}), or the path of a .yaml file")


def _read(name: str, path: Path) -> dict[str, Any]:
    """The profile's top-level mapping; a file that cannot be read, is not YAML, is empty or is
    not a mapping is one line naming the file (and, for YAML, the line)."""
    shown = repo_relative(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise _yaml_error(name, shown, exc) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PGLimitsError(f"profile {name}: cannot read {shown}: {exc}", "give a readable UTF-8 YAML file") from None
    if raw is None or raw == {}:
        raise PGLimitsError(f"profile {name}: {shown} is empty",
                            f"give it at least one workload section ({', '.join(registry.names())}), "
                            "e.g. start from a copy of configs/profiles/test.yaml")
    if not isinstance(raw, dict):
        raise PGLimitsError(f"profile {name}: not a mapping of keys to values", f"fix {shown}")
    return raw


def _yaml_error(name: str, shown: str, exc: yaml.YAMLError) -> PGLimitsError:
    """One line: the file, the line the parser stopped at, its complaint — and, for a quote or a
    bracket left open (the parser stops at the end of the file), the line where it was opened."""
    mark, context = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    where = f" line {mark.line + 1}" if mark is not None else ""
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())  # one line
    if context is not None and (mark is None or context.line != mark.line):
        problem += f" ({' '.join(str(exc.context).split())} at line {context.line + 1})"
    return PGLimitsError(f"profile {name}: YAML error at {shown}{where}: {problem}",
                         f"correct the YAML at {shown}{where} (quote a value holding ': ' or ' #', close every "
                         "[ and {, indent with spaces, not tabs)")


def load_profile(name_or_path: str) -> Profile:
    """The validated profile given by name or path (``profile_path``); its ``name`` is the file's
    stem, which keys its results (``data/results/<host-id>/<name>/``)."""
    path = profile_path(name_or_path)
    name = path.stem
    raw = _read(name, path)
    sections = _workload_sections(name, path, raw)  # what is left are the profile's own keys
    if reserved := sorted({"name", "workloads"} & set(raw)):  # set from the file name and the sections
        raise PGLimitsError(f"profile {name}: {reserved[0]}: not a profile key",
                            f"remove it from {repo_relative(path)} (the name is the file's; each workload "
                            f"is a top-level section: {', '.join(registry.names())})")
    try:
        return Profile(name=name, **raw, workloads=sections)
    except ValidationError as exc:
        raise _invalid(name, path, exc) from None
    except PGLimitsError as exc:  # a dataset spec's own check (it names the field)
        raise PGLimitsError(f"profile {name}: datasets: {exc.problem}", f"in {path}: {exc.fix}") from None
