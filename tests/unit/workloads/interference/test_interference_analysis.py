"""The interference tables on synthetic records: achieved rates over the load phase's measured
seconds; the sides guard on numpy booleans; every ratio paired with the same-seed baseline; an
act window compared over the plain windows' seconds only; stretch edges at the act's exact times;
the autovacuum after the act; the control's and the acts' cycle notes; the acts' README lines."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pglimits_core.workloads.interference import report, sides, stretches
from pglimits_core.workloads.interference.tables import all_tables, interference_frame


def record(mechanism: str, seed: int, p99: dict[str, float], *, side: str = "postgres", window_s: float = 36.0,
           series: dict[str, list] | None = None, events: dict | None = None, count: int = 2806,
           duration_s: float = 34.164, path=None) -> dict:
    churn = mechanism != "baseline"
    tenants = {t: {"count": count if t == "fts" else 10227, "p99_ms": v} for t, v in p99.items()}
    seconds = int(window_s)
    outcome = {"tenants": tenants, "seed": seed, "warmup_s": 2.0, "events": events or {},
               "churn": {"jobs_per_s": 300.0 if churn else 0.0}, "vacuum": {"cycles": 3},
               "series": {"second": list(range(seconds)), **(series or {})}}
    entries = [{"role": t, "phase": "load", "duration_s": duration_s, "ops": tenants[t]["count"]} for t in tenants]
    return {"path": path, "summary": {"entries": entries},
            "manifest": {"run_id": f"{side}-{mechanism}-{seed}", "status": "complete", "cpu": {},
                         "params": {"side": side, "mechanism": mechanism, "level": 1.0 if churn else 0.0,
                                    "churn_rate": 300.0 if churn else 0.0, "repetition": seed - 42,
                                    "window_s": window_s, "warmup_s": 2.0, "min_cycles": 3, "backlog": 1000,
                                    "fts_rate": 80.0, "vector_rate": 150.0, "outcome": outcome}}}


def test_achieved_rates_divide_by_the_load_phase_and_the_churn_is_one_quantity():
    frame = interference_frame([record("churn", 42, {"fts": 50.0, "churn": 15.0})])
    fts = frame[frame.tenant == "fts"].iloc[0]
    assert fts.achieved_per_s == pytest.approx(2806 / 34.164, abs=0.01)  # not 2806 / 36 = 77.9
    churn = frame[frame.tenant == "churn"].iloc[0]
    # the churn's jobs are counted by completion inside [warm-up, window): over the window after the
    # warm-up, not the bystanders' load phase as it ran (2 % short in the sitting at 871e344d)
    assert churn.achieved_per_s == churn.jobs_per_s == pytest.approx(10227 / (36 - 2.0), abs=0.01)
    table = all_tables(frame)["inflation"].set_index("tenant")
    assert bool(table.loc["fts", "kept_up"]) and bool(table.loc["churn", "churn_sustained"])


def test_a_numpy_false_is_read_as_false_by_the_sides_guard():
    row = {f"{s}_{c}": v for s in ("postgres", "dedicated") for c, v in
           (("p99_ms", "5"), ("ratio", 1.0), ("ratio_min", 1.0), ("ratio_max", 1.0), ("churn_sustained", np.bool_(True)),
            ("kept_up", np.bool_(True)))}
    assert "not comparable" not in sides.reading(row, {"postgres": np.bool_(True), "dedicated": None})
    assert "not comparable" in sides.reading({**row, "postgres_kept_up": np.bool_(False)}, {})
    assert "not comparable" in sides.reading(row, {"dedicated": np.bool_(False)})
    assert "not sustained" in sides.reading({**row, "dedicated_churn_sustained": np.bool_(False)}, {})


def test_every_ratio_pairs_a_repetition_with_its_same_seed_baseline():
    # the schedule of seed 43 is the slow one: unpaired (vs the median 15) it would read 0.8 and 1.47
    records = [record("baseline", 42, {"fts": 10.0}), record("baseline", 43, {"fts": 20.0}),
               record("churn", 42, {"fts": 12.0}), record("churn", 43, {"fts": 22.0})]
    row = all_tables(interference_frame(records))["inflation"].query("mechanism == 'churn'").iloc[0]
    assert (row.ratio_min, row.ratio_max) == (1.1, 1.2)
    assert row.paired_ratios == "1.20 / 1.10" and row.inflation_ms == "2.00 (2.00–2.00)"
    assert sides.change(1.14, 1.26) == "+14–26 % in every repetition"
    assert sides.change(0.79, 0.98) == "−2 to −21 % in every repetition"
    assert "no consistent direction" in sides.change(0.83, 1.09)


def test_the_ratios_bracket_is_rounded_outward_so_the_band_never_swallows_a_repetition_above_it():
    # 12.543 / 10 = ×1.2543: above ×1.25, so the level straddles the band, never inside it
    records = [record("baseline", 42, {"fts": 10.0}), record("baseline", 43, {"fts": 10.0}),
               record("churn", 42, {"fts": 12.543}), record("churn", 43, {"fts": 8.432})]
    row = all_tables(interference_frame(records))["inflation"].query("mechanism == 'churn'").iloc[0]
    assert (row.ratio_min, row.ratio_max) == (0.84, 1.26)
    assert sides.inflated(row.ratio_min, row.ratio_max) is None


def test_an_act_window_is_compared_over_the_plain_seconds_only():
    flat = {"fts_p99_ms": [10.0] * 36}
    late = {"fts_p99_ms": [12.0] * 36 + [500.0] * 14}  # seconds 36-49: a schedule the baseline never ran
    during = {"fts_p99_ms": [11.0] * 36}
    records = [record("baseline", 42, {"fts": 10.0}, series=flat),
               record("churn", 42, {"fts": 11.0}, series=during),
               record("held_xmin", 42, {"fts": 90.0}, window_s=50.0, series=late,
                      events={"act_start_s": 10.02, "act_end_s": 30.01})]
    row = all_tables(interference_frame(records))["inflation"].query("mechanism == 'held_xmin'").iloc[0]
    assert row.ratio == 1.2 and row.compared_on.startswith("median per-second p99, seconds 2-36")
    assert row.during_vs_churn == f"{12 / 11:.2f}" and row.p99_ms == "90.00"
    # one statistic per column: p99_ms is the window p99 everywhere, the compared median apart
    assert (row.baseline_p99_ms, row.median_second_p99_ms, row.baseline_median_second_p99_ms) == (10.0, "12.00", 10.0)
    assert row.seconds_higher == "34/34"


def test_stretch_edges_are_the_acts_exact_times(tmp_path):
    series = pd.Series(np.arange(50.0), index=range(50))
    assert list(stretches.whole_seconds(series, 2.0, 10.02).index) == list(range(2, 10))
    assert list(stretches.whole_seconds(series, 10.02, 30.01).index) == list(range(11, 30))
    dead = pd.Series([100.0, 6317.0], index=[9.67, 10.67])  # 10.67 is a reading taken during the act
    before = stretches.stretch_values("before", 2.0, 10.02, {}, dead)
    assert before["dead_tuples_max"] == 100.0
    entries = [{"table": "jobs", "kind": "vacuum", "start_s": 23.3, "elapsed_s": 0.0, "tuples_removed": 0},
               {"table": "jobs", "kind": "analyze", "start_s": 33.30},
               {"table": "jobs", "kind": "vacuum", "start_s": 33.32, "elapsed_s": 0.02, "tuples_removed": 5019}]
    after = stretches.after_act_vacuum(entries, 30.01)
    assert after == {"next_autovacuum_after_act_s": 3.31, "that_vacuum_elapsed_s": 0.02,
                     "that_vacuum_tuples_removed": 5019}


def test_the_control_expects_no_cycle_and_an_act_counts_vacuums_that_removed_tuples(tmp_path):
    log = [{"table": "jobs", "kind": "vacuum", "end_s": e, "tuples_removed": r}
           for e, r in ((13.3, 2282), (23.3, 0), (33.3, 5019), (43.3, 4000))]
    (tmp_path / "autovacuum-log.json").write_text(json.dumps(log))
    records = [record("control", 42, {"fts": 10.0}),
               record("held_xmin", 42, {"fts": 10.0}, window_s=50.0, path=tmp_path,
                      events={"act_start_s": 10.0, "act_end_s": 30.0})]
    table = all_tables(interference_frame(records))["inflation"].set_index("mechanism")
    assert table.loc["control", "cycles_note"] == "no dead tuples: no cycle expected"
    assert table.loc["held_xmin", "autovacuum_cycles"] == "3"
    assert table.loc["held_xmin", "cycles_note"] == "ok (autovacuum cycles that removed tuples)"


def test_the_act_lines_give_the_repetitions_range_the_real_maximum_and_no_attribution():
    rows = []
    for mechanism, before, during, dead in (("held_xmin", (14.5, 12.0, 15.5), (18.1, 15.5, 43.8), (12053, 12461, 11843)),
                                            ("autovacuum_off", (11.5, 15.1, 15.5), (14.1, 24.3, 19.3), (12644, 18536, 12629))):
        for rep in range(3):
            rows += [{"mechanism": mechanism, "repetition": rep, "stretch": "before", "job_p99_ms": before[rep],
                      "dead_tuples_max": 5000.0},
                     {"mechanism": mechanism, "repetition": rep, "stretch": "during", "job_p99_ms": during[rep],
                      "dead_tuples_max": float(dead[rep])},
                     {"mechanism": mechanism, "repetition": rep, "stretch": "after", "job_p99_ms": 15.0,
                      "next_autovacuum_after_act_s": 3.3, "that_vacuum_elapsed_s": 0.02,
                      "that_vacuum_tuples_removed": 5019}]
    lines = report.act_lines(pd.DataFrame(rows))
    text = "\n".join(lines)
    assert "job (enqueue+claim+ack) p99, median (min–max) of 3 repetitions" in text
    assert "14.50 (12.00–15.50) ms before" in text and "up to 12,461" in text and "up to 18,536" in text
    assert "attributed" not in text and "claim p99" not in text
    assert "not distinguishable with 3 repetitions" in lines[-1]


def test_a_one_run_act_gives_its_values_alone_and_the_churn_s_rate_in_each_stretch():
    """A 300-s hold's window average (492 of 1,016 jobs/s) hid 145 jobs/s while it held: the line
    gives the rate per stretch, and one run's figures without a range of one."""
    stretch = {"before": (0.0, 20.0, 20_400, 25.5), "during": (20.0, 320.0, 43_500, 252_019.2),
               "after": (320.0, 410.0, 139_300, 90_000.0)}
    rows = [{"mechanism": "idle_xid_300s", "repetition": 0, "stretch": name, "start_s": start, "end_s": end,
             "jobs": jobs, "job_p99_ms": p99, "dead_tuples_max": 87040.0, "next_autovacuum_after_act_s": 0.2,
             "that_vacuum_elapsed_s": 0.72, "that_vacuum_tuples_removed": 39988}
            for name, (start, end, jobs, p99) in stretch.items()]
    line = report.act_lines(pd.DataFrame(rows))[0]
    assert "p99, one run: 25.50 ms before the act, 252019.20 ms during it (x9883.11)" in line
    assert "jobs completed per second before / during / after it: 1,020 / 145 / 1,548" in line
    assert "up to 87,040;" in line and "0.72 s and removing 39988 tuples" in line and "–" not in line


def test_a_window_with_an_act_records_its_stretches_at_measure_time():
    from types import SimpleNamespace

    frame = pd.DataFrame({"sampler": ["vacuum"] * 3, "t": [9.67, 10.67, 30.5],
                          "jobs.n_dead_tup": [100.0, 6317.0, 50.0]})
    measured = SimpleNamespace(events={"act_start_s": 10.02, "act_end_s": 30.01}, window_s=50.0, warmup_s=2.0,
                               churn_samples=[(5.0, 1000), (12.0, 9000), (40.0, 2000)], frame=frame,
                               log_readable=False, log_text="", origin_epoch_s=0.0)
    series = {"fts": pd.Series([1.0] * 50, index=range(50))}
    found = stretches.stretches(measured, series, pd.Series([100.0, 6317.0, 50.0], index=[9, 10, 30]))
    rows = {r["stretch"]: r for r in found["stretches"]}
    assert rows["before"]["dead_tuples_max"] == 100.0 and rows["during"]["dead_tuples_max"] == 6317.0
    assert rows["during"]["jobs"] == 1 and rows["during"]["job_p99_ms"] == 9.0
    assert found["next_autovacuum_after_act_s"] is None and found["dead_tuples_peak"] == 6317.0
