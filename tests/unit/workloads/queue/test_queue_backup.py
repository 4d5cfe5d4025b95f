"""The backup/restore drill without servers: the accounting across the backup point, its tables,
chart, README lines and seed ratios from synthetic drill records, and its bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from pydantic import ValidationError

from pglimits_core.errors import PGLimitsError
from pglimits_core.plotting.figures import save_figure
from pglimits_core.workloads.queue.drills.backup import (
    account_backup,
    backed_up_variant,
    check_disk,
)
from pglimits_core.workloads.queue.drills.backup_tables import (
    SCOPE_NOTE,
    backup_chart,
    backup_drills,
    backup_lines,
    backup_seed_rows,
    backup_table,
)
from pglimits_core.workloads.queue.plan import backup_points
from pglimits_core.workloads.queue.points import variant
from pglimits_core.workloads.queue.profile import BackupDrill
from pglimits_core.workloads.queue.seed import comparison_table

T0, T_END = 1_000, 2_000


# --- the accounting ------------------------------------------------------------------------------
def events() -> list[tuple[str, int, list[str]]]:
    """p1..p4 prefilled; e1 confirmed before t0, e2 during the backup, e3 after it. Before t0: p1
    acked, p2 claimed (in flight at t0), p3 claimed and acked during the backup; p4 untouched."""
    return [("enq", 500, ["e1"]), ("enq", 1500, ["e2"]), ("enq", 2500, ["e3"]),
            ("claim", 100, ["p1"]), ("ack", 200, ["p1"]),
            ("claim", 900, ["p2"]),
            ("claim", 950, ["p3"]), ("ack", 1200, ["p3"])]


def test_a_faithful_restore_loses_nothing_and_returns_the_claims_in_flight():
    # the snapshot was taken mid-backup: p3 still claimed in it, e2 already in
    counted = account_backup(["p1", "p2", "p3", "p4"], events(), T0, T_END, ["p2", "p3", "p4", "e1", "e2"],
                             at_most_once=False)
    assert counted["confirmed_before_backup"] == 5 and counted["acked_before_backup"] == 1
    assert (counted["acked_reappeared"], counted["lost"]) == (0, 0)
    assert (counted["in_flight_at_backup"], counted["in_flight_returned"]) == (2, 2)  # p2, p3
    assert counted["acked_during_backup_present"] == 1  # p3: acked after t0, snapshot before the ack
    assert counted["in_flight_acked_during_backup"] == 1  # p3
    assert counted["confirmed_during_backup_present"] == 1 and counted["duplicates"] == 0


def test_an_acknowledged_message_that_comes_back_and_a_missing_one_are_counted():
    counted = account_backup(["p1", "p2", "p3", "p4"], events(), T0, T_END, ["p1", "p2", "p2", "e1"],
                             at_most_once=False)
    assert counted["acked_reappeared"] == 1 and counted["acked_reappeared_sample"] == ["p1"]
    # p4 was never consumed and is gone; p3 was consumed during the backup: not a loss
    assert counted["lost"] == 1 and counted["lost_sample"] == ["p4"]
    assert counted["duplicates"] == 1


def test_delete_mode_claims_are_consumed_at_the_claim():
    """At-most-once: a message claimed before the backup's end is gone by design, not lost."""
    counted = account_backup(["p1", "p2", "p3", "p4"], events(), T0, T_END, ["p4", "e1"], at_most_once=True)
    assert counted["lost"] == 0 and counted["in_flight_returned"] == 0
    assert account_backup(["p1", "p2", "p3", "p4"], events(), T0, T_END, ["p4", "e1"],
                          at_most_once=False)["lost"] == 1  # two-phase: p2 was only claimed


# --- the tables ------------------------------------------------------------------------------------
def drill(root: Path, name: str, variant_label: str, durability_class: str, backup_s: float,
          restore_s: float, status: str = "complete", lost: int = 0, reappeared: int = 0,
          queue_mib: int = 300) -> dict:
    path = root / name
    path.mkdir()
    outcome = {"method": "pg_basebackup" if variant_label.startswith("pg") else "online backup API",
               "queue_bytes": queue_mib * 2**20, "backup_s": backup_s, "backup_bytes": int(backup_s * 2**30),
               "restore_to_first_claim_s": restore_s, "copy_s": 0.1, "start_s": restore_s - 0.05,
               "confirmed_before_backup": 1000, "acked_before_backup": 300, "acked_reappeared": reappeared,
               "lost": lost, "in_flight_at_backup": 2, "in_flight_returned": 2, "claimed_returned": 3,
               "delivery_guarantee": "at-least-once"}
    (path / "manifest.json").write_text(json.dumps({"params": {"outcome": outcome if status == "complete" else {}}}))
    return {"run_id": name, "experiment": "backup", "variant": variant_label, "durability_class": durability_class,
            "status": status, "error": None if status == "complete" else "boom", "queue_messages": 400_000,
            "path": str(path)}


