"""Where things live. One place for every path the package reads or writes."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CONFIGS_DIR = PROJECT_ROOT / "configs"
SERVER_CONFIGS_DIR = CONFIGS_DIR / "servers"
PROFILES_DIR = CONFIGS_DIR / "profiles"
LAUNCHERS_DIR = PROJECT_ROOT / "launchers"
NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
FIGURES_DIR = PROJECT_ROOT / "figures"


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
    return FIGURES_DIR / (host or current_host_id()) / profile


def current_host_id() -> str:
    from pglimits_core.samplers.host_facts import host_id  # lazy: config stays import-light

    return host_id()


def profile_runs_dir(profile: str, override: str | Path | None = None) -> Path:
    """Where a profile's run records go: ``override`` if given, else ``data/runs/<profile>``."""
    return Path(override) if override else runs_dir() / profile
