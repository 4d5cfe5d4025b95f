"""The crash drill's tables and chart from drill records: per drill, and per variant the median
and range over its drills, with what a SIGKILL can and cannot show."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from pglimits_core.analysis.outputs import draw_charts, save_figures
from pglimits_core.registry import workload
from pglimits_core.workloads.queue.drills.recovery_tables import (
    SIGKILL_NOTE,
    recovery_drills,
    recovery_table,
)


def drill(root: Path, name: str, variant: str, durability_class: str, recovery_s: float,
          wal_bytes: int | None = None, lost: int = 0, status: str = "complete") -> dict:
    """A drill's manifest on disk and its row in the run frame."""
    path = root / name
    path.mkdir()
    state = {} if wal_bytes is None else {"wal_to_replay_bytes": wal_bytes}
    outcome = {"confirmed": 25_000, "confirmed_per_s": 2500.0, "offered_rate": 5000.0, "lost": lost,
               "first_claim_s": recovery_s, "recovery_s": recovery_s, "restart_s": recovery_s + 0.05,
               "kill_target": "postgres server", "state_at_kill": state, "server_log": ["redo done"],
               "durable_config": True, "durability": "synchronous_commit=on"}
    (path / "manifest.json").write_text(json.dumps({"params": {"outcome": outcome if status == "complete" else {}}}))
    return {"run_id": name, "experiment": "recovery", "variant": variant, "durability_class": durability_class,
            "status": status, "error": None if status == "complete" else "boom", "rate": 5000.0, "path": str(path)}


def drills_frame(tmp_path: Path) -> pd.DataFrame:
    return pd.DataFrame([
        drill(tmp_path, "p1", "pg_delete batch=1", "per_commit", 0.30, wal_bytes=10 * 2**20),
        drill(tmp_path, "p2", "pg_delete batch=1", "per_commit", 0.50, wal_bytes=40 * 2**20),
        drill(tmp_path, "p3", "pg_delete batch=1", "per_commit", 0.40, wal_bytes=25 * 2**20),
        drill(tmp_path, "p4", "pg_delete batch=1", "per_commit", 0.0, status="failed"),
        drill(tmp_path, "s1", "sqlite_wal batch=1 synchronous=off", "none", 0.01)])


def test_a_row_per_variant_with_median_range_and_count_of_drills(tmp_path: Path):
    table = recovery_table(recovery_drills(drills_frame(tmp_path))).set_index("variant")
    pg = table.loc["pg_delete batch=1"]
    assert (pg.drills, pg.failed_drills, pg.lost) == (3, 1, 0)
    assert (pg.recovery_s, pg.recovery_s_min, pg.recovery_s_max) == (0.40, 0.30, 0.50)
    assert (pg.wal_to_replay_mb, pg.wal_to_replay_mb_min, pg.wal_to_replay_mb_max) == (25.0, 10.0, 40.0)
    assert pg.offered_per_s == 5000.0 and pg.confirmed_per_s == 2500.0
    assert "1 drill(s) failed" in pg.note
    assert list(table.durability_class) == ["per_commit", "none"]  # grouped by class


def test_zero_lost_is_never_shown_without_saying_a_kill_cannot_separate_classes(tmp_path: Path):
    table = recovery_table(recovery_drills(drills_frame(tmp_path)))
    assert table.note.str.startswith(SIGKILL_NOTE).all()
    assert "OS page cache" in SIGKILL_NOTE


def test_the_recovery_chart_plots_one_point_per_drill(tmp_path: Path):
    drills = recovery_drills(drills_frame(tmp_path))
    assert len(drills) == 5 and drills.recovery_s.notna().sum() == 4  # the failed drill has no time
    paths = saved_charts({"recovery_drills": drills}, tmp_path / "figures")
    assert {p.name for p in paths} == {"queue-recovery.png", "queue-recovery.svg"}


def saved_charts(tables, directory) -> list[Path]:
    """The queue workload's charts of ``tables``, saved as the study saves them."""
    saved = save_figures(draw_charts(workload("queue"), tables), directory)
    return [path for paths in saved.values() for path in paths]


def test_a_restart_that_loaded_an_earlier_runs_snapshot_shows_no_recovery_time(tmp_path: Path):
    from pglimits_core.workloads.queue.drills.recovery_tables import FOREIGN_STATE

    row = drill(tmp_path, "r1", "redis_reliable batch=1", "none", 0.9, lost=25_000)
    manifest = json.loads((tmp_path / "r1" / "manifest.json").read_text())
    manifest["params"]["outcome"]["unconfirmed_present"] = 400_029  # never sent by this drill
    (tmp_path / "r1" / "manifest.json").write_text(json.dumps(manifest))
    table = recovery_table(recovery_drills(pd.DataFrame([row]))).iloc[0]
    assert pd.isna(table.recovery_s) and FOREIGN_STATE in table.note and "400,029" in table.note
    assert table.lost == 25_000  # every confirmed message is still counted lost