def frame(tmp_path: Path) -> pd.DataFrame:
    tmp_path.mkdir(exist_ok=True)
    return pd.DataFrame([
        drill(tmp_path, "p1", "pg_skiplocked batch=1", "per_commit", 4.0, 9.0),
        drill(tmp_path, "p2", "pg_skiplocked batch=1", "per_commit", 6.0, 11.0),
        drill(tmp_path, "p3", "pg_skiplocked batch=1", "per_commit", 0.0, 0.0, status="failed"),
        drill(tmp_path, "r1", "redis_reliable batch=1", "none", 1.0, 2.0, reappeared=3),
        drill(tmp_path, "s1", "sqlite_wal batch=1 synchronous=full", "per_commit", 1.0, 0.5),
        drill(tmp_path, "s2", "sqlite_wal batch=1 synchronous=full", "per_commit", 2.0, 0.7, lost=1)])


def test_a_row_per_variant_with_median_range_sums_and_failed_drills(tmp_path: Path):
    table = backup_table(backup_drills(frame(tmp_path))).set_index("variant")
    pg = table.loc["pg_skiplocked batch=1"]
    assert (pg.drills, pg.failed_drills) == (2, 1)
    assert (pg.backup_s, pg.backup_s_min, pg.backup_s_max) == (5.0, 4.0, 6.0)
    assert (pg.restore_to_first_claim_s, pg.restore_to_first_claim_s_min, pg.restore_to_first_claim_s_max) == (10.0, 9.0, 11.0)
    assert pg.backup_bytes == 5 * 2**30 and pg.queue_messages == 400_000 and pg.queue_mb == 300.0
    assert (pg.in_flight_at_backup, pg.in_flight_returned, pg.lost, pg.acked_reappeared) == (4, 4, 0, 0)
    assert pg.claimed_returned == 6
    assert pg.note.startswith(SCOPE_NOTE) and "1 drill(s) failed" in pg.note
    sqlite = table.loc["sqlite_wal batch=1 synchronous=full"]
    assert sqlite.lost == 1 and "LOST" in sqlite.note
    assert "REAPPEARED" in table.loc["redis_reliable batch=1"].note
    # grouped by durability class, as every queue table
    assert list(table.durability_class) == ["per_commit", "per_commit", "none"]


def test_no_drill_gives_empty_tables_with_their_columns():
    empty = backup_drills(pd.DataFrame(columns=["run_id", "experiment", "path"]))
    assert empty.empty and "backup_s" in empty
    assert backup_table(empty).empty and backup_lines(backup_table(empty)) == []


def test_chart_and_readme_lines_show_every_variant_with_its_class(tmp_path: Path):
    table = backup_table(backup_drills(frame(tmp_path)))
    paths = save_figure(backup_chart(table), "queue-backup", tmp_path / "figures")
    assert all(p.stat().st_size > 0 for p in paths)
    text = "\n".join(backup_lines(table))
    assert "5.00 (4.00–6.00)" in text and "10.00 (9.00–11.00)" in text  # median (min–max)
    assert "fsync per commit" in text and "no fsync" in text


def test_seed_ratios_within_one_class_with_the_sizes_said(tmp_path: Path):
    tables = {"backup": backup_table(backup_drills(frame(tmp_path)))}
    rows = {row["figure"]: row for row in backup_seed_rows(tables)}
    backup = rows["queue hot backup time"]
    # SQLite 1.5 s / Postgres 5.0 s = 0.3 against the seed's 6.3 / 47 = 0.134: SQLite faster on both
    assert backup["our ratio A/B"] == 0.3 and backup["durability class (ours, both sides)"] == "fsync per commit"
    assert backup["verdict"].startswith("same direction, different size")
    assert "4.2 GB" in backup["verdict"] and "300 MiB (400,000 messages)" in backup["verdict"]
    restore = next(row for name, row in rows.items() if name.startswith("queue restore"))
    assert restore["our ratio A/B"] == 0.06 and restore["seed ratio A/B"] == "≤ 0.039×"
    # the queue's seed comparison carries them
    assert "queue hot backup time" in set(comparison_table(tables).figure)


