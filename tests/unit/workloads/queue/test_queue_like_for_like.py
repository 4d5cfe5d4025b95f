"""The review's must-fixes on the queue's verdicts: per-row verdicts pair like-for-like designs
only; a latency point whose producers never offered the rate is no verdict on a queue; server CPU
per job from trusted runs only, and never at an offered rate; which side fell short; and the
server SIGKILL drill beside the durability class."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.decision import words
from pglimits_core.analysis.verdict import BY_RATE, LOAD_LIMITED, NOT_RECORDED, sweep_class
from pglimits_core.workloads.queue.decision import latency_cells, peak_cells
from pglimits_core.workloads.queue.durability_tables import label
from pglimits_core.workloads.queue.head_to_head import (
    NO_LIKE_FOR_LIKE,
    latency_verdicts,
    throughput_verdicts,
)
from pglimits_core.workloads.queue.readme import headline_table, kept_up_lines, sigkill_class_lines
from pglimits_core.workloads.queue.tables import throughput_table

PG_B10, REDIS_P10 = "pg_skiplocked batch=10", "redis_reliable appendfsync=always batch=10 pipeline=10"


def sweep_row(variant: str, consumers: int, jobs: float, cpu: float | None, bound: bool | None = False) -> dict:
    return {"variant": variant, "durability_class": "per_commit", "consumers": consumers, "jobs_per_s": jobs,
            "min_jobs_per_s": jobs * 0.95, "max_jobs_per_s": jobs * 1.05, "client_bound": bound,
            "lower_bound": False, "lower_bound_why": "", "runs": 3, "runs_recorded": 3, "server_cpu_us_per_job": cpu, "min_server_cpu_us_per_job": cpu and cpu * 0.9,
            "max_server_cpu_us_per_job": cpu and cpu * 1.1}


def latency_run(variant: str, rate: float, achieved: float, consumed: float, p99: float,
                bound: bool | None = False, cpu: float = 100.0) -> dict:
    return {"variant": variant, "durability_class": "per_commit", "offered_per_s": rate, "achieved_per_s": achieved,
            "consumed_per_s": consumed, "sustained": min(achieved, consumed) >= 0.95 * rate,
            "send_to_claim_p99_ms": p99, "client_bound": bound, "server_cpu_us_per_job": cpu}


def test_row_verdicts_face_only_a_design_with_the_same_delivery_and_batch():
    table = throughput_verdicts(pd.DataFrame([
        sweep_row("pg_delete batch=1", 16, 2000, 545.0), sweep_row("pg_delete batch=50", 16, 20000, 40.0),
        sweep_row(PG_B10, 16, 5000, 160.0), sweep_row(REDIS_P10, 16, 8000, 28.0)])).set_index("variant")
    # at-most-once batch 1 against at-least-once batch 10: no counterpart, no verdict
    assert (table.loc["pg_delete batch=1"].versus, table.loc["pg_delete batch=1"].verdict_why) == ("—", NO_LIKE_FOR_LIKE)
    assert table.loc["pg_delete batch=50"].verdict_class == "—"
    assert table.loc[REDIS_P10].versus == PG_B10  # not the faster, unlike pg_delete batch=50
    assert table.loc[PG_B10].verdict_class == sweep_class(BY_RATE)


def producers_short_runs() -> pd.DataFrame:
    return pd.DataFrame([latency_run(PG_B10, 5000, achieved, achieved, 2000.0) for achieved in (3500, 3600, 3700)]
                        + [latency_run(REDIS_P10, 5000, achieved, achieved, 1500.0) for achieved in (3600, 3600, 3600)])


def test_a_rate_the_producers_never_offered_is_load_limited_everywhere():
    runs = producers_short_runs()
    judged = latency_verdicts(runs, {})
    assert set(judged.verdict_class) == {LOAD_LIMITED}
    assert "the producers offered only 3,600 of 5,000 msg/s" in judged.verdict_why.iloc[0]
    sweep = pd.DataFrame([sweep_row(v, 4, 1000, None) for v in (PG_B10, REDIS_P10)])
    cells = headline_table({"throughput": sweep, "steady": pd.DataFrame(), "latency": runs})
    shown = cells.set_index("variant")["send → claim p99 ms at 5,000/s"]
    assert shown[PG_B10] == "not decided: load-limited (the producers offered only 3,600 of 5,000 msg/s)"
    line, = [text for text in kept_up_lines(runs) if text]
    assert "at 5,000/s not decided: load-limited for 2 designs (the producers offered only 3,600 of 5,000" in line
    cell, = latency_cells(runs)
    assert words(cell).startswith("not decided here: the harness, not the queue: the producers offered only 3,600")


def test_latency_rows_are_never_decided_by_server_cpu_at_an_offered_rate():
    runs = pd.DataFrame([latency_run(PG_B10, 1000, 1000, 1000, 30.0, bound=True, cpu=600.0),
                         latency_run(REDIS_P10, 1000, 1000, 1000, 10.0, cpu=200.0)])
    judged = latency_verdicts(runs, {})
    # Postgres's load was the limit: its p99 is a floor (of 1/p99) below Redis's, so nothing is decided
    assert set(judged.verdict_class) == {LOAD_LIMITED}
    assert not judged.verdict_why.str.contains("CPU").any()


def test_a_not_sustained_cell_says_which_side_fell_short():
    consumers = [latency_run(PG_B10, 1000, 990, 500, 900.0)] * 3
    mixed = [latency_run(REDIS_P10, 1000, a, 500, 900.0) for a in (990, 990, 600)]
    runs = pd.DataFrame(consumers + mixed)
    sweep = pd.DataFrame([sweep_row(v, 4, 1000, None) for v in (PG_B10, REDIS_P10)])
    shown = headline_table({"throughput": sweep, "steady": pd.DataFrame(), "latency": runs}).set_index("variant")["send → claim p99 ms at 1,000/s"]
    assert shown[PG_B10] == "not sustained (0 of 3 runs; consumers short)"
    assert shown[REDIS_P10] == "not sustained (0 of 3 runs; producers short in 1, consumers short in 2)"


def burn_down(run_id: str, variant: str, jobs: float, server_pct: float, other_pct: float,
              bound: bool | None) -> dict:
    return {"run_id": run_id, "experiment": "throughput", "variant": variant, "consumers": 16,
            "durability_class": "per_commit", "left_after_run": 10, "client_bound": bound, "lost": 0,
            "duplicates": 0, "role": "consumer", "items_per_s": jobs, "idle_polls": 0,
            "server_cpu_pct": server_pct, "other_cpu_pct": other_pct}


def test_server_cpu_per_job_comes_from_trusted_runs_and_an_unknown_limit_leaves_the_cell_undecided():
    rows = [burn_down(f"pg{i}", PG_B10, 5000, 80.0, other, None) for i, other in enumerate((33.7, 22.9, 24.1))]
    rows += [burn_down("r0", REDIS_P10, 8000, 22.4, 5.0, False), burn_down("r1", REDIS_P10, 8000, 22.4, 6.0, False),
             burn_down("r2", REDIS_P10, 8000, 90.0, 40.0, False)]  # a busy neighbour's run: not its CPU
    table = throughput_table(pd.DataFrame(rows)).set_index("variant")
    assert pd.isna(table.loc[PG_B10].server_cpu_us_per_job) and table.loc[PG_B10].server_cpu_runs == 0
    assert round(table.loc[REDIS_P10].server_cpu_us_per_job) == 28 and table.loc[REDIS_P10].server_cpu_runs == 2
    cell, = peak_cells(table.reset_index())
    assert cell.verdict.klass == NOT_RECORDED
    assert words(cell) == f"not decided here: {PG_B10}: which side set the limit was not recorded"


def test_a_class_whose_design_lost_acknowledged_messages_on_sigkill_says_so():
    recovery = pd.DataFrame([
        {"variant": "pg_delete batch=1 synchronous_commit=off", "durability_class": "periodic", "lost": 13, "drills": 3},
        {"variant": "redis_reliable appendfsync=everysec batch=1", "durability_class": "periodic", "lost": 0,
         "drills": 3}])
    lost = "pg_delete batch=1 synchronous_commit=off lost 13 acknowledged messages in 3 drills"
    line, _ = sigkill_class_lines(recovery)
    assert f"{label('periodic')}: {lost}" in line and "everysec" not in line
    sweep = pd.DataFrame([{**sweep_row(v, 4, 1000, 100.0), "durability_class": "periodic"}
                          for v in ("pg_delete batch=1 synchronous_commit=off", "redis_reliable appendfsync=everysec batch=1")])
    cell, = peak_cells(sweep, recovery)
    assert lost in cell.scale
    assert sigkill_class_lines(None) == []


def test_a_faster_postgres_design_left_out_by_the_pairing_is_named_in_the_cell():
    sweep = pd.DataFrame([sweep_row(PG_B10, 16, 15_000, 80.0), sweep_row(REDIS_P10, 16, 36_000, 10.0, True),
                          sweep_row("pg_delete batch=50", 4, 55_800, 23.0)])
    cell, = peak_cells(sweep)
    assert cell.postgres.system == PG_B10
    assert "pg_delete batch=50 ran faster, 55,800 jobs/s at 4 consumers, with no Redis design of its terms" in cell.scale
    slower = pd.DataFrame([sweep_row(PG_B10, 16, 15_000, 80.0), sweep_row(REDIS_P10, 16, 36_000, 10.0, True),
                           sweep_row("pg_delete batch=50", 4, 9_000, 23.0)])
    cell, = peak_cells(slower)
    assert "ran faster" not in cell.scale
