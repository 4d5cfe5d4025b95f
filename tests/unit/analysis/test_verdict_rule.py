"""The one rule, on rate only: every class it gives on synthetic sides, with its exact words, and
the mapping from a run's record to which side set the limit."""

from __future__ import annotations

import pandas as pd
import pytest

from pglimits_core.analysis.verdict import (
    BY_FLOOR,
    BY_RATE,
    INSIDE_BAND,
    LOAD,
    LOAD_LIMITED,
    NEITHER,
    NO_RANGE,
    NO_RATE,
    NOT_COMPARABLE,
    NOT_RECORDED,
    OVERLAP,
    SERVER,
    Side,
    combined_limit,
    decide,
    limit_from_record,
)


def side(system: str, value: float, low: float, high: float, limit: str | None = SERVER, **kw) -> Side:
    return Side(system, value, limit=limit, value_range=(low, high), **kw)


def test_a_winner_whose_worst_case_clears_the_band_is_decided_by_rate():
    verdict = decide(side("postgres", 3000, 2800, 3100), side("redis", 1000, 950, 1050, NEITHER))
    assert (verdict.klass, verdict.ratio, verdict.winner) == (BY_RATE, 3.0, "postgres")
    assert verdict.spread == pytest.approx((2800 / 1050, 3100 / 950))
    assert verdict.why == "ahead beyond the tie band in every run: runs 2,800–3,100 vs 950–1,050"


def test_a_median_beyond_the_band_whose_worst_case_is_inside_it_names_no_winner():
    verdict = decide(side("a", 1300, 1200, 1400), side("b", 1000, 1000, 1100))
    assert verdict.klass == INSIDE_BAND and verdict.winner is None and verdict.ahead == "a"


def test_overlapping_runs_are_no_measurable_difference():
    verdict = decide(side("a", 1100, 1000, 1400), side("b", 1000, 900, 1100))
    assert (verdict.klass, verdict.winner, verdict.tie) == (BY_RATE, None, True)
    assert verdict.why == "no measurable difference: the runs overlap (runs 1,000–1,400 vs 900–1,100)"


def test_overlapping_ranges_with_figures_beyond_the_band_apart_are_neither_a_winner_nor_parity():
    verdict = decide(side("pg", 1925, 1925, 2750), side("redis", 2450, 2450, 3500))
    assert (verdict.klass, verdict.winner, verdict.tie) == (OVERLAP, None, False)
    assert "×1.27 apart" in verdict.why and "no measurable difference" not in verdict.text()



def test_ahead_in_every_run_inside_the_band_is_never_no_measurable_difference():
    verdict = decide(side("pgvector", 841, 840, 853), side("qdrant", 897, 873, 944))
    assert (verdict.klass, verdict.winner, verdict.ahead, verdict.tie) == (INSIDE_BAND, None, "qdrant", False)
    assert verdict.why == "qdrant ahead in every run, but inside the tie band (runs 840–853 vs 873–944)"
    assert "no measurable difference" not in verdict.text()


def test_without_per_run_ranges_there_is_neither_a_winner_nor_a_tie():
    verdict = decide(Side("a", 3000, limit=SERVER), Side("b", 1000, limit=SERVER))
    assert (verdict.klass, verdict.winner, verdict.ratio, verdict.tie) == (NO_RANGE, None, None, False)
    assert "the spread, and so a winner or a tie, is unknown" in verdict.why


def test_a_floor_above_a_ceiling_decides():
    # the queue's peak: Redis's load limited it, yet its worst run beat Postgres's best by x2.16
    redis = side("redis", 36380, 33535, 37410, LOAD)
    verdict = decide(side("postgres", 15435, 14850, 15530), redis)
    assert (verdict.klass, verdict.winner) == (BY_FLOOR, "redis")
    assert 1 / verdict.ratio == pytest.approx(33535 / 15530)
    assert verdict.why == ("redis's worst run ≥ 33,535 against postgres's best 15,530 (×2.16): "
                           "a floor above a ceiling decides")


def test_a_floor_below_or_near_a_ceiling_is_not_decided():
    below = decide(side("pg", 1249, 1200, 1300), side("qdrant", 1000, 980, 1020, LOAD))
    assert (below.klass, below.winner, below.ratio) == (LOAD_LIMITED, None, None)
    assert below.why == ("qdrant's load limited it at ≥ 1,000, below pg's 1,249: the load could not show "
                         "whether qdrant passes it")
    near = decide(side("pg", 1249, 1200, 1300), side("qdrant", 1512, 1450, 1550, LOAD))
    assert near.klass == LOAD_LIMITED and "≥ 1,512, near pg's 1,249" in near.why


def test_both_floors_are_not_decided_whatever_the_gap():
    verdict = decide(side("pg_notify", 184233, 182833, 184667, LOAD), side("redis", 149400, 147533, 152933, LOAD))
    assert (verdict.klass, verdict.winner) == (LOAD_LIMITED, None)
    assert verdict.why == "both figures are floors, each where its load generator's CPU set was saturated (the server's may have been too): ≥ 184,233 vs ≥ 149,400"


def test_a_side_whose_limit_was_not_recorded_is_not_decided():
    verdict = decide(side("a", 9000, 8900, 9100, None), side("b", 10, 9, 11))
    assert (verdict.klass, verdict.winner) == (NOT_RECORDED, None)
    assert verdict.why == "a: which side set the limit was not recorded"


