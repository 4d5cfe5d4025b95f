"""The consumer-crash drill's parts without servers: the driver keeps running beside a worker
that may die, the ledger reader skips a line a kill cut short, the accounting tells redelivered,
in doubt and lost apart, the profile section plans its drills, and the analysis table."""

from __future__ import annotations

import json
import os
import signal

import pandas as pd

from pglimits_core.load import ClosedLoop, Phase, Role, RunSpec, current_worker, run_load
from pglimits_core.profiles import load_profile
from pglimits_core.workloads.queue.drills.consumer_crash import (
    AT_MOST_ONCE_LOSS,
    crash_account,
    with_visibility_timeout,
)
from pglimits_core.workloads.queue.drills.consumer_crash_tables import (
    CONSUMER_CRASH_COLUMNS,
    consumer_crash_table,
)
from pglimits_core.workloads.queue.plan import plan
from pglimits_core.workloads.queue.points import read_ledger, read_ledger_batches, variant


class DiesOnce:
    """Worker 0 SIGKILLs itself at its 5th call; the others count."""

    name = "count"

    def open(self):
        self.worker, self.calls = current_worker(), 0

    def __call__(self):
        self.calls += 1
        if self.worker.index == 0 and self.calls == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        return 1

    def close(self):
        pass


def run_dying(may_die: bool):
    role = Role("consumer", DiesOnce(), workers=2, may_die=may_die, loop=ClosedLoop(idle_sleep_s=0.001))
    return run_load(RunSpec(phases=[Phase("measure", 4.0)], roles=[role], seed=1, start_method="fork"))


def test_a_worker_of_a_role_that_may_die_is_reported_and_the_others_keep_running():
    result = run_dying(may_die=True)
    assert result.status == "complete", result.error
    statuses = {w.worker: w for w in result.workers}
    assert statuses[0].status == "died" and "SIGKILL" in statuses[0].error
    assert statuses[1].status == "ok" and statuses[1].ended_by == "duration"  # not stopped early


def test_without_may_die_a_killed_worker_still_fails_the_run_and_stops_the_others():
    result = run_dying(may_die=False)
    assert result.status == "failed" and "SIGKILL" in result.error
    assert {w.worker: w.ended_by for w in result.workers}[1] == "stop"


def test_the_ledger_reader_skips_a_line_a_kill_cut_short(tmp_path):
    (tmp_path / "consume-consumer0.ids").write_bytes(b"10 a b\n20 c\n30 d e")
    (tmp_path / "consume-consumer1.ids").write_bytes(b"")
    assert read_ledger_batches(tmp_path, "consume") == [(10, ["a", "b"]), (20, ["c"])]
    assert read_ledger(tmp_path, "consume") == ["a", "b", "c"]


def killed(*held, at=100):
    return [{"held": list(held), "killed_at_ns": at, "pid": 1}]


def test_a_held_batch_redelivered_is_not_lost_and_its_time_is_measured():
    produced = ["a", "b", "c", "d"]
    consumed = [(50, ["a"]), (90, ["b"]), (2_000_000_100, ["c"])]  # c: held, re-acked 2 s after the kill
    outcome = crash_account(produced, consumed, [(3_000_000_100, ["d"])], True, killed("c", "d"), 2,
                            "at-least-once")
    assert outcome["lost"] == 0 and outcome["redelivered"] == 2 and outcome["duplicates"] == 0
    assert outcome["redelivery_s"] == 3.0 and outcome["shown"] == "at-least-once"


def test_delete_mode_losing_its_held_batch_is_labelled_at_most_once():
    outcome = crash_account(["a", "b", "c"], [(50, ["a"])], [], True, killed("b", "c"), 2, "at-most-once")
    assert outcome["lost"] == outcome["lost_held"] == 2 and outcome["shown"] == AT_MOST_ONCE_LOSS
    assert outcome["redelivery_s"] is None


