"""``manifest.json``: everything needed to know what a run was and to reproduce it.

Timestamps are UTC ISO-8601 strings. ``host`` and ``cpu`` are free-form dicts so the samplers'
``describe_host()`` and per-process CPU accounting can be stored as they are;
``basic_host_facts`` fills ``host`` when no sampler is at hand.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pglimits_core.config import PROJECT_ROOT

SCHEMA_VERSION = 1
CLIENT_PACKAGES = ("psycopg", "psycopg-binary", "redis", "hiredis", "qdrant-client",
                   "opensearch-py", "elasticsearch", "numpy", "pgvector", "hdrhistogram", "pandas")


class GitInfo(BaseModel):
    sha: str | None = None
    dirty: bool | None = None


class Manifest(BaseModel):
    """One run. ``status`` is "running" until the run directory is finished (see ``rundir``)."""

    model_config = ConfigDict(extra="forbid")
    schema_version: int = SCHEMA_VERSION
    run_id: str = Field(min_length=1)
    study: str = Field(min_length=1)
    system: str = Field(min_length=1)
    variant: str = ""
    status: Literal["running", "complete", "failed"] = "running"
    error: str | None = None
    created_utc: str
    finished_utc: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    servers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    tuning_ledger: list[dict[str, Any]] = Field(default_factory=list)
    client_versions: dict[str, str | None] = Field(default_factory=dict)
    host: dict[str, Any] = Field(default_factory=dict)
    git: GitInfo = Field(default_factory=GitInfo)
    harness_ceiling: dict[str, Any] = Field(default_factory=dict)
    cpu: dict[str, Any] = Field(default_factory=dict)
    #: where the servers and the load ran: the CPU sets, and the affinity each side really had
    placement: dict[str, Any] = Field(default_factory=dict)
    #: which side set this point's limit (``samplers.limit``): "server", "load" (a floor), "neither"
    limit: dict[str, Any] = Field(default_factory=dict)
    client_bound: bool | None = None
    client_bound_reason: str | None = None
    workers: list[dict[str, Any]] = Field(default_factory=list)


def utc_now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def client_library_versions() -> dict[str, str | None]:
    """Installed versions of every client library that can shape a measured figure."""
    versions: dict[str, str | None] = {"python": platform.python_version(),
                                       "sqlite3": sqlite3.sqlite_version}
    for package in CLIENT_PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True,
                              text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


# A study writes its tables and figures into these tracked folders of its own checkout while it runs;
# they are outputs, not the code that measured, so they do not make a later run's record "dirty".
GENERATED_PATHS = ("data/results", "figures")


def git_info() -> GitInfo:
    """HEAD sha (None before the first commit) and whether the code has uncommitted changes
    (the study's own generated outputs, ``GENERATED_PATHS``, do not count)."""
    status = _git("status", "--porcelain", "--", ".", *(f":(exclude){p}" for p in GENERATED_PATHS))
    return GitInfo(sha=_git("rev-parse", "HEAD"), dirty=None if status is None else bool(status))


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def basic_host_facts(data_dir: Path | None = None) -> dict[str, Any]:
    """CPU model, logical cores, RAM bytes, and total/free bytes of the data directory's disk."""
    import psutil

    disk_path = data_dir if data_dir and data_dir.exists() else PROJECT_ROOT
    usage = shutil.disk_usage(disk_path)
    return {"cpu_model": _cpu_model(), "cores": os.cpu_count(),
            "ram_bytes": psutil.virtual_memory().total, "disk_path": str(disk_path),
            "disk_total_bytes": usage.total, "disk_free_bytes": usage.free,
            "kernel": platform.release(), "python_executable": sys.executable}


def new_manifest(run_id: str, study: str, system: str, variant: str = "", **fields: Any) -> Manifest:
    """A "running" manifest with versions, git state and basic host facts filled in."""
    fields.setdefault("client_versions", client_library_versions())
    fields.setdefault("git", git_info())
    fields.setdefault("host", basic_host_facts())
    return Manifest(run_id=run_id, study=study, system=system, variant=variant,
                    created_utc=utc_now_iso(), **fields)
