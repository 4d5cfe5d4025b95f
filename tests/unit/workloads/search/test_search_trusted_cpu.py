"""Search's server CPU per query comes only from runs whose CPU split can be trusted (the rule
every other comparison uses): a run the samplers could not split, or with CPU outside client and
server, never decides a cell by server CPU."""

import pandas as pd

from pglimits_core.workloads.search.head_to_head import cpu_columns


def _runs(reasons, other):
    return pd.DataFrame({"server_cpu_pct": [90.0, 90.0, 90.0], "items_per_s": [1000.0, 900.0, 100.0],
                         "client_bound_reason": reasons, "other_cpu_pct": other,
                         "client_cpu_pct": [50.0, 50.0, 50.0]})


def test_only_trusted_runs_give_the_server_cpu_per_query():
    columns = cpu_columns(_runs(["not client-bound", "not client-bound", "cannot tell: box saturated"], [5.0, 5.0, 5.0]))
    assert columns["server_cpu_runs"] == 2
    assert columns["server_cpu_us_max"] == 1000.0  # the distrusted 9,000 µs run is not in the range


def test_no_trusted_run_leaves_the_cpu_rule_nothing_to_decide_with():
    columns = cpu_columns(_runs(["cannot tell: x"] * 3, [5.0, 5.0, 5.0]))
    assert columns["server_cpu_us_per_query"] is None and columns["server_cpu_runs"] == 0
