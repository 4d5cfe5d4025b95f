"""The vector notebook under papermill with the test profile, against real Postgres + pgvector and
Qdrant: valid run records, tables, and the charts shown under their tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pglimits_core.config import NOTEBOOKS_DIR, PROJECT_ROOT
from pglimits_core.record.rundir import finished_runs

pytestmark = [pytest.mark.integration, pytest.mark.notebook]


def test_vectors_notebook_runs_end_to_end(tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch):
    import papermill

    from pglimits_core.servers.qdrant import QdrantServer

    (isolated_state / "bin").symlink_to(PROJECT_ROOT / ".pglimits" / "bin")
    QdrantServer.install()  # verifies it (fetches it only where none was installed)
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path / "data"))
    runs, figures, tables = tmp_path / "runs", tmp_path / "figures", tmp_path / "tables"
    papermill.execute_notebook(str(NOTEBOOKS_DIR / "30-vectors.ipynb"), str(tmp_path / "out.ipynb"),
                               parameters={"profile": "test", "measure": True, "runs_root": str(runs),
                                           "figures_dir": str(figures), "tables_dir": str(tables)},
                               cwd=str(NOTEBOOKS_DIR), progress_bar=False)
    manifests = [json.loads((p / "manifest.json").read_text()) for p in finished_runs(runs)]
    assert {m["system"] for m in manifests} == {"pgvector", "qdrant"}
    assert all(m["status"] == "complete" for m in manifests), [m["error"] for m in manifests]
    validate = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate", str(runs)],
                              capture_output=True, text=True)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert {"vectors-recall-qps.png", "vectors-recall-ef.png", "vectors-build.png"} <= {p.name for p in figures.iterdir()}
    matched = (tables / "vectors-matched.md").read_text()
    assert "qdrant hnsw" in matched and "pgvector hnsw" in matched
    executed = json.loads((tmp_path / "out.ipynb").read_text())
    images = [out for cell in executed["cells"] for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
    assert len(images) >= 3, f"{len(images)} figures in the executed notebook"
