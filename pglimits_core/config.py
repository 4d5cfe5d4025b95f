"""Where things live. One place for every path the package reads or writes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CONFIGS_DIR = PROJECT_ROOT / "configs"
SERVER_CONFIGS_DIR = CONFIGS_DIR / "servers"
PROFILES_DIR = CONFIGS_DIR / "profiles"
LAUNCHERS_DIR = PROJECT_ROOT / "launchers"
NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
FIGURES_DIR = PROJECT_ROOT / "figures"


def profiles_dir() -> Path:
    """The study profiles. Override: PGLIMITS_PROFILES_DIR (a plugin's or a test's own)."""
    return Path(os.environ.get("PGLIMITS_PROFILES_DIR", PROFILES_DIR))


def figures_dir() -> Path:
    """Where figures are written, per machine and profile. Override: PGLIMITS_FIGURES_DIR (tests
    and scratch runs must not touch the committed figures/)."""
    return Path(os.environ.get("PGLIMITS_FIGURES_DIR", FIGURES_DIR))


def notebooks_dir() -> Path:
    """The workload notebooks. Override: PGLIMITS_NOTEBOOKS_DIR (a plugin's or a test's own)."""
    return Path(os.environ.get("PGLIMITS_NOTEBOOKS_DIR", NOTEBOOKS_DIR))


def notebook_path(name: str) -> Path:
    """``name``.ipynb from ``notebooks_dir()``, else the project's own (the report)."""
    own = notebooks_dir() / f"{name}.ipynb"
    return own if own.exists() else NOTEBOOKS_DIR / f"{name}.ipynb"


def state_dir() -> Path:
    """Server data, logs and downloaded binaries (git-ignored). Override: PGLIMITS_STATE_DIR."""
    return Path(os.environ.get("PGLIMITS_STATE_DIR", PROJECT_ROOT / ".pglimits")).resolve()


def data_dir() -> Path:
    """Generated datasets, raw runs and executed notebooks. Override: PGLIMITS_DATA_DIR."""
    return Path(os.environ.get("PGLIMITS_DATA_DIR", PROJECT_ROOT / "data")).resolve()


def repo_relative(path: Path) -> str:
    """``path`` relative to the repository, as README links and messages show it (absolute when
    an override such as PGLIMITS_DATA_DIR put it elsewhere)."""
    path = Path(path).resolve()
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


def runs_dir() -> Path:
    return data_dir() / "runs"


def results_dir() -> Path:
    return data_dir() / "results"


def profile_results_dir(profile: str, host: str | None = None) -> Path:
    """One profile's results from one machine: ``data/results/<host-id>/<profile>/`` (``runs/``,
    ``tables/``, ``report.html``). Keyed by machine so results from two boxes never mix."""
    return results_dir() / (host or current_host_id()) / profile


def profile_figures_dir(profile: str, host: str | None = None) -> Path:
    """One profile's figures from one machine: ``figures/<host-id>/<profile>/`` (PNG + SVG)."""
    return figures_dir() / (host or current_host_id()) / profile


def current_host_id() -> str:
    from pglimits_core.samplers.host_facts import host_id  # lazy: config stays import-light

    return host_id()


def profile_runs_dir(profile: str, override: str | Path | None = None) -> Path:
    """Where a profile's run records go: ``override`` if given, else ``data/runs/<profile>``."""
    return Path(override) if override else runs_dir() / profile


@dataclass(frozen=True)
class StudyPaths:
    """Where one profile's study reads and writes: run records, figures, tables, the report.
    Every notebook, the report and the README block resolve their paths here, once."""

    runs: Path
    figures: Path
    tables: Path
    report: Path

    @classmethod
    def for_profile(cls, profile: str, runs_root: str | Path = "", figures_dir: str | Path = "",
                    tables_dir: str | Path = "", report_path: str | Path = "") -> StudyPaths:
        """This machine's places for ``profile``; a non-empty argument overrides one of them."""
        results = profile_results_dir(profile)
        return cls(runs=profile_runs_dir(profile, runs_root or None),
                   figures=Path(figures_dir) if figures_dir else profile_figures_dir(profile),
                   tables=Path(tables_dir) if tables_dir else results / "tables",
                   report=Path(report_path) if report_path else results / "report.html")

    @classmethod
    def committed(cls, profile: str, host: str) -> StudyPaths:
        """The committed results of ``profile`` from machine ``host`` (``data/results/<host>/``)."""
        results = profile_results_dir(profile, host)
        return cls(runs=results / "runs", figures=profile_figures_dir(profile, host),
                   tables=results / "tables", report=results / "report.html")