def test_a_side_that_cannot_reach_the_rate_is_not_comparable():
    verdict = decide(Side("pg two-phase", 1316, limit=SERVER, reaches_rate=False), Side("redis", 5000, limit=SERVER))
    assert verdict.klass == NOT_COMPARABLE and verdict.why == "pg two-phase cannot reach the compared rate on this box"


def test_no_rate_is_not_decided():
    assert decide(Side("a", None, limit=SERVER), side("b", 1, 1, 1)).klass == NO_RATE


def test_server_cpu_per_operation_never_decides():
    # x10 less server CPU per operation, the same rate in overlapping runs: no measurable difference
    verdict = decide(side("a", 1000, 950, 1050, server_cpu_us_per_op=10.0),
                     side("b", 1000, 950, 1050, server_cpu_us_per_op=100.0))
    assert (verdict.klass, verdict.winner, verdict.tie) == (BY_RATE, None, True)
    # both load-limited with a x4 CPU gap: still not decided
    floors = decide(side("a", 1000, 950, 1050, LOAD, server_cpu_us_per_op=10.0),
                    side("b", 1000, 950, 1050, LOAD, server_cpu_us_per_op=40.0))
    assert floors.klass == LOAD_LIMITED and floors.winner is None


@pytest.mark.parametrize(("record", "limit"), [
    ({"limit": {"side": "server", "reason": "server-limited"}, "client_bound": True}, SERVER),
    ({"limit": {"side": "load", "reason": "load-limited (a floor)"}}, LOAD),
    ({"limit": {"side": None, "reason": "cannot tell"}, "client_bound": False,
      "client_bound_reason": "not CPU-bound: the box has idle CPU"}, None),
    ({"client_bound": True, "client_bound_reason": "client-bound: workers saturated while the server has headroom"},
     LOAD),
    ({"client_bound": False, "client_bound_reason": "server-bound: server saturated; client 40% of 200%"}, SERVER),
    # client and server saturated the shared box together: the server ran short of CPU its client took
    ({"client_bound": False, "client_bound_reason": "box saturated mostly by the server; client 60% of 200%"}, LOAD),
    ({"client_bound": False, "client_bound_reason": "not CPU-bound: the box has idle CPU; client 20%"}, NEITHER),
    ({"client_bound": False, "client_bound_reason": "some other reason"}, NEITHER),
    ({"client_bound": False, "client_bound_reason": "no CPU samples for client or server: cannot tell"}, None),
    ({"client_bound": None, "client_bound_reason": "cannot tell: the box was saturated"}, None),
    ({"client_bound": None, "client_bound_reason": "not applicable: the engine runs inside the client processes"},
     None),
    ({"client_bound": None, "client_bound_reason": "window too short for the CPU split"}, None),
    ({}, None),
])
def test_a_records_limit_is_its_own_else_the_old_verdict_mapped(record, limit):
    assert limit_from_record(record) == limit


def test_a_shared_core_records_cannot_tell_falls_back_to_its_per_second_verdict():
    shared = {"limit": {"side": None, "reason": "cannot tell from the sets"},
              "placement": {"client_and_server_share_cores": True},
              "client_bound": True, "client_bound_reason": "client-bound: workers saturated"}
    split = {**shared, "placement": {"client_and_server_share_cores": False}}
    assert limit_from_record(shared) == LOAD and limit_from_record(split) is None


def test_a_table_rows_limit_column_wins_and_an_older_table_maps_client_bound():
    assert limit_from_record(pd.Series({"limit": "server", "client_bound": True})) == SERVER
    assert limit_from_record(pd.Series({"limit": float("nan"), "client_bound": False})) is None
    assert limit_from_record(pd.Series({"client_bound": True})) == LOAD
    assert limit_from_record(pd.Series({"client_bound": False})) == NEITHER
    assert limit_from_record(pd.Series({"client_bound": float("nan")})) is None


@pytest.mark.parametrize(("limits", "combined"), [
    ([SERVER, SERVER], SERVER), ([SERVER, NEITHER], NEITHER), ([SERVER, LOAD, None], LOAD),
    ([SERVER, None], None), ([], None), ([NEITHER, "nonsense"], None)])
def test_a_figure_over_runs_is_a_floor_if_any_run_was_and_unknown_if_any_run_is(limits, combined):
    assert combined_limit(limits) == combined


def test_a_side_that_held_the_target_at_no_rate_loses_to_one_that_held_it_far_above():
    nowhere = Side("pg_gin ranked", 31.25, NEITHER, (0.0, 31.25), below=True, range_of="bracket")
    held = side("elasticsearch", 1625, 1625, 1750, range_of="bracket")
    verdict = decide(nowhere, held)
    assert (verdict.klass, verdict.winner) == (BY_RATE, "elasticsearch")
    assert verdict.ratio == pytest.approx(31.25 / 1625)
    assert verdict.why.startswith("pg_gin ranked held the target at no rate it tried with a full window, down to 31/s; "
                                  "elasticsearch held it at 1,625 (> ×52.0, beyond the tie band)")
    floor = side("redis", 1000, 900, 1100, LOAD)  # a floor above the bound decides too: its true rate is higher
    assert decide(floor, nowhere).winner == "redis"


def test_held_nowhere_against_a_rate_near_that_bound_or_on_both_sides_decides_nothing():
    nowhere = Side("a", 100.0, SERVER, (0.0, 100.0), below=True)
    assert decide(nowhere, side("b", 110, 110, 120)).klass == NO_RATE
    both = decide(nowhere, Side("b", 50.0, NEITHER, (0.0, 50.0), below=True))
    assert both.klass == NO_RATE and both.why == "neither held the target at any rate tried (below 100 and 50/s)"
