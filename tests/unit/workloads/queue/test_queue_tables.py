"""Queue tables from run rows: lower bounds and surviving runs, durability classes, client-bound
verdicts that do not apply, resources per message, and the README's headline cells."""

from __future__ import annotations

import pandas as pd

from pglimits_core.workloads.queue.health import resources_table
from pglimits_core.workloads.queue.readme import headline_table
from pglimits_core.workloads.queue.tables import (
    any_verdict,
    latency_table,
    throughput_table,
)

EMPTY_LATENCY = pd.DataFrame(columns=["variant", "offered_per_s", "send_to_claim_p99_ms", "sustained"])


def run_rows(run_id: str, experiment: str, consumers: int, consumed_per_s: float, left: int,
             producer_idle: int | None = None, variant: str = "pg_delete batch=1",
             durability_class: str = "per_commit", client_bound: bool | None = False) -> list[dict]:
    base = {"run_id": run_id, "experiment": experiment, "variant": variant, "consumers": consumers,
            "durability_class": durability_class, "left_after_run": left, "client_bound": client_bound,
            "lost": 0, "duplicates": 0}
    rows = [{**base, "role": "consumer", "items_per_s": consumed_per_s, "idle_polls": 0}]
    if producer_idle is not None:
        rows.append({**base, "role": "producer", "items_per_s": consumed_per_s, "idle_polls": producer_idle})
    return rows


