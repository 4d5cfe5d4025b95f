"""Queue tables from run rows: what is blanked and flagged, and the README's headline cells."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.queue import throughput_table
from pglimits_core.analysis.readme_results import headline_table


def run_rows(run_id: str, experiment: str, consumers: int, consumed_per_s: float, left: int,
             producer_idle: int | None = None, variant: str = "pg_delete batch=1") -> list[dict]:
    base = {"run_id": run_id, "experiment": experiment, "variant": variant, "consumers": consumers,
            "left_after_run": left, "client_bound": False, "lost": 0, "duplicates": 0}
    rows = [{**base, "role": "consumer", "items_per_s": consumed_per_s, "idle_polls": 0}]
    if producer_idle is not None:
        rows.append({**base, "role": "producer", "items_per_s": consumed_per_s, "idle_polls": producer_idle})
    return rows


def frame(*runs: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([row for run in runs for row in run])


def test_burn_down_that_ran_out_of_backlog_is_blanked_and_flagged():
    table = throughput_table(frame(run_rows("a", "throughput", 4, 900.0, left=0),
                                   run_rows("b", "throughput", 4, 1000.0, left=10),
                                   run_rows("c", "throughput", 4, 1200.0, left=10)))
    row = table.iloc[0]
    assert row.backlog_ran_out and row.runs == 3
    assert row.jobs_per_s == 1100.0 and row.min_jobs_per_s == 1000.0  # the emptied run is not a rate


def test_steady_point_whose_producers_never_idled_did_not_hold_the_depth():
    table = throughput_table(frame(run_rows("a", "steady", 1, 2000.0, left=5000, producer_idle=900),
                                   run_rows("b", "steady", 64, 1100.0, left=40, producer_idle=0)), "steady")
    held, starved = table.set_index("consumers").loc[1], table.set_index("consumers").loc[64]
    assert not held.depth_not_held and held.jobs_per_s == 2000.0
    assert starved.depth_not_held and pd.isna(starved.jobs_per_s)


def test_headline_names_the_best_consumer_count_and_the_single_consumer_rate():
    sweep = throughput_table(frame(run_rows("a", "throughput", 1, 1500.0, left=10),
                                   run_rows("b", "throughput", 8, 5000.0, left=10),
                                   run_rows("c", "throughput", 64, 3000.0, left=10)))
    empty = pd.DataFrame()
    head = headline_table({"throughput": sweep, "steady": empty, "latency": pd.DataFrame(
        columns=["variant", "offered_per_s", "e2e_p99_ms", "sustained"]), "cliff": empty}).iloc[0]
    assert head["burn-down jobs/s, 1 consumer"] == "1,500 (1,500–1,500)"
    assert head["burn-down jobs/s, peak @consumers"] == "5,000 @8 (5,000–5,000)"
