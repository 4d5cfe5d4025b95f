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