def frame(*runs: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([row for run in runs for row in run])


def headline(sweep: pd.DataFrame, steady: pd.DataFrame | None = None) -> pd.DataFrame:
    empty = pd.DataFrame()
    return headline_table({"throughput": sweep, "steady": empty if steady is None else steady,
                           "latency": EMPTY_LATENCY})


def test_burn_down_runs_that_ran_out_of_backlog_are_left_out_and_not_counted():
    table = throughput_table(frame(run_rows("a", "throughput", 4, 900.0, left=0),
                                   run_rows("b", "throughput", 4, 1000.0, left=10),
                                   run_rows("c", "throughput", 4, 1200.0, left=10)))
    row = table.iloc[0]
    assert row.backlog_ran_out and not row.lower_bound
    assert (row.runs, row.runs_recorded) == (2, 3)  # the emptied run contributed no number
    assert row.jobs_per_s == 1100.0 and row.min_jobs_per_s == 1000.0
    assert row.jobs_per_s_text == "1,100 (1,000–1,200; 2 of 3 runs)"


def test_a_burn_down_that_always_ran_out_is_a_lower_bound_not_a_blank():
    table = throughput_table(frame(run_rows("a", "throughput", 64, 30_000.0, left=0),
                                   run_rows("b", "throughput", 64, 32_000.0, left=0)))
    row = table.iloc[0]
    assert row.lower_bound and row.jobs_per_s == 31_000.0 and row.runs == 2
    assert row.jobs_per_s_text == "≥ 31,000 (30,000–32,000; backlog ran out)"


def test_steady_point_whose_producers_never_idled_is_a_producer_bound_lower_bound():
    table = throughput_table(frame(run_rows("a", "steady", 1, 2000.0, left=5000, producer_idle=900),
                                   run_rows("b", "steady", 4, 17_300.0, left=40, producer_idle=0),
                                   run_rows("c", "steady", 4, 16_600.0, left=40, producer_idle=0)), "steady")
    held, starved = table.set_index("consumers").loc[1], table.set_index("consumers").loc[4]
    assert not held.depth_not_held and not held.lower_bound and held.jobs_per_s == 2000.0
    assert starved.depth_not_held and starved.lower_bound and starved.jobs_per_s == 16_950.0
    assert starved.jobs_per_s_text == "≥ 16,950 (16,600–17,300; producer-bound)"
    # the README's steady peak is the lower bound, which beats the measured point, and says so
    peak = headline(throughput_table(frame(run_rows("t", "throughput", 1, 900.0, left=9))), table).iloc[0]
    assert peak["steady-state jobs/s, best of the measured consumer counts @consumers"] == "≥ 16,950 @4 (16,600–17,300; producer-bound)"


def test_a_median_of_one_surviving_run_says_so():
    table = throughput_table(frame(run_rows("a", "steady", 64, 2015.0, left=40, producer_idle=5),
                                   run_rows("b", "steady", 64, 1100.0, left=40, producer_idle=0),
                                   run_rows("c", "steady", 64, 1200.0, left=40, producer_idle=0)), "steady")
    row = table.iloc[0]
    assert (row.runs, row.runs_recorded, row.jobs_per_s) == (1, 3, 2015.0)
    assert row.jobs_per_s_text == "2,015 (1 of 3 runs)"


def test_headline_names_the_best_consumer_count_and_the_single_consumer_rate():
    sweep = throughput_table(frame(run_rows("a", "throughput", 1, 1500.0, left=10),
                                   run_rows("b", "throughput", 8, 5000.0, left=10, client_bound=True),
                                   run_rows("c", "throughput", 64, 3000.0, left=10)))
    head = headline(sweep).iloc[0]
    assert head["burn-down jobs/s, 1 consumer"] == "1,500"
    assert head["burn-down jobs/s, best of the measured consumer counts @consumers"] == "5,000 @8 ᶜ"


def test_a_client_bound_verdict_that_does_not_apply_is_no_mark():
    sqlite = frame(run_rows("a", "throughput", 1, 9000.0, left=10, variant="sqlite_wal batch=1",
                            durability_class="periodic", client_bound=None))
    row = throughput_table(sqlite).iloc[0]
    assert row.client_bound is None
    assert headline(throughput_table(sqlite)).iloc[0]["burn-down jobs/s, 1 consumer"] == "9,000"
    assert any_verdict(pd.Series([None, False, True])) is True
    assert any_verdict(pd.Series([None, float("nan")])) is None


def test_tables_and_headline_are_grouped_by_durability_class():
    runs = frame(run_rows("a", "throughput", 1, 30_000.0, left=9, variant="redis_reliable batch=1",
                          durability_class="none"),
                 run_rows("b", "throughput", 1, 17_000.0, left=9, variant="sqlite_wal batch=1",
                          durability_class="periodic"),
                 run_rows("c", "throughput", 1, 3_800.0, left=9, variant="sqlite_wal batch=1 synchronous=full"),
                 run_rows("d", "throughput", 1, 1_400.0, left=9, variant="pgmq batch=1"))
    table = throughput_table(runs)
    assert list(table.columns[:3]) == ["variant", "durability_class", "consumers"]
    assert list(table.durability_class) == ["per_commit", "per_commit", "periodic", "none"]
    assert list(table.variant[:2]) == ["pgmq batch=1", "sqlite_wal batch=1 synchronous=full"]
    head = headline(table)
    assert list(head.columns[:2]) == ["variant", "durability class"]
    assert list(head.variant) == list(table.variant)


def latency_rows(run_id: str, variant: str, durability_class: str, client_bound=False) -> list[dict]:
    base = {"run_id": run_id, "experiment": "latency", "variant": variant, "durability_class": durability_class,
            "client_bound": client_bound, "lost": 0, "duplicates": 0, "path": f"/nonexistent/{run_id}",
            "worker_busy_events": 7}  # run-level: on every entry row of the run
    return [{**base, "role": "producer", "offered_rate": 1000.0, "achieved_rate": 1000.0, "sustained": True,
             "items_per_s": 1000.0, "idle_polls": 0, "duration_s": 8.0, "latency_p99_ms": 0.5},
            {**base, "role": "consumer", "items_per_s": 1000.0, "idle_polls": 12_000, "duration_s": 8.0,
             "end_to_end_p99_ms": 3.0}]


def test_latency_table_carries_the_class_and_orders_by_it():
    table = latency_table(frame(latency_rows("a", "redis_reliable batch=1", "none"),
                                latency_rows("b", "pgmq batch=1", "per_commit")))
    assert list(table.variant) == ["pgmq batch=1", "redis_reliable batch=1"]
    assert list(table.columns[:2]) == ["variant", "durability_class"]


def test_resources_put_idle_polls_beside_cpu_per_message(tmp_path):
    run_dir = tmp_path / "a"
    run_dir.mkdir()
    pd.DataFrame({"client_cpu_pct": [95.0, 95.0], "server_cpu_pct": [40.0, 40.0]}).to_parquet(
        run_dir / "samplers.parquet")
    rows = frame(latency_rows("a", "pgmq batch=1", "per_commit"))
    row = resources_table(rows.assign(path=str(run_dir))).iloc[0]
    assert row.durability_class == "per_commit"
    assert row.client_cpu_us_per_msg_with_polling == 950.0  # 95 % of a core over 1,000 msg/s
    assert row.server_cpu_us_per_msg_with_polling == 400.0
    assert row.idle_polls_per_s == 1500.0 and row.idle_polls_per_msg == 1.5
    assert row.worker_busy_events == 7


def test_a_failed_run_gives_no_number_to_any_table():
    failed = [{**row, "status": "failed"} for row in run_rows("x", "throughput", 4, 99_999.0, left=10)]
    ok = [{**row, "status": "complete"} for row in run_rows("a", "throughput", 4, 1000.0, left=10)]
    row = throughput_table(frame(failed, ok)).iloc[0]
    assert row.jobs_per_s == 1000.0 and row.runs == 1
    assert row.runs_recorded == 2 and "1 of 2 runs" in row.jobs_per_s_text  # the failure is said, not hidden


def test_a_burn_down_that_ran_out_because_it_was_fastest_keeps_the_point_a_lower_bound():
    table = throughput_table(frame(run_rows("a", "throughput", 8, 29_162.0, left=10),
                                   run_rows("b", "throughput", 8, 30_188.0, left=10),
                                   run_rows("c", "throughput", 8, 30_442.0, left=0)))
    row = table.iloc[0]
    assert row.lower_bound and row.jobs_per_s == 30_188.0 and row.runs == 3
    assert row.jobs_per_s_text == "≥ 30,188 (29,162–30,442; 1 of 3 runs: backlog ran out)"


def test_fairness_is_jains_index_over_the_consumers_acks_and_one_consumer_doing_all_scores_1_over_n():
    from pglimits_core.workloads.queue.tables import consumer_fairness, fairness_table

    assert consumer_fairness({"c0": 10, "c1": 10})["fairness_jain"] == 1.0
    starved = consumer_fairness({"c0": 100, "c1": 0, "c2": 0, "c3": 0})
    assert starved["fairness_jain"] == 0.25 and starved["consumer_min_share"] == 0.0
    assert consumer_fairness({"c0": 10})["fairness_jain"] is None  # one consumer: nothing to share
    assert consumer_fairness(None)["fairness_jain"] is None  # runs recorded before the counts existed
    rows = [{**row, **consumer_fairness(acks), "status": "complete", "rate": None}
            for run_id, acks in (("a", {"c0": 50, "c1": 150}), ("b", {"c0": 100, "c1": 100}))
            for row in run_rows(run_id, "throughput", 2, 1000.0, 0, variant="sqlite_wal batch=50")]
    table = fairness_table(frame(rows))
    assert len(table) == 1 and table.runs.iloc[0] == 2
    assert table.fairness_jain.iloc[0] == (0.8 + 1.0) / 2 and table.min_jain.iloc[0] == 0.8


def test_readme_fairness_block_sets_batched_claims_beside_batch_1_of_the_same_system():
    from pglimits_core.workloads.queue.readme import fairness_lines

    table = pd.DataFrame([
        {"variant": v, "durability_class": "periodic", "experiment": exp, "consumers": n, "rate": rate,
         "runs": 3, "fairness_jain": jain, "min_jain": jain, "consumer_min_share": share, "consumer_max_share": 1.5}
        for v, exp, n, rate, jain, share in [
            ("sqlite_wal batch=50", "throughput", 8, None, 0.61, 0.05), ("sqlite_wal batch=1", "throughput", 8, None, 0.99, 0.9),
            ("sqlite_wal batch=50", "latency", 4, 1000.0, 0.7, 0.2), ("sqlite_wal batch=1", "throughput", 64, None, 0.98, 0.8),
            ("sqlite_wal batch=1", "throughput", 1, None, 1.0, 1.0),  # one consumer: nothing to share, not shown
            ("redis_reliable batch=1", "throughput", 8, None, 0.9, 0.8)]])  # no batch-50 variant: not shown
    text = "\n".join(fairness_lines(table))
    assert "0.610 (0.05)" in text and "0.990 (0.90)" in text and "redis" not in text
    header = next(line for line in text.splitlines() if line.startswith("| variant"))
    assert header.index("burn-down, 8 consumers") < header.index("burn-down, 64 consumers") \
        < header.index("4 consumers at 1,000/s")
    assert fairness_lines(pd.DataFrame()) == []


def test_a_run_whose_cpu_split_leaves_a_core_unexplained_gives_no_client_bound_verdict():
    from pglimits_core.workloads.queue.tables import _no_verdict_on_unexplained_cpu

    runs = pd.DataFrame({"client_bound": [True, False, True], "other_cpu_pct": [90.0, 85.0, 3.0]})
    verdicts = _no_verdict_on_unexplained_cpu(runs).client_bound.tolist()
    assert verdicts[0] is None and verdicts[1] is None and verdicts[2] is True  # "cannot tell", either way
