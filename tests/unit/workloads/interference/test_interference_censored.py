"""An act's churn job p99 is taken over the jobs that completed: where pgbench's schedule left a
share of its jobs unrun when the window ended (a 300-s hold), that p99 is a lower bound and the
line says so with the share; a window that ran nearly all its jobs reads plain."""

from __future__ import annotations

import pandas as pd

from pglimits_core.workloads.interference.report import act_lines, never_ran


def stretches(mechanism, jobs, p99s, offered=1142.2, edges=(2.0, 20.0, 320.0, 410.0)):
    return [{"mechanism": mechanism, "level": 0.5, "repetition": 0, "stretch": name, "start_s": low, "end_s": high,
             "jobs": count, "job_p99_ms": p99, "offered_per_s": offered, "dead_tuples_max": 91181.0}
            for name, low, high, count, p99 in zip(("before", "during", "after"), edges[:-1], edges[1:], jobs, p99s,
                                                   strict=True)]


def test_a_hold_that_left_half_its_jobs_unrun_reads_as_a_lower_bound():
    rows = pd.DataFrame(stretches("idle_xid_300s", (20519, 45663, 155631), (30.66, 254249.42, 260041.9)))
    assert abs(never_ran(rows) - (1 - 221813 / (1142.2 * 408))) < 1e-9
    (line,) = act_lines(rows)
    assert "≥ 254249.42 ms during it (≥ x8292" in line
    assert "52% of the jobs scheduled from the warm-up's end to the window's end never ran" in line


def test_a_window_that_ran_its_jobs_reads_plain():
    rows = pd.DataFrame(stretches("idle_xid_60s", (20610, 22331, 148853), (19.72, 39299.70, 40157.3),
                                  edges=(2.0, 20.0, 80.0, 170.0)))
    assert never_ran(rows) < 0.01
    (line,) = act_lines(rows)
    assert "≥" not in line and "39299.70 ms during it (x1992.89)" in line


def test_the_mitigations_table_marks_a_censored_churn_p99():
    from pglimits_core.workloads.interference.mitigations import mitigations_table

    stalls = pd.DataFrame(stretches("idle_xid_300s", (20519, 45663, 155631), (30.66, 254249.42, 260041.9))
                          + stretches("idle_xid_300s | holder_timeout", (20740, 342446, 103269), (23.3, 16903.4, 42.7)))
    inflation = pd.DataFrame([{"side": "postgres", "mechanism": m, "level": 0.5, "tenant": "churn", "churn_rate": 1142.2,
                               "jobs_per_s": 900.0, "runs": 1, "churn_sustained": False, "p99_ms": p99}
                              for m, p99 in (("idle_xid_300s", 260024.73), ("idle_xid_300s | holder_timeout", 16957.56))])
    row = mitigations_table(inflation, stalls).iloc[0]
    assert row.churn_p99_ms_unmitigated == "≥ 260024.73" and row.churn_never_ran_share_unmitigated > 0.5
    assert row.churn_p99_ms == 16957.56 and row.churn_never_ran_share < 0.01


def test_the_vacuum_after_a_rotated_act_is_the_first_that_removed_something():
    from pglimits_core.workloads.interference.stretches import after_act_vacuum

    entries = [{"table": "rot_jobs_2", "kind": "vacuum", "start_s": 329.4, "elapsed_s": 0.03, "tuples_removed": 0},
               {"table": "rot_jobs_0", "kind": "vacuum", "start_s": 329.6, "elapsed_s": 3.84, "tuples_removed": 9898}]
    found = after_act_vacuum(entries, 320.0)
    assert (found["that_vacuum_tuples_removed"], found["that_vacuum_elapsed_s"]) == (9898, 3.84)
    assert after_act_vacuum(entries[:1], 320.0)["that_vacuum_tuples_removed"] == 0