def test_a_loss_beyond_the_held_batch_is_never_labelled_a_design_property():
    outcome = crash_account(["a", "b", "c"], [], [(200, ["a"])], True, killed("b"), 1, "at-most-once")
    assert outcome["lost"] == 2 and outcome["shown"].startswith("LOST 2")
    outcome = crash_account(["a", "b"], [(200, ["a", "a"])], [], False, killed("b"), 1, "at-least-once")
    assert outcome["duplicates"] == 1 and outcome["shown"].startswith("LOST 1")


def test_the_drill_sets_a_systems_own_visibility_timeout_and_keeps_the_label():
    v = with_visibility_timeout(variant("pgmq"), 2)
    assert v.options["vt_s"] == 2 and v.label == variant("pgmq").label
    assert with_visibility_timeout(variant("pg_skiplocked"), 2) == variant("pg_skiplocked")


def test_every_profile_plans_the_drill_after_the_sweeps_and_before_the_server_crashes():
    for name in ("test", "quick", "full"):
        profile = load_profile(name)
        points = [p.experiment for p in plan(profile.section("queue"), profile)]
        assert "consumer_crash" in points, name
        first = points.index("consumer_crash")
        # then the backup/restore drills (they back up live servers), then the server crashes
        assert set(points[first:]) <= {"consumer_crash", "backup", "recovery"}, name
        if "recovery" in points:  # the server crash drills come last: they kill what the others measured
            assert set(points[points.index("recovery"):]) == {"recovery"}, name


def drill_record(tmp_path, name, label="pg_skiplocked batch=1", guarantee="at-least-once",
                 status="complete", **outcome):
    path = tmp_path / name
    path.mkdir()
    params = {"experiment": "consumer_crash", "guarantee": guarantee, "recovery": "reap()", "outcome": outcome}
    (path / "manifest.json").write_text(json.dumps({"params": params}))
    return {"run_id": name, "experiment": "consumer_crash", "variant": label, "status": status, "path": str(path)}


def test_the_table_sums_drills_per_variant_and_keeps_failures_visible(tmp_path):
    good = {"held_by_killed": 1, "redelivered": 1, "lost": 0, "in_doubt": 0, "duplicates": 0,
            "redelivery_s": 2.0, "drain_complete": True, "shown": "at-least-once"}
    lost = {**good, "redelivered": 0, "lost": 1, "redelivery_s": None, "shown": AT_MOST_ONCE_LOSS}
    rows = [drill_record(tmp_path, "r1", **good), drill_record(tmp_path, "r2", **{**good, "redelivery_s": 3.0}),
            drill_record(tmp_path, "r3", status="failed"),
            drill_record(tmp_path, "r4", label="pg_delete batch=1", guarantee="at-most-once", **lost),
            {"run_id": "t", "experiment": "throughput", "variant": "x", "status": "complete", "path": "/nope"}]
    table = consumer_crash_table(pd.DataFrame(rows)).set_index("variant")
    assert list(table.reset_index().columns) == CONSUMER_CRASH_COLUMNS
    two = table.loc["pg_skiplocked batch=1"]
    assert (two.drills, two.failed_drills, two.lost, two.redelivered) == (2, 1, 0, 2)
    assert (two.redelivery_s, two.redelivery_s_max, two.shown) == (2.5, 3.0, "at-least-once")
    delete = table.loc["pg_delete batch=1"]
    assert delete.lost == 1 and delete.guarantee == "at-most-once" and delete.shown == AT_MOST_ONCE_LOSS
    assert consumer_crash_table(pd.DataFrame()).empty


def test_the_readme_lines_show_the_table_and_nothing_without_drills(tmp_path):
    from pglimits_core.workloads.queue.drills.consumer_crash_tables import consumer_crash_lines

    good = {"held_by_killed": 1, "redelivered": 1, "lost": 0, "in_doubt": 0, "duplicates": 0,
            "redelivery_s": 2.0, "drain_complete": True, "shown": "at-least-once"}
    table = consumer_crash_table(pd.DataFrame([drill_record(tmp_path, "r1", **good)]))
    lines = consumer_crash_lines(table)
    assert "Consumer crash" in lines[0] and "pg_skiplocked batch=1" in lines[2]
    assert consumer_crash_lines(None) == [] and consumer_crash_lines(table[:0]) == []
