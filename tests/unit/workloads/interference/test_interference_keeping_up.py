"""The churn is sustained only where every stretch of its window kept the offered rate: a window's
average that hides a collapse while held (or a sag as the backlog grows) does not pass."""

from __future__ import annotations

import pandas as pd

from pglimits_core.workloads.interference.colocation import hold_cells
from pglimits_core.workloads.interference.keeping_up import (
    lowest_rate,
    stretch_rates,
    sustained,
    third_rates,
)


def write_counts(path, per_second: list[int], first_second: int = 0) -> None:
    rows = [{"role": "churn", "second": first_second + i, "items": n} for i, n in enumerate(per_second)]
    rows += [{"role": "fts", "second": i, "items": 5} for i in range(len(per_second))]
    pd.DataFrame(rows).to_parquet(path / "timeseries.parquet")


def test_a_window_whose_last_third_sagged_is_not_sustained_though_its_average_is(tmp_path):
    # 2 s of warm-up, then 30 s: 130/s, 130/s, 40/s by thirds — an average of 100/s, the offered rate
    write_counts(tmp_path, [100, 100] + [130] * 10 + [130] * 10 + [40] * 10)
    params = {"churn_rate": 100.0, "warmup_s": 2.0, "window_s": 32.0}
    assert third_rates(tmp_path, 2.0, 32.0) == [130.0, 130.0, 40.0]
    low = lowest_rate(tmp_path, {}, params)
    assert low == 40.0
    rows = pd.DataFrame([{"churn_rate": 100.0, "jobs_per_s": 100.0, "churn_low_per_s": low}])
    assert sustained(rows) is False
    assert sustained(rows.assign(churn_low_per_s=96.0)) is True


def test_an_act_window_is_read_by_its_own_stretches_and_the_catch_up_may_run_above_the_rate():
    stretches = [{"stretch": "before", "start_s": 2.0, "end_s": 20.0, "jobs": 1800},
                 {"stretch": "during", "start_s": 20.0, "end_s": 80.0, "jobs": 2000},
                 {"stretch": "after", "start_s": 80.0, "end_s": 170.0, "jobs": 13000}]
    assert [round(r) for r in stretch_rates(stretches)] == [100, 33, 144]
    assert lowest_rate(None, {"stretches": stretches}, {"churn_rate": 100.0}) == 33.33


def test_no_churn_or_no_evidence_leaves_the_window_average_to_decide(tmp_path):
    assert lowest_rate(tmp_path, {}, {"churn_rate": 0, "window_s": 30}) is None
    assert lowest_rate(tmp_path, {}, {"churn_rate": 100.0, "warmup_s": 2, "window_s": 32}) is None  # no timeseries
    rows = pd.DataFrame([{"churn_rate": 100.0, "jobs_per_s": 97.0, "churn_low_per_s": None}])
    assert sustained(rows) is True
    assert sustained(rows.assign(jobs_per_s=90.0)) is False
    assert sustained(pd.DataFrame([{"churn_rate": 0, "jobs_per_s": 0}])) is None


def hold_rows(mechanism, during_ratio, completed, offered=1000.0):
    return [{"mechanism": mechanism, "repetition": 0, "stretch": "before", "fts_p99_ms_median_s": 10.0,
             "completed_per_s": offered, "offered_per_s": offered},
            {"mechanism": mechanism, "repetition": 0, "stretch": "during", "fts_p99_ms_median_s": 10.0 * during_ratio,
             "completed_per_s": completed, "offered_per_s": offered}]


def test_a_hold_the_bystander_rode_through_is_not_carried_if_the_queue_fell_behind_while_held():
    stalls = pd.DataFrame(hold_rows("idle_xid_30s", 1.1, 990.0) + hold_rows("idle_xid_60s", 1.1, 340.0))
    cell = next(c for c in hold_cells(stalls) if c.scale.startswith("co-location: full-text search") and "XID" in c.scale)
    assert cell.postgres.value == 30
    assert cell.figures[0] == ("holds through 30 s; churn fell to 340 of 1,000 jobs/s while held (1 of 1 runs) "
                               "at 60 s (during ÷ before ×1.10)")
    assert "completing ≥ 95% of its offered jobs/s while held" in cell.target