def test_queues_of_one_message_count_but_sizes_far_apart_are_not_compared(tmp_path: Path):
    rows = frame(tmp_path)
    rows = rows[~rows.variant.str.startswith("sqlite")]
    grown = drill(tmp_path, "s8", "sqlite_wal batch=1 synchronous=full", "per_commit", 12.0, 8.8, queue_mib=5100)
    judged = backup_seed_rows({"backup": backup_table(backup_drills(pd.concat([rows, pd.DataFrame([grown])])))})
    assert all(row["verdict"].startswith("not compared: A's queue is ×17.0 the size") for row in judged)


def test_different_classes_are_shown_as_context_not_judged(tmp_path: Path):
    rows = frame(tmp_path)
    rows = rows[~rows.variant.str.startswith("sqlite")]
    rows = pd.concat([rows, pd.DataFrame([drill(tmp_path, "s9", "sqlite_wal batch=1", "periodic", 1.0, 0.5)])])
    judged = backup_seed_rows({"backup": backup_table(backup_drills(rows))})
    assert all(row["verdict"].startswith("not compared") for row in judged)


# --- bad input -------------------------------------------------------------------------------------------
def test_a_system_without_a_backup_method_or_an_unknown_one_is_a_one_line_error():
    with pytest.raises(PGLimitsError, match="unknown queue system"):
        backup_points(BackupDrill(variants=["kafka batch=1"]), [])
    assert backed_up_variant("sqlite_wal batch=1", [variant("sqlite_wal")]).server == "sqlite"


def test_a_queue_too_big_for_the_disk_names_the_fix(tmp_path: Path):
    with pytest.raises(PGLimitsError, match="lower queue.backup.queue_messages"):
        check_disk(10**12, tmp_path)
    assert check_disk(100, tmp_path)["disk_needed_estimate_bytes"] > 0


def test_the_profile_bounds_the_queue_size():
    with pytest.raises(ValidationError):
        BackupDrill(variants=["sqlite_wal batch=1"], queue_messages=10**8)


def test_every_drill_is_a_point_of_its_own_in_rounds():
    spec = BackupDrill(variants=["sqlite_wal batch=1", "pg_delete batch=1"], queue_messages=100, drills=2)
    points = backup_points(spec, [])
    assert [(p.experiment, p.label, p.params["drill"]) for p in points] == [
        ("backup", "sqlite_wal batch=1", 0), ("backup", "pg_delete batch=1", 0),
        ("backup", "sqlite_wal batch=1", 1), ("backup", "pg_delete batch=1", 1)]
    assert points[0].params["queue_messages"] == 100


def test_a_drill_point_calls_its_function_with_the_run_the_variant_and_its_params(monkeypatch):
    from pglimits_core.studies.study import StudyRun
    from pglimits_core.workloads.queue.drills import backup, recovery
    from pglimits_core.workloads.queue.plan import recovery_points
    from pglimits_core.workloads.queue.profile import RecoveryDrill

    calls = []
    for module, name in ((backup, "backup_point"), (recovery, "recovery_point")):
        monkeypatch.setattr(module, name, lambda run, v, **params: calls.append((run, v.label, params)))
    run = StudyRun(ctx=None, fleet=None, seed=4)
    points = backup_points(BackupDrill(variants=["sqlite_wal batch=1"], queue_messages=100), [])
    points += recovery_points(RecoveryDrill(variants=["pg_delete batch=1"], load_s=1, rate=50), [])
    for p in points:
        p.call(run)
    assert calls == [(run, "sqlite_wal batch=1", {"queue_messages": 100, "rate": 200.0, "load_s": 2.0, "drill": 0}),
                     (run, "pg_delete batch=1", {"load_s": 1.0, "rate": 50.0, "drill": 0})]
    assert [p.params for p in points] == [params for _, _, params in calls]  # the record shows what ran


def test_the_queue_workload_carries_the_backup_table_chart_and_report_caption(tmp_path: Path, monkeypatch):
    from pglimits_core.analysis.outputs import draw_charts
    from pglimits_core.registry import workload
    from pglimits_core.workloads.queue import workload as queue_workload
    from pglimits_core.workloads.queue.report import CAPTIONS

    queue = workload("queue")
    tables = backup_table(backup_drills(frame(tmp_path)))
    assert "queue-backup" in draw_charts(queue, {"backup": tables})
    assert "backup" in CAPTIONS
    # the workload's tables of a run frame add the drill's two to the other queue tables
    monkeypatch.setattr(queue_workload, "all_tables", lambda _frame: {"throughput": pd.DataFrame()})
    assert set(queue.tables(frame(tmp_path / "again"))) == {"throughput", "backup", "backup_drills"}
