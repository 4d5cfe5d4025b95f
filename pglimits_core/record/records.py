"""Finished run records read back: what every analysis, the report and resume start from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pglimits_core.record.rundir import finished_runs


def load_records(study: str | None, runs_root: Path | None = None) -> list[dict[str, Any]]:
    """Finished runs of ``study`` (every study when None): {"path", "manifest", "summary"}
    (summary None if missing)."""
    records = []
    for path in finished_runs(runs_root):
        manifest = json.loads((path / "manifest.json").read_text())
        if study is not None and manifest.get("study") != study:
            continue
        summary_path = path / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
        records.append({"path": path, "manifest": manifest, "summary": summary})
    return records
