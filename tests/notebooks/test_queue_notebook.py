"""The queue notebook under papermill with the tiny test profile, against real servers: it must
write run records that validate, exact accounting (nothing lost or duplicated), tables and figures."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from pglimits_core.record.rundir import finished_runs
from tests.conftest import ExecutedNotebook

pytestmark = [pytest.mark.integration, pytest.mark.notebook]


def test_queue_notebook_runs_end_to_end(queue_notebook: ExecutedNotebook):
    runs, figures, tables = queue_notebook.runs, queue_notebook.figures, queue_notebook.tables
    records = finished_runs(runs)
    manifests = [json.loads((p / "manifest.json").read_text()) for p in records]
    assert {"throughput", "steady", "latency", "recovery", "consumer_crash", "backup", "depth", "soak"} <= \
        {m["params"]["experiment"] for m in manifests}
    assert {m["system"] for m in manifests} == {"pg_delete", "redis_reliable", "sqlite_wal"}
    for manifest in manifests:
        assert manifest["status"] == "complete", manifest["error"]
        outcome = manifest["params"]["outcome"]
        if manifest["params"]["experiment"] == "recovery":
            # the crash drill: durable configs keep every acknowledged message; Redis (no
            # persistence) is reported as losing them, not asserted to keep them
            assert outcome["confirmed"] > 0 and (outcome["lost"] == 0 or not outcome["durable_config"])
            assert manifest["servers"] and manifest["harness_ceiling"]["ops_per_s"] > 0
            continue
        if manifest["params"]["experiment"] == "backup":
            # the backup/restore drill: nothing confirmed before the backup lost, nothing
            # acknowledged before it back, every restored id once
            assert outcome["confirmed_before_backup"] > 0 and outcome["restored_messages"] > 0
            assert outcome["lost"] == 0 and outcome["acked_reappeared"] == 0 and outcome["duplicates"] == 0
            continue
        if manifest["params"]["experiment"] == "depth":
            # a ceiling from a prefilled backlog: the window claimed some of it and left the rest
            assert outcome["prefilled"] == manifest["params"]["depth"] and 0 < outcome["left_after_run"] < outcome["prefilled"]
            continue
        if manifest["params"]["experiment"] == "soak":
            # half the first depth's ceiling, offered open loop; the queue kept up (nothing piled up)
            assert manifest["params"]["rate"] > 0 and manifest["params"]["share"] == 0.5
            assert outcome["left_after_run"] < manifest["params"]["rate"]
            continue
        if manifest["params"]["experiment"] == "consumer_crash" and outcome["guarantee"] == "at-most-once":
            # delete-mode: the batch the killed consumer held is gone by design, and nothing more
            assert outcome["lost"] == outcome["lost_held"] > 0 and outcome["produced"] > 0
            continue
        assert outcome["lost"] == 0 and outcome["duplicates"] == 0 and outcome["produced"] > 0
        assert manifest["servers"] and manifest["harness_ceiling"]["ops_per_s"] > 0
    validate = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate", str(runs)],
                              capture_output=True, text=True)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert {"queue-consumer-sweep.png", "queue-consumer-sweep.svg", "queue-latency.png"} <= {p.name for p in figures.iterdir()}
    latency_md = (tables / "queue-latency.md").read_text()
    assert latency_md.count("batch=1") == 3 and "claim_p99_ms" in latency_md and "send_to_claim_p99_ms" in latency_md
    assert (tables / "queue-recovery.md").read_text().count("batch=1") == 3
    assert (tables / "queue-backup.md").read_text().count("batch=1") == 3
    soak = (tables / "queue-soak.md").read_text()
    assert soak.count("batch=1") == 2 and "first_minute_p99_ms" in soak and "dead_tuples_max" in soak
    assert (tables / "queue-depth.md").read_text().count("batch=1") == 4
    series = pd.read_csv(tables / "queue-soak_series.csv")
    assert series[series.variant == "pg_delete batch=1"].dead_tuples.notna().all()  # the samplers on the window's axis
    assert {"queue-soak.png", "queue-depth.png"} <= {p.name for p in figures.iterdir()}
    # each chart is displayed under its table: the executed notebook carries them as images
    executed = json.loads(queue_notebook.executed.read_text())
    images = [out for cell in executed["cells"] for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
    assert len(images) >= 4, f"{len(images)} figures in the executed notebook"
    assert queue_notebook.leaked == []
