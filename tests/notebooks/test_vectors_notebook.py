"""The vector notebook under papermill with the test profile, against real Postgres + pgvector and
Qdrant: valid run records, tables, and the charts shown under their tables."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pglimits_core.record.rundir import finished_runs
from tests.conftest import ExecutedNotebook

pytestmark = [pytest.mark.integration, pytest.mark.notebook]


def test_vectors_notebook_runs_end_to_end(vectors_notebook: ExecutedNotebook):
    runs, figures, tables = vectors_notebook.runs, vectors_notebook.figures, vectors_notebook.tables
    manifests = [json.loads((p / "manifest.json").read_text()) for p in finished_runs(runs)]
    assert {m["system"] for m in manifests} == {"pgvector", "qdrant"}
    assert all(m["status"] == "complete" for m in manifests), [m["error"] for m in manifests]
    validate = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate", str(runs)],
                              capture_output=True, text=True)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert {"vectors-recall-qps.png", "vectors-recall-ef.png", "vectors-build.png"} <= {p.name for p in figures.iterdir()}
    matched = (tables / "vectors-matched.md").read_text()
    assert "qdrant hnsw" in matched and "pgvector hnsw" in matched
    executed = json.loads(vectors_notebook.executed.read_text())
    images = [out for cell in executed["cells"] for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
    assert len(images) >= 3, f"{len(images)} figures in the executed notebook"
    assert vectors_notebook.leaked == []
