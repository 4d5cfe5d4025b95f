"""Finished run records read back: what every analysis, the report and resume start from."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pglimits_core.record.rundir import finished_runs


def load_records(study: str | None, runs_root: Path | None = None) -> list[dict[str, Any]]:
    """Finished runs of ``study`` (every study when None): {"path", "manifest", "summary"}
    (summary None if missing)."""
    records = []
    for path in finished_runs(runs_root):
        if study is not None and _other_study(path.name, study):
            continue  # another study's run, by its id: its manifest need not be parsed
        manifest = json.loads((path / "manifest.json").read_text())
        if study is not None and manifest.get("study") != study:
            continue
        summary_path = path / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
        records.append({"path": path, "manifest": manifest, "summary": summary})
    return records


#: a run id as ``rundir.new_run_id`` makes it: ``<UTC stamp>-<study>-<system>...``
RUN_ID = re.compile(r"^\d{8}T\d{6}Z-([^-]+)-")


def _other_study(name: str, study: str) -> bool:
    """True when the directory's name is a run id of another study; a name of any other shape
    says nothing (its manifest decides)."""
    found = RUN_ID.match(name)
    return bool(found) and found.group(1) != re.sub(r"[^A-Za-z0-9_.]+", "_", study)
