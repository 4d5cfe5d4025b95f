"""The interference notebook under papermill with the test profile, against a real Postgres and the
dedicated side's real OpenSearch, Qdrant and Redis: one complete run record per Postgres window
with the bystanders' per-second p99, the churn's rate and whether it was sustained, the backlog,
the vacuum sampler's columns, the acts undone (the held-xmin session gone, autovacuum back on);
the dedicated baseline and churn windows with the same tenants on their engines, the Redis
churn's rate and client CPU, the engines' sampler columns; the tables (the sides table comparing
both sides) and the timeline figure written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pglimits_core.config import NOTEBOOKS_DIR, PROJECT_ROOT
from pglimits_core.record.rundir import finished_runs

pytestmark = [pytest.mark.integration, pytest.mark.notebook]

VACUUM_COLUMNS = {"jobs.n_dead_tup", "oldest_xmin_age_xacts", "wait_events", "wal_bytes_per_s", "autovacuum_tables",
                  "checkpoints_req_delta", "blks_hit_per_s", "blks_read_per_s"}
DEDICATED_COLUMNS = {"os_merges_delta", "os_refreshes_delta", "qdrant_optimizer_ok", "qdrant_segments", "client_cpu_pct",
                     "used_memory"}


def manifests_by_window(runs: Path) -> dict[tuple[str, str], tuple[Path, dict]]:
    found = {}
    for path in finished_runs(runs):
        manifest = json.loads((path / "manifest.json").read_text())
        found[(manifest["params"]["side"], manifest["params"]["mechanism"])] = (path, manifest)
    return found


def check_dedicated(manifests: dict[tuple[str, str], tuple[Path, dict]]) -> None:
    """Both dedicated windows complete on the three engines, the churn on Redis at its rate with its
    client CPU recorded, the backlog waiting, the engines' sampler columns."""
    for mechanism in ("baseline", "churn"):
        path, manifest = manifests[("dedicated", mechanism)]
        assert manifest["status"] == "complete", manifest["error"]
        # the OLTP tenant stays on Postgres, the application's own database
        assert set(manifest["servers"]) == {"opensearch", "qdrant", "redis", "postgres"}
        outcome = manifest["params"]["outcome"]
        assert all(outcome["tenants"][t]["p99_ms"] > 0 for t in ("fts", "vector", "oltp")), mechanism
        assert outcome["start_state"]["start_depth"] == manifest["params"]["backlog"]
        # the same durability class as the Postgres churn's commits: fsync before every reply
        assert manifest["servers"]["redis"]["settings"]["appendfsync"] == "always"
        assert manifest["servers"]["redis"]["settings"]["appendonly"] == "yes"
        samplers = pd.read_parquet(path / "samplers.parquet")
        assert set(samplers.columns) >= DEDICATED_COLUMNS, DEDICATED_COLUMNS - set(samplers.columns)
        assert outcome["background"]["qdrant_segment_counts"], outcome["background"]
    churn = manifests[("dedicated", "churn")][1]["params"]["outcome"]
    assert churn["churn"]["offered_per_s"] > 0 and churn["churn"]["jobs_per_s"] > 0
    assert churn["churn"]["sustained"] in (True, False) and churn["churn"]["client_cpu_pct"] is not None
    assert churn["tenants"]["churn"]["count"] > 0
    # both sides move the same bytes per job: qload sizes every Redis job as the Postgres churn's
    assert churn["churn_tool"]["payload_bytes"] == manifests[("dedicated", "churn")][1]["params"]["payload_bytes"]


CAPACITIES = ("churn_capacity", "bystander_capacity")
POSTGRES_WINDOWS = ("baseline", "churn", "control", "held_xmin", "autovacuum_off", "idle_xid_1.2s", "rr_query_1.2s",
                    "churn | tuned_autovacuum", "idle_xid_1.2s | holder_timeout", "idle_xid_1.2s | partition_rotation",
                    "churn | batch_claim", "rr_query_1.2s | holder_timeout")