def test_a_worst_second_in_which_the_load_set_was_saturated_is_named_load_bound():
    from pglimits_core.workloads.interference.stalls import load_evidence

    frame = pd.DataFrame([{"sampler": "host", "t": t + 0.4, "client_cpu_pct": 96.0 if t == 5 else 20.0,
                           "harness_cpu_pct": 1.0} for t in range(10)]
                         + [{"sampler": "postgres", "t": 5.4, "client_cpu_pct": None, "harness_cpu_pct": None}])
    values = {"start_s": 0.0, "end_s": 10.0, "fts_worst_at_s": 5.0, "vector_worst_at_s": 2.0, "oltp_worst_at_s": None}
    assert load_evidence(frame, values, 1) == {"load_saturated_s": 1, "worst_s_load_bound": "fts"}
    assert load_evidence(frame, {**values, "fts_worst_at_s": 3.0}, 1)["worst_s_load_bound"] == "none"
    # two load CPUs: 97 % of one core is not the set saturated; the placement not recorded: not known
    assert load_evidence(frame, values, 2) == {"load_saturated_s": 0, "worst_s_load_bound": "none"}
    assert load_evidence(frame, values, None) == {"load_saturated_s": None, "worst_s_load_bound": None}


def test_a_hold_a_timeout_released_counts_the_seconds_it_stood_not_the_planned_span(tmp_path):
    """The act's stretch runs to its planned end (300 s), averaging a 30-s stall with the catch-up;
    the seconds the horizon stood are read on their own."""
    write_counts(tmp_path, [1000] * 20 + [470] * 30 + [1100] * 250)
    events = {"act_start_s": 20.0, "act_end_s": 300.0, "horizon_released_s": 30.0}
    from pglimits_core.workloads.interference.keeping_up import held_rate

    assert held_rate(tmp_path, events) == (30.0, 470.0)
    stretches = [{"stretch": "before", "start_s": 2.0, "end_s": 20.0, "jobs": 18000},
                 {"stretch": "during", "start_s": 20.0, "end_s": 300.0, "jobs": 281000},
                 {"stretch": "after", "start_s": 300.0, "end_s": 300.0, "jobs": 0}]
    outcome = {"stretches": stretches, "events": events}
    assert lowest_rate(tmp_path, outcome, {"churn_rate": 1000.0}) == 470.0
    assert held_rate(tmp_path, {"act_start_s": 20.0}) is None


def test_a_level_whose_load_core_ran_busy_with_its_churn_generator_is_not_read():
    """The dedicated churn's Python workers took 43-92 % of the load core the bystanders' clients
    share (pgbench's 16-22 %): such a level is not read, nor set against the other side."""
    from pglimits_core.workloads.interference.colocation import level_state
    from pglimits_core.workloads.interference.sides import guard

    busy = {"churn_sustained": True, "kept_up": True, "ratio_min": 1.0, "ratio_max": 1.1, "load_cpu_median": 43.0}
    assert level_state(busy) == "its load core shared with a busy load generator (43 % of it)"
    assert level_state({**busy, "load_cpu_median": 22.0}) == "held"
    row = {f"{side}_{k}": v for side in ("postgres", "dedicated") for k, v in
           {"p99_ms": 10.0, "churn_sustained": True, "ratio": 1.1, "kept_up": True, "ratio_min": 1.0,
            "ratio_max": 1.2, "unlike_windows": "", "load_cpu_median": 20.0}.items()}
    assert guard(row, {}) is None
    assert guard({**row, "dedicated_load_cpu_median": 66.0}, {}).startswith("dedicated: its load core 66 % busy")
