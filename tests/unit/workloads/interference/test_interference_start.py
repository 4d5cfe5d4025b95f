"""The same start state for every window, on fakes: settle waits until no vacuum runs or is due
(and says when it gave up), the state at t = 0 is recorded field by field, the warm-up is a phase
of its own (the bystanders' load and the churn's), the cycles and the alignment table leave the
warm-up out, and older records without the new fields still build their tables."""

from __future__ import annotations

import pandas as pd

from pglimits_core.load import OpenLoop, Role
from pglimits_core.workloads.interference import aligned, evidence, start_state
from pglimits_core.workloads.interference.merge import churn_step
from pglimits_core.workloads.interference.window import Churn, Measured, WarmedLoad

ROW = ("jobs", 20000, 0, 0, 0, 1.7e9, 1.7e9, 4, 5, 300, 2_000_000)


class FakeConn:
    """Answers the settle and state queries: ``busy`` vacuum counts in turn, then idle."""

    def __init__(self, busy: list[int], dead: int = 0):
        self.busy, self.dead, self.sql = list(busy), dead, []

    def execute(self, sql, params=None):
        self.sql.append(sql)
        rows = [(self.busy.pop(0) if self.busy else 0,), (0,)] if "pg_stat_progress_vacuum" in sql else \
            [(*ROW[:2], self.dead, *ROW[3:])] if "pg_stat_user_tables" in sql else \
            [("autovacuum_naptime", "10"), ("log_autovacuum_min_duration", "0")] if "pg_settings" in sql else []
        return type("Cursor", (), {"fetchall": lambda _: rows, "fetchone": lambda _: rows[0] if rows else None})()


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_settle_flushes_statistics_then_waits_for_the_vacuum_to_end():
    conn, clock = FakeConn(busy=[1, 1, 0]), Clock()
    found = start_state.settle(conn, ["jobs"], clock=clock, sleep=clock.sleep)
    assert found["settled"] is True and found["settle_s"] == 2 * start_state.SETTLE_POLL_S
    assert "pg_stat_force_next_flush" in conn.sql[0]


def test_settle_gives_up_at_its_timeout_and_says_why():
    conn, clock = FakeConn(busy=[], dead=5000), Clock()
    found = start_state.settle(conn, ["jobs"], timeout_s=1.0, clock=clock, sleep=clock.sleep)
    assert found["settled"] is False and found["settle_reason"] == "rows still due for a vacuum"


def test_the_state_at_t0_and_the_autovacuum_settings_are_recorded():
    state = start_state.table_state(FakeConn(busy=[]), ["jobs"])
    assert set(state["jobs"]) == set(start_state.STATE_FIELDS)
    assert state["jobs"]["n_live_tup"] == 20000 and state["jobs"]["relpages"] == 300
    assert start_state.autovacuum_settings(FakeConn(busy=[]))["log_autovacuum_min_duration"] == "0"


def test_the_warm_up_is_a_phase_of_its_own():
    load = WarmedLoad([Role("fts", object(), loop=OpenLoop(rate=10))], 2.0, max_s=30)
    assert [(p.name, p.warmup) for p in load.spec.phases] == [("warmup", True), ("load", False)]
    load._started = __import__("time").monotonic() - 12.0
    ran = {p.name: p.duration_s for p in load._ran_phases()}
    assert ran["warmup"] == 2.0 and 9.9 < ran["load"] < 10.5


def test_the_churn_before_the_warm_up_end_is_left_out():
    measured = Measured(None, None, 0.0, 6.0, churn_samples=[(0.5, 900_000), (1.5, 800_000), (3.0, 1000), (4.0, 2000)],
                        warmup_s=2.0)
    step = churn_step(measured, Churn("", 100, 2))
    assert step.histograms["load"].get_total_count() == 2 and step.histograms["load"].get_max_value() < 10_000
    assert {row["phase"] for row in step.seconds} == {"warmup", "load"}
    assert len(evidence.churn_in_window(measured.churn_samples, 6.0, 2.0)) == 2


def test_cycles_count_the_queue_table_after_the_warm_up_only():
    spans = [{"table": "jobs", "kind": "vacuum", "start_s": 0.37, "end_s": 0.4},
             {"table": "jobs", "kind": "vacuum", "start_s": 12.0, "end_s": 12.05},
             {"table": "jobs", "kind": "analyze", "start_s": 12.1, "end_s": 12.4},
             {"table": "interference_control", "kind": "vacuum", "start_s": 20.0, "end_s": 20.1}]
    assert evidence.vacuum_cycles(spans, 2.0) == 1


def record(repetition: int, spike_second: int, vacuum: dict) -> dict:
    values = [20.0] * 30
    values[spike_second] = 600.0
    outcome = {"tenants": {"fts": {"count": 2400, "p99_ms": 50.0}}, "vacuum": vacuum,
               "series": {"second": list(range(30)), "fts_p99_ms": values}}
    return {"manifest": {"run_id": f"r{repetition}", "status": "complete", "client_bound": None,
                         "params": {"side": "postgres", "mechanism": "control", "level": 1.0, "repetition": repetition,
                                    "window_s": 30, "outcome": outcome}}, "summary": None}


def test_an_older_record_s_start_up_artifact_is_dropped_from_the_alignment():
    from pglimits_core.workloads.interference.tables import interference_frame, postgres_rows

    # older records: windows and analyze_windows of the queue table, no warmup_s: 2 s dropped
    runs = [record(r, 0, {"windows": [[0.37, 0.4], [14.0, 14.05]], "analyze_windows": [[14.1, 14.4]]})
            for r in range(3)]
    table = aligned.alignment_table(postgres_rows(interference_frame(runs)))
    row = table.iloc[0]
    assert row.vacuum_spans == 3 and row.analyze_spans == 3 and row.inside_seconds == 3
    assert row.mean_inside_minus_outside_ms == 0 and row.verdict == "none shown (minimum detectable effect ~0.0 ms)"
    assert isinstance(row.p, str) and "/" in row.p
    assert pd.isna(row.reason)