def check_capacities(manifests: dict[tuple[str, str], tuple[Path, dict]]) -> None:
    """The churn's capacity (pgbench) and the shared bystanders' (the harness) measured first; the
    windows offer their shares of them."""
    churned = manifests[("postgres", "churn_capacity")][1]
    assert churned["status"] == "complete", churned["error"]
    # which side set the limit is recorded (None where the placement cannot tell: the tests may share the cores)
    assert churned["params"]["tool"] == "pgbench" and "side" in churned["limit"]
    window = manifests[("postgres", "churn")][1]["params"]
    assert window["churn_base"]["source"] == "measured" and window["churn_base"]["jobs_per_s"] > 0
    assert window["churn_rate"] == round(window["level"] * window["churn_base"]["jobs_per_s"], 1)
    assert window["fts_rate"] > 0 and window["oltp_rate"] > 0  # shares of the capacities measured first
    # the churn's own pgbench command line and script are in the window's record
    tool = window["outcome"]["churn_tool"]
    assert tool["argv"][0].endswith("pgbench") and "-R" in tool["argv"] and "churn.sql" in tool["tool_scripts"]


def check_split(manifests: dict[tuple[str, str], tuple[Path, dict]]) -> None:
    """The split side: the queue churned on its own instance, the bystanders on the project's."""
    for mechanism in ("baseline", "churn"):
        manifest = manifests[("split", mechanism)][1]
        assert manifest["status"] == "complete", manifest["error"]
        assert set(manifest["servers"]) == {"postgres", "postgres_queue"}
        assert manifest["params"]["outcome"]["start_state"]["queue_server"] == "postgres_queue"
    churned = manifests[("split", "churn")][1]["params"]["outcome"]
    assert churned["churn"]["jobs_per_s"] > 0 and churned["tenants"]["oltp"]["count"] > 0


def check_placement(by_window: dict[tuple[str, str], tuple[Path, dict]]) -> None:
    """Every co-location window says where its servers and its load ran, as configured and as
    its processes had it (the capacities' records say it through their own runs)."""
    for (side, mechanism), (_, manifest) in by_window.items():
        if mechanism in CAPACITIES:
            continue
        placement = manifest["placement"]
        assert placement["mode"] in ("split", "shared"), (side, mechanism, placement)
        assert placement["server_affinity"] and placement["load_affinity"], (side, mechanism, placement)
        assert placement["held"] is True, (side, mechanism, placement)


def check_new_acts(manifests: dict[str, tuple[Path, dict]]) -> None:
    """The holds released, the server's timeout ending one early, the rotation running beside a
    hold and losing nothing it could not account for, the tuned settings on the queue table."""
    for mechanism in ("idle_xid_1.2s", "rr_query_1.2s", "idle_xid_1.2s | holder_timeout", "rr_query_1.2s | holder_timeout"):
        events = manifests[mechanism][1]["params"]["outcome"]["events"]
        assert events["holder_gone"] is True, mechanism
    for mechanism in ("idle_xid_1.2s | holder_timeout", "rr_query_1.2s | holder_timeout"):  # the server's timeout ended it
        assert manifests[mechanism][1]["params"]["outcome"]["events"]["horizon_released_s"] > 0, mechanism
    # ten (here five) jobs a transaction at the same jobs/s: the offered rate in jobs, the count in jobs
    batched, plain = (manifests[m][1]["params"]["outcome"]["churn"] for m in ("churn | batch_claim", "churn"))
    assert batched["offered_per_s"] == plain["offered_per_s"] and batched["jobs_per_s"] > 0.5 * plain["jobs_per_s"]
    rotated = manifests["idle_xid_1.2s | partition_rotation"][1]["params"]["outcome"]["events"]["rotation"]
    assert rotated["error"] is None and rotated["attempts"], rotated
    options = manifests["churn | tuned_autovacuum"][1]["params"]["outcome"]["start_state"]["queue_reloptions"]
    assert "autovacuum_vacuum_scale_factor=0" in options, options


