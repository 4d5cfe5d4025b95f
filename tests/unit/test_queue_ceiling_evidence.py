"""A queue throughput row whose design's own C tool ran the same statements at the same client
count faster than the harness beyond the tie band was capped by the harness (its per-call latency,
which the CPU split cannot see): its figure is a floor, and a floor below the other side's
rate decides nothing (server CPU per job never decides)."""

import pandas as pd

from pglimits_core.analysis.decision import matrix_table
from pglimits_core.workloads.queue.decision import decisions, harness_capped_by_ceiling


def _throughput() -> pd.DataFrame:
    rows = [("pg_skiplocked batch=10", 7470.0, 7455.0, 8145.0, 115.4, 96.3, 118.0),
            ("redis_reliable appendfsync=always batch=10 pipeline=10", 9805.0, 7900.0, 10400.0, 33.6, 28.8, 37.9)]
    return pd.DataFrame([{"variant": v, "durability_class": "per_commit", "consumers": 4, "jobs_per_s": j,
                          "min_jobs_per_s": lo, "max_jobs_per_s": hi, "client_bound": False, "box_saturated": False,
                          "server_cpu_us_per_job": cpu, "server_cpu_runs": 3, "min_server_cpu_us_per_job": cmin,
                          "max_server_cpu_us_per_job": cmax} for v, j, lo, hi, cpu, cmin, cmax in rows])


def _ceiling(harness_over_tool: float, clients: int = 4) -> pd.DataFrame:
    return pd.DataFrame([{"variant": "pg_skiplocked batch=10", "clients": clients, "tool": "pgbench",
                          "tool_consume_per_s": 7470.0 / harness_over_tool, "harness_over_tool": harness_over_tool}])


def test_a_faster_tool_at_the_same_client_count_marks_the_row_and_says_by_how_much():
    marked = harness_capped_by_ceiling(_throughput(), _ceiling(0.71))
    assert marked.client_bound.tolist() == [True, False] and marked.limit.tolist() == ["load", "neither"]
    assert marked.harness_capped.iloc[0] == "its own pgbench at 4 clients: 10,521 jobs/s, the harness ×0.71 of it"


def test_a_tool_within_the_band_or_at_another_client_count_leaves_the_samplers_verdict():
    assert harness_capped_by_ceiling(_throughput(), _ceiling(0.85)).client_bound.tolist() == [False, False]
    assert harness_capped_by_ceiling(_throughput(), _ceiling(0.5, clients=16)).client_bound.tolist() == [False, False]
    assert harness_capped_by_ceiling(_throughput(), None).client_bound.tolist() == [False, False]


def test_the_capped_peak_cell_is_a_floor_below_the_other_side_and_not_decided():
    without = matrix_table(decisions({"throughput": _throughput()})).iloc[0]
    # the rates' runs overlap (indicative only: the sweep's windows are short)
    assert without["verdict"].endswith("(indicative: no measurable difference)")
    capped = matrix_table(decisions({"throughput": _throughput(), "ceiling": _ceiling(0.71)})).iloc[0]
    # x3.4 less server CPU per job for Redis: printed beside the cell, never deciding it
    assert capped["class"] == "not decided: load-limited" and capped["postgres_figure"].startswith("≥ 7,470 jobs/s")
    assert capped["verdict"] == ("not decided here: pg_skiplocked batch=10's load limited it at ≥ 7,470, below "
                                 "redis_reliable appendfsync=always batch=10 pipeline=10's 9,805: the load could "
                                 "not show whether pg_skiplocked batch=10 passes it")
