"""The one rule that says who set the limit, on synthetic sides for every outcome."""

from __future__ import annotations

import pytest

from pglimits_core.analysis.verdict import (
    AT_SERVER,
    BY_SERVER_CPU,
    NOT_BY_HARNESS,
    NOT_COMPARABLE,
    Side,
    decide,
)


def test_both_server_bound_is_decided_at_the_server_with_the_rate_ratio():
    verdict = decide(Side("postgres", 3000, client_bound=False), Side("redis", 1000, client_bound=False))
    assert (verdict.klass, verdict.ratio, verdict.winner) == (AT_SERVER, 3.0, "postgres")


def test_c_tool_sides_without_a_client_bound_verdict_decide_at_the_server():
    verdict = decide(Side("postgres", 5100, tool="pgbench"), Side("redis", 87000, tool="redis-benchmark"))
    assert verdict.klass == AT_SERVER and verdict.winner == "redis"


def test_a_client_bound_c_tool_side_does_not_decide():
    verdict = decide(Side("postgres", 5100, tool="pgbench", client_bound=True), Side("redis", 87000, client_bound=False))
    assert verdict.klass == NOT_BY_HARNESS


def test_client_bound_sides_with_server_cpu_are_decided_by_cpu_per_operation():
    verdict = decide(Side("pgvector", 700, client_bound=True, server_cpu_us_per_op=2470, cpu_range=(2400, 2500)),
                     Side("qdrant", 900, client_bound=True, server_cpu_us_per_op=1130, cpu_range=(1100, 1200)))
    assert verdict.klass == BY_SERVER_CPU and verdict.winner == "qdrant"
    assert verdict.ratio == pytest.approx(1130 / 2470)


def test_a_client_bound_side_and_no_server_cpu_is_not_decided_by_the_harness():
    verdict = decide(Side("postgres", 3000, client_bound=False), Side("redis", 7000, client_bound=True))
    assert verdict.klass == NOT_BY_HARNESS and verdict.winner is None and "redis" in verdict.why


def test_an_unknown_client_bound_verdict_on_the_harness_is_not_server_side():
    assert decide(Side("a", 1, client_bound=None), Side("b", 2, client_bound=False)).klass == NOT_BY_HARNESS


def test_a_side_that_cannot_reach_the_rate_is_not_comparable():
    verdict = decide(Side("pg two-phase", 1316, client_bound=False, reaches_rate=False),
                     Side("redis", 5000, client_bound=False))
    assert verdict.klass == NOT_COMPARABLE and "pg two-phase" in verdict.why


@pytest.mark.parametrize(("a", "b", "winner"), [(1100, 1000, None), (1000, 1100, None), (1300, 1000, "a"),
                                                (1000, 1300, "b")])
def test_inside_the_tie_band_nobody_wins(a, b, winner):
    verdict = decide(Side("a", a, client_bound=False), Side("b", b, client_bound=False))
    assert verdict.winner == winner


def test_a_rate_winner_needs_the_worst_case_of_the_spread_to_clear_the_band():
    a = Side("a", 1300, client_bound=False, value_range=(1000, 1400))
    b = Side("b", 1000, client_bound=False, value_range=(900, 1100))
    verdict = decide(a, b)
    assert verdict.spread == pytest.approx((1000 / 1100, 1400 / 900)) and verdict.winner is None
    clear = decide(Side("a", 3000, client_bound=False, value_range=(2800, 3100)), b)
    assert clear.winner == "a"


def test_a_cpu_winner_needs_the_worst_case_of_the_cpu_spread_to_clear_the_band():
    a = Side("a", 700, client_bound=True, server_cpu_us_per_op=2400, cpu_range=(1200, 2600))
    b = Side("b", 900, client_bound=True, server_cpu_us_per_op=1100, cpu_range=(1000, 1300))
    verdict = decide(a, b)
    assert verdict.klass == BY_SERVER_CPU and verdict.winner is None
    assert verdict.spread == pytest.approx((1000 / 2600, 1300 / 1200))
    b_clear = Side("b", 900, client_bound=True, server_cpu_us_per_op=500, cpu_range=(450, 550))
    assert decide(Side("a", 700, client_bound=True, server_cpu_us_per_op=2400, cpu_range=(2200, 2600)),
                  b_clear).winner == "b"


def test_a_cpu_comparison_without_per_run_cpu_names_no_winner():
    verdict = decide(Side("a", 7, client_bound=True, server_cpu_us_per_op=120),
                     Side("b", 9, client_bound=True, server_cpu_us_per_op=40))
    assert verdict.klass == NOT_BY_HARNESS and verdict.winner is None and "per-run CPU" in verdict.why


def test_a_harness_side_on_a_box_its_client_saturated_is_not_decided_at_the_server():
    from pglimits_core.analysis.verdict import AT_SERVER, BY_SERVER_CPU, Side, decide

    saturated = Side("pgvector", 900.0, client_bound=False, box_saturated=True, server_cpu_us_per_op=2000.0,
                     cpu_range=(1900.0, 2100.0))
    other = Side("qdrant", 1200.0, client_bound=False, server_cpu_us_per_op=1000.0, cpu_range=(950.0, 1050.0))
    verdict = decide(saturated, other)
    assert verdict.klass == BY_SERVER_CPU and verdict.winner == "qdrant"
    assert decide(Side("pgvector", 900.0, client_bound=False), other).klass == AT_SERVER
    tool = Side("pgvector", 900.0, tool="pgbench", client_bound=False, box_saturated=True)
    assert decide(tool, other).klass == AT_SERVER  # a C tool's client is light; saturation alone does not void it
