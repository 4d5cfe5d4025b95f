"""The capacity block of the results page (``experiments.capacity_summary``): one row per design,
its ceiling with who set it, its capacity per target as a bracket or a floor, from the table."""

from __future__ import annotations

import pandas as pd

from pglimits_core.experiments.capacity_summary import capacity_lines, capacity_summary


def row(variant, target, capacity, miss, **more):
    return {"variant": variant, "side": "postgres", "target_p99_ms": target, "ceiling_per_s": 2203.0,
            "ceiling_low": 2150.0, "ceiling_high": 2260.0, "ceiling_limit": "server", "ceiling_by": "pgbench",
            "ceiling_clients": 8, "check_over_ceiling": 1.07, "agrees": True, "capacity_per_s": capacity,
            "capacity_miss_per_s": miss, "capacity_limit": "neither", "capacity_miss_limit": "neither",
            "confirmations": "3 of 3 held" if capacity else "none held", "p99_ms": 6.5 if capacity else None,
            "server_cpu_us_per_item": 705.6 if capacity else None, **more}


def test_a_design_is_one_row_with_its_ceiling_and_a_bracket_per_target():
    table = pd.DataFrame([row("pg_skiplocked batch=1", 10.0, 938.0, 1000.0),
                          row("pg_skiplocked batch=1", 50.0, 2000.0, None)])
    (only,) = capacity_summary(table, "jobs/s").to_dict("records")
    assert only["ceiling"] == ("2,203 (2,150–2,260) jobs/s (pgbench, 8 clients; server-limited); "
                               "harness ×1.07 (agree)")
    assert only["capacity at p99 ≤ 10 ms"] == "938–1,000 jobs/s (3 of 3 held; p99 6.5 ms)"
    # no steady window missed above it: its server-limited ceiling is the top
    assert only["capacity at p99 ≤ 50 ms"].startswith("2,000–2,260 jobs/s (top: its ceiling;")
    assert only["server µs/item there (10 ms)"] == "706"


def test_a_load_limited_ceiling_is_a_floor_and_nothing_held_names_the_failed_windows():
    failed = row("redis_reliable batch=1", 10.0, None, None, ceiling_limit="load", ceiling_by=None,
                 check_over_ceiling=None, agrees=None, confirm_failed=[(24000.0, 40.0, "load"), (16800.0, 30.0, None)])
    (only,) = capacity_summary(pd.DataFrame([failed]), "jobs/s").to_dict("records")
    assert only["ceiling"].startswith("≥ 2,203") and "harness, 8 clients; its load the limit" in only["ceiling"]
    assert only["capacity at p99 ≤ 10 ms"] == "none held (steady windows failed at 24,000, 16,800/s)"


def test_designs_of_one_variant_on_two_streams_are_two_rows_and_no_table_is_no_block():
    table = pd.DataFrame([{**row("elasticsearch", 100.0, 900.0, 1100.0), "stream": "mixed"},
                          {**row("elasticsearch", None, None, None), "stream": "rare", "target_p99_ms": None}])
    assert list(capacity_summary(table, "queries/s").design) == ["elasticsearch · mixed", "elasticsearch · rare"]
    assert capacity_lines({}, "queries/s") == [] and capacity_lines({"capacity": pd.DataFrame()}, "x") == []