def test_interference_notebook_runs_end_to_end(tmp_path: Path, isolated_state: Path):
    import papermill

    (isolated_state / "bin").symlink_to(PROJECT_ROOT / ".pglimits" / "bin")  # the Qdrant and Redis binaries

    runs, figures, tables = tmp_path / "runs", tmp_path / "figures", tmp_path / "tables"
    papermill.execute_notebook(str(NOTEBOOKS_DIR / "50-interference.ipynb"), str(tmp_path / "out.ipynb"),
                               parameters={"profile": "test", "measure": True, "runs_root": str(runs),
                                           "figures_dir": str(figures), "tables_dir": str(tables)},
                               cwd=str(NOTEBOOKS_DIR), progress_bar=False)
    by_window = manifests_by_window(runs)
    assert set(by_window) == {("postgres", m) for m in (*CAPACITIES, *POSTGRES_WINDOWS)} \
        | {(side, m) for side in ("dedicated", "split") for m in ("baseline", "churn")}
    check_dedicated(by_window)
    check_capacities(by_window)
    check_split(by_window)
    check_placement(by_window)
    manifests = {mechanism: found for (side, mechanism), found in by_window.items()
                 if side == "postgres" and mechanism not in CAPACITIES}
    check_new_acts(manifests)
    for mechanism, (path, manifest) in manifests.items():
        assert manifest["status"] == "complete", manifest["error"]
        outcome = manifest["params"]["outcome"]
        assert manifest["params"]["side"] == "postgres" and outcome["start_state"]["start_depth"] == \
            manifest["params"]["backlog"]
        for tenant in ("fts", "vector"):
            per_second = [v for v in outcome["series"][f"{tenant}_p99_ms"] if v is not None]
            assert per_second and outcome["tenants"][tenant]["p99_ms"] > 0, (mechanism, tenant)
        assert outcome["vacuum"]["cycles"] >= 0 and outcome["vacuum"]["windows_source"]
        # the same start state, recorded; the warm-up left out; the parsed log lines kept
        start = outcome["start_state"]
        assert start["settled"] in (True, False) and {"jobs", "interference_control"} <= set(start["tables_at_t0"])
        assert "log_autovacuum_min_duration" in start["autovacuum_settings"]
        assert outcome["warmup_s"] == manifest["params"]["warmup_s"] > 0
        assert all({"table", "kind", "start_s", "end_s"} <= set(span) for span in outcome["vacuum"]["spans"])
        assert isinstance(json.loads((path / "autovacuum-log.json").read_text()), list)
        samplers = pd.read_parquet(path / "samplers.parquet")
        assert set(samplers.columns) >= VACUUM_COLUMNS, VACUUM_COLUMNS - set(samplers.columns)
        if mechanism != "baseline":
            assert outcome["churn"]["offered_per_s"] > 0 and outcome["churn"]["jobs_per_s"] > 0
            assert outcome["churn"]["sustained"] in (True, False)
            assert outcome["churn"]["failed"] == 0 and outcome["tenants"]["churn"]["count"] > 0
    held = manifests["held_xmin"][1]["params"]["outcome"]
    assert held["events"]["holder_gone"] is True and [s["stretch"] for s in held["stretches"]] == \
        ["before", "during", "after"]
    assert manifests["autovacuum_off"][1]["params"]["outcome"]["events"]["autovacuum_restored"] is True
    validate = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate", str(runs)],
                              capture_output=True, text=True)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    inflation = (tables / "interference-inflation.md").read_text()
    assert "baseline" in inflation and "churn" in inflation and "autovacuum cycles" in inflation
    sides = (tables / "interference-sides.md").read_text()
    assert "postgres_ratio" in sides and "dedicated_ratio" in sides and "reading" in sides
    assert "not measured at this level" not in sides  # both sides measured the churn level
    assert {"interference-timeline.png"} <= {p.name for p in figures.iterdir()}
