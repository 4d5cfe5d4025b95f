"""The run directory, written so that a half-written run is never read as done.

Protocol (the one way): a run is created as ``<runs_dir>/<run_id>.partial/`` with a manifest
whose status is "running". Every file is written atomically (temp file in the same directory,
fsync, ``os.replace``). ``finish()`` writes the final manifest (status "complete" or "failed",
``finished_utc``) and only then renames the directory to ``<runs_dir>/<run_id>``. So:

* a directory named ``*.partial`` is a run in progress or one whose process died — never data;
* a directory without the suffix is finished; its manifest status says complete or failed.

Files: ``manifest.json``, ``summary.json``, ``timeseries.parquet``,
``histograms/phase_histograms.json`` (per role/op/kind/phase HDR encodings, µs).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pglimits_core.config import runs_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.record.manifest import Manifest, utc_now_iso
from pglimits_core.record.results import RunResult
from pglimits_core.record.summary import Summary, build_summary

PARTIAL_SUFFIX = ".partial"
HISTOGRAMS_FILE = Path("histograms") / "phase_histograms.json"


def utc_stamp() -> str:
    """The UTC time to the second as ``20261130T071238Z``: sortable, safe in a directory name."""
    return utc_now_iso().replace("-", "").replace(":", "").split(".")[0] + "Z"


def new_run_id(study: str, system: str, variant: str = "") -> str:
    """``<UTC time>-<study>-<system>[-<variant>]-<random>``, safe as a directory name."""
    parts = [utc_stamp(), study, system, variant, secrets.token_hex(3)]
    return "-".join(re.sub(r"[^A-Za-z0-9_.]+", "_", p) for p in parts if p)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def atomic_write_model(path: Path, model: BaseModel) -> None:
    atomic_write_bytes(path, model.model_dump_json(indent=2).encode())


def _histogram_records(run: RunResult) -> list[dict[str, Any]]:
    return [{"role": r, "op": o, "kind": k, "phase": p, "unit": "us", "hdr": enc.decode()}
            for (r, o, k, p), enc in sorted(run.encoded_histograms().items())]


def _timeseries_bytes(run: RunResult) -> bytes:
    import io

    buffer = io.BytesIO()
    run.timeseries.to_parquet(buffer, index=False)
    return buffer.getvalue()


#: A run record is tens of kB, but its servers' data (WAL, heap) grows on the same disk during
#: the run; below this we refuse to start a run rather than die with half a record written.
MIN_FREE_BYTES = 1 << 30


def ensure_free_space(path: Path, min_bytes: int = MIN_FREE_BYTES) -> None:
    """One-line error when the disk holding ``path`` has less than ``min_bytes`` free."""
    probe = Path(path)
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < min_bytes:
        raise PGLimitsError(f"disk nearly full: {free / 2**20:,.0f} MiB free under {probe} "
                            f"(a run needs {min_bytes / 2**20:,.0f} MiB)",
                            "free space, or point PGLIMITS_DATA_DIR/PGLIMITS_STATE_DIR at a larger disk")


class RunDirectory:
    """A run being written. Use ``create`` then ``write_result`` then ``finish`` (or ``with``)."""

    def __init__(self, manifest: Manifest, root: Path):
        self.manifest = manifest
        self.final_path = root / manifest.run_id
        self.path = root / f"{manifest.run_id}{PARTIAL_SUFFIX}"
        self.result_status: str | None = None
        self.result_error: str | None = None

    @classmethod
    def create(cls, manifest: Manifest, root: Path | None = None) -> RunDirectory:
        """Make ``<root>/<run_id>.partial`` with a "running" manifest (root: ``runs_dir()``)."""
        run_dir = cls(manifest.model_copy(update={"status": "running"}), Path(root or runs_dir()))
        ensure_free_space(run_dir.path.parent)
        if run_dir.final_path.exists() or run_dir.path.exists():
            raise PGLimitsError(f"run directory {run_dir.final_path} already exists",
                                "use a new run id (record.rundir.new_run_id)")
        run_dir.path.mkdir(parents=True, mode=0o755)
        run_dir.write_manifest()
        return run_dir

    def write_manifest(self) -> None:
        atomic_write_model(self.path / "manifest.json", self.manifest)

    def write_result(self, run: RunResult) -> Summary:
        """Summary, time series and histograms of a finished load run; returns the summary."""
        summary = build_summary(run, self.manifest.run_id)
        atomic_write_model(self.path / "summary.json", summary)
        atomic_write_bytes(self.path / "timeseries.parquet", _timeseries_bytes(run))
        histograms = json.dumps(_histogram_records(run)).encode()
        atomic_write_bytes(self.path / HISTOGRAMS_FILE, histograms)
        params = {**self.manifest.params, "load": run.params}
        workers = [asdict(w) for w in run.workers]
        self.manifest = self.manifest.model_copy(update={"params": params, "workers": workers})
        self.result_status, self.result_error = run.status, run.error
        return summary

    def finish(self, status: str | None = None, error: str | None = None) -> Path:
        """Final manifest, then rename ``.partial`` away. Returns the finished directory."""
        status = status or self.result_status or "complete"
        error = error or (self.result_error if self.result_status else None)
        update = {"status": status, "error": error, "finished_utc": utc_now_iso()}
        self.manifest = self.manifest.model_copy(update=update)
        self.write_manifest()
        os.replace(self.path, self.final_path)
        self.path = self.final_path
        return self.final_path

    def __enter__(self) -> RunDirectory:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.path == self.final_path:
            return
        if exc is not None:
            self.finish("failed", f"{type(exc).__name__}: {exc}")
        else:
            self.finish()


def record_run(run: RunResult, manifest: Manifest, root: Path | None = None) -> Path:
    """Write a whole run record in one call; returns the finished run directory."""
    with RunDirectory.create(manifest, root) as run_dir:
        run_dir.write_result(run)
    return run_dir.final_path


def finished_runs(root: Path | None = None) -> list[Path]:
    """Finished run directories (complete or failed); ``.partial`` ones are never listed."""
    root = Path(root or runs_dir())
    if not root.exists():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.endswith(PARTIAL_SUFFIX))
