"""The search notebook under papermill with the tiny test profile, against real servers: run
records that validate, every variant's answers exact, tables and figures written, and each chart
shown inline under its table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pglimits_core.record.rundir import finished_runs
from tests.conftest import ExecutedNotebook

pytestmark = [pytest.mark.integration, pytest.mark.notebook]


def test_search_notebook_runs_end_to_end(search_notebook: ExecutedNotebook):
    runs, figures, tables = search_notebook.runs, search_notebook.figures, search_notebook.tables
    manifests = [json.loads((p / "manifest.json").read_text()) for p in finished_runs(runs)]
    assert {m["params"]["experiment"] for m in manifests} == {"load", "correctness", "throughput", "crossover", "latency",
                                                               "writes"}
    assert all(m["status"] == "complete" for m in manifests), [m["error"] for m in manifests]
    assert all(m["params"]["outcome"]["disagreed"] == 0 for m in manifests if m["params"]["experiment"] == "correctness")
    validate = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate", str(runs)],
                              capture_output=True, text=True)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    written = {p.name for p in figures.iterdir()}
    assert {"search-throughput.png", "search-throughput.svg", "search-crossover.png"} <= written
    # the latency chart is drawn when some matched rate has a p99 (the Chart's rule); on a box a
    # neighbour keeps busy no rate may be sustained, and then no chart is the right outcome
    assert ("search-latency.png" in written) == has_values(tables / "search-latency.csv", "latency_p99_ms")
    correctness = (tables / "search-correctness.md").read_text()
    assert correctness.count("measured") == 4 and "NOT MEASURED" not in correctness
    assert "pg_gin ranked" in (tables / "search-throughput.md").read_text()
    executed = json.loads(search_notebook.executed.read_text())
    images = [out for cell in executed["cells"] for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
    assert len(images) >= 3, f"{len(images)} figures in the executed notebook"
    seed = next(cell for cell in executed["cells"] if cell.get("id") == "seed")
    assert "Postgres GIN" in json.dumps(seed["outputs"])
    assert search_notebook.leaked == []


def has_values(table_csv: Path, column: str) -> bool:
    """Whether a written table has any value in ``column`` (an empty table is written as an empty CSV)."""
    try:
        table = pd.read_csv(table_csv)
    except (FileNotFoundError, pd.errors.EmptyDataError):  # a table with no rows may not be written
        return False
    return column in table and bool(table[column].notna().any())
