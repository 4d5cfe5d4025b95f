"""The pub/sub notebook under papermill with the test profile, against real servers: valid run
records, every fan-out message delivered to every subscriber, the tables written, each chart
shown under its table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pglimits_core.record.rundir import finished_runs
from tests.conftest import ExecutedNotebook

pytestmark = [pytest.mark.integration, pytest.mark.notebook]


def test_pubsub_notebook_runs_end_to_end(pubsub_notebook: ExecutedNotebook):
    runs, figures, tables = pubsub_notebook.runs, pubsub_notebook.figures, pubsub_notebook.tables
    manifests = [json.loads((p / "manifest.json").read_text()) for p in finished_runs(runs)]
    assert {"fanout", "commit_serialization", "idle_listeners", "stuck_subscriber", "payload_limit"} \
        == {m["params"]["experiment"] for m in manifests}
    for manifest in manifests:
        assert manifest["status"] == "complete", manifest["error"]
        if manifest["params"]["experiment"] == "fanout":
            outcome = manifest["params"]["outcome"]
            assert outcome["delivered"] == outcome["expected"] > 0 and outcome["duplicates"] == 0
    validate = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate", str(runs)],
                              capture_output=True, text=True)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    fanout = (tables / "pubsub-fanout.md").read_text()
    assert fanout.count("pg_notify batch=1") == 2 and fanout.count("redis_publish batch=1") == 2, fanout
    assert "payload string too long" in (tables / "pubsub-payload_limit.md").read_text()
    assert {"pubsub-fanout.png", "pubsub-commit-serialization.png", "pubsub-idle-listeners.png"} \
        <= {p.name for p in figures.iterdir()}
    executed = json.loads(pubsub_notebook.executed.read_text())
    images = [out for cell in executed["cells"] for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
    assert len(images) == 3, f"{len(images)} figures in the executed notebook"  # fan-out, commits, idle listeners
    assert pubsub_notebook.leaked == []
