"""The co-location cells: how much churn (a share of its capacity) one Postgres carries beside a
bystander, where it stops and why, and when the dedicated side decides the cell — on canned
inflation rows (the rows come from real windows in the committed records and the notebook tests)."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.decision import DEDICATED_WINS, NOT_DECIDED, POSTGRES_MEETS
from pglimits_core.workloads.interference.colocation import (
    HELD,
    MISSED,
    carried,
    colocation_cells,
    outcome,
)


def row(side, level, low, high, tenant="fts", sustained=True, kept_up=True, capacity=1000.0):
    return {"side": side, "mechanism": "churn", "level": level, "churn_rate": level * capacity, "tenant": tenant,
            "ratio_min": low, "ratio_max": high, "churn_sustained": sustained, "kept_up": kept_up,
            "seconds_higher": "20/58 · 31/58 · 12/58"}


def frame(*rows):
    return pd.DataFrame(list(rows))


def test_a_side_carries_every_level_held_from_the_bottom_and_says_where_it_stopped():
    found = carried(frame(row("postgres", 0.75, 1.4, 1.6), row("postgres", 0.25, 1.0, 1.1),
                          row("postgres", 0.5, 1.1, 1.2)), "postgres", "fts")
    assert [lv.level for lv in found.levels] == [0.25, 0.5, 0.75]
    assert found.held.level == 0.5 and found.stopped.level == 0.75 and found.stopped.state == MISSED
    assert [lv.state for lv in found.levels] == [HELD, HELD, MISSED]


def test_a_level_that_cannot_be_read_stops_the_reading_and_names_why():
    straddling = carried(frame(row("postgres", 0.25, 1.1, 1.3)), "postgres", "fts")
    assert straddling.held is None and straddling.stopped.state == "straddles the band"
    assert outcome(straddling, carried(frame(), "dedicated", "fts")).startswith(f"{NOT_DECIDED}: Postgres straddles")
    behind = carried(frame(row("postgres", 0.25, 1.0, 1.0, sustained=False)), "postgres", "fts")
    assert behind.stopped.state == "churn not sustained"
    slow = carried(frame(row("postgres", 0.25, 1.0, 1.0, kept_up=False)), "postgres", "fts")
    assert slow.stopped.state == "tenant fell behind its offered rate"


def test_a_level_a_repetition_ran_faster_beside_the_churn_than_alone_is_not_read_as_held():
    """Churn adds work: ×0.76 beside it says the pair did not run on the same box, so the level
    above it cannot rest on this one (the OLTP tenant's 25 % level in the committed records)."""
    found = carried(frame(row("postgres", 0.25, 0.76, 1.22, tenant="oltp"), row("postgres", 0.5, 0.93, 1.14, tenant="oltp")),
                    "postgres", "oltp")
    assert found.held is None and found.stopped.level == 0.25
    assert found.stopped.state.startswith("windows not comparable: a repetition ran faster") and "×0.76" in found.stopped.state
    assert carried(frame(row("postgres", 0.25, 0.81, 1.2)), "postgres", "fts").stopped is None


def test_postgres_holding_every_level_suffices_and_a_miss_the_dedicated_side_holds_is_its_win():
    every = frame(row("postgres", 0.25, 1.0, 1.1), row("postgres", 0.75, 1.1, 1.2))
    assert outcome(carried(every, "postgres", "fts"), carried(every, "dedicated", "fts")) == POSTGRES_MEETS
    both = frame(row("postgres", 0.5, 1.0, 1.1), row("postgres", 0.75, 1.5, 2.0),
                 row("dedicated", 0.5, 1.0, 1.0), row("dedicated", 0.75, 1.0, 1.2))
    assert outcome(carried(both, "postgres", "fts"), carried(both, "dedicated", "fts")) == DEDICATED_WINS
    unmeasured = frame(row("postgres", 0.5, 1.0, 1.1), row("postgres", 0.75, 1.5, 2.0), row("dedicated", 0.5, 1.0, 1.0))
    assert outcome(carried(unmeasured, "postgres", "fts"), carried(unmeasured, "dedicated", "fts")) == (
        f"{NOT_DECIDED}: the dedicated side ran no level at or above 75%")
    moved = frame(row("postgres", 0.75, 1.5, 2.0), row("dedicated", 0.75, 1.3, 1.4))
    assert outcome(carried(moved, "postgres", "fts"), carried(moved, "dedicated", "fts")) == (
        f"{NOT_DECIDED}: the dedicated side held no level at or above 75% (missed at 75% of the "
        "churn's capacity (750 jobs/s))")


def test_one_cell_per_bystander_with_the_jobs_per_s_and_the_compared_seconds():
    rows = frame(row("postgres", 0.25, 1.0, 1.1), row("postgres", 0.5, 1.3, 1.4), row("dedicated", 0.5, 1.0, 1.1),
                 row("postgres", 0.25, 1.0, 1.0, tenant="oltp"))
    cells = {c.scale: c for c in colocation_cells(rows)}
    fts = cells["co-location: full-text search beside the queue's churn, how much churn"]
    assert fts.outcome == DEDICATED_WINS and fts.window_s == 58  # the seconds each repetition compared
    assert fts.figures[0] == ("holds up to 25% of the churn's capacity (250 jobs/s); missed at 50% of the churn's "
                              "capacity (500 jobs/s)")
    assert fts.postgres.value == 0.25 and fts.dedicated.value == 0.5
    oltp = cells["co-location: point lookups (OLTP) beside the queue's churn, how much churn"]
    assert oltp.outcome == POSTGRES_MEETS and oltp.figures[1] == "not measured" and oltp.dedicated is None
    assert colocation_cells(pd.DataFrame()) == [] and colocation_cells(None) == []


def stretch_rows(mechanism, before, during, repetition=0, tenant="fts"):
    return [{"mechanism": mechanism, "repetition": repetition, "stretch": "before", f"{tenant}_p99_ms_median_s": before},
            {"mechanism": mechanism, "repetition": repetition, "stretch": "during", f"{tenant}_p99_ms_median_s": during}]


def test_the_longest_hold_a_bystander_rides_through_is_read_against_its_own_before_stretch():
    from pglimits_core.workloads.interference.colocation import NO_HORIZON, hold_cells

    stalls = pd.DataFrame(stretch_rows("idle_xid_60s", 10.0, 11.0) + stretch_rows("idle_xid_300s", 10.0, 19.0)
                          + stretch_rows("idle_xid_300s | holder_timeout", 10.0, 10.0)
                          + stretch_rows("rr_query_60s", 10.0, 13.0))
    cells = {c.scale: c for c in hold_cells(stalls)}
    idle = cells["co-location: full-text search beside the churn while a session idle in a transaction that took "
                 "an XID, how long"]
    assert idle.figures[0] == "holds through 60 s; missed at 300 s (during ÷ before ×1.90)"
    assert idle.postgres.value == 60 and idle.dedicated is None and idle.outcome.startswith(f"{NOT_DECIDED}: {NO_HORIZON}")
    query = cells["co-location: full-text search beside the churn while a REPEATABLE READ query running, how long"]
    assert query.figures[0].startswith("holds through no hold run; missed at 60 s") and query.postgres.value == 0
    assert hold_cells(pd.DataFrame()) == []


def test_the_dedicated_side_holding_at_postgres_miss_wins_even_if_it_misses_higher():
    rows = frame(row("postgres", 0.25, 1.0, 1.1), row("postgres", 0.5, 1.4, 1.6),
                 row("dedicated", 0.5, 1.0, 1.1), row("dedicated", 0.75, 1.5, 1.7))
    assert outcome(carried(rows, "postgres", "fts"), carried(rows, "dedicated", "fts")) == DEDICATED_WINS


def test_a_hold_the_bystander_missed_also_says_the_queue_stalled_while_held():
    from pglimits_core.workloads.interference.colocation import hold_cells

    rows = stretch_rows("idle_xid_60s", 10.0, 20.5)
    rows[1].update(completed_per_s=372.3, offered_per_s=1142.2)
    (cell,) = hold_cells(pd.DataFrame(rows))
    assert cell.figures[0] == ("holds through no hold run; missed at 60 s (during ÷ before ×2.05), "
                               "churn fell to 372 of 1,142 jobs/s while held (1 of 1 runs)")


def test_a_hold_held_only_after_one_that_was_not_does_not_count():
    from pglimits_core.workloads.interference.colocation import hold_cells

    stalls = pd.DataFrame(stretch_rows("idle_xid_60s", 10.0, 11.0) + stretch_rows("idle_xid_120s", 10.0, 19.0)
                          + stretch_rows("idle_xid_300s", 10.0, 10.5))
    (cell,) = hold_cells(stalls)
    assert cell.postgres.value == 60 and cell.figures[0].startswith("holds through 60 s; missed at 120 s")


def test_the_mitigations_table_sets_each_mitigated_window_beside_its_mechanism_unmitigated():
    from pglimits_core.workloads.interference.mitigations import mitigations_table

    def tenant_rows(mechanism, level, jobs, p99s, runs=1):
        return [{"side": "postgres", "mechanism": mechanism, "level": level, "tenant": tenant, "churn_rate": 1016.4,
                 "jobs_per_s": jobs, "runs": runs, "churn_sustained": jobs > 1000, "p99_ms": p99}
                for tenant, p99 in zip(("fts", "vector", "oltp", "churn"), p99s, strict=True)]

    inflation = pd.DataFrame(tenant_rows("idle_xid_300s", 0.5, 492.1, (450.3, 52.2, 7.9, 257364.1))
                             + tenant_rows("idle_xid_300s | holder_timeout", 0.5, 1012.4, (240.5, 21.7, 6.2, 14987.6))
                             + tenant_rows("churn", 0.5, 1010.6, ("159.36 (133.63–171.90)", 17.0, 3.4, 34.1), runs=3))
    stalls = pd.DataFrame([{"mechanism": m, "stretch": "during", "start_s": 20.0, "end_s": 320.0, "jobs": jobs,
                            "dead_tuples_max": dead}
                           for m, jobs, dead in (("idle_xid_300s", 43_560, 87_040), ("idle_xid_300s | holder_timeout",
                                                                                     304_560, 37_032))])
    table = mitigations_table(inflation, stalls)
    assert len(table) == 1
    row = table.iloc[0]
    assert (row.mechanism, row.mitigation, row.completed_per_s, row.unmitigated_completed_per_s) == (
        "idle_xid_300s", "holder_timeout", 1012.4, 492.1)
    assert (row.during_act_per_s, row.unmitigated_during_act_per_s) == (1015.2, 145.2)
    assert (row.dead_tuples_max_during, row.unmitigated_dead_tuples_max_during) == (37032, 87040)
    assert (row.fts_p99_ms, row.fts_p99_ms_unmitigated, row.churn_sustained) == (240.5, 450.3, True)
    assert mitigations_table(pd.DataFrame(), pd.DataFrame()).empty
    assert row.compared_over_s == "the whole act"


def test_a_hold_a_timeout_released_is_compared_over_the_same_seconds_unmitigated(tmp_path):
    """The timeout let the hold stand 30 s: its rate then is set beside the unmitigated hold's
    first 30 s from the act's start (read from that run's per-second churn counts), not its 300 s."""
    from pglimits_core.workloads.interference.mitigations import (
        mitigations_table,
        same_seconds_from,
    )

    seconds = list(range(0, 330))
    # the unmitigated hold: 400 jobs/s over its first 30 s from t = 20, then 100 jobs/s
    items = [1100 if s < 20 else 400 if s < 50 else 100 for s in seconds]
    pd.DataFrame({"role": "churn", "second": seconds, "items": items}).to_parquet(tmp_path / "timeseries.parquet")
    runs = pd.DataFrame([{"mechanism": "idle_xid_300s", "level": 0.5, "path": str(tmp_path),
                          "outcome": {"events": {"act_start_s": 20.0}}}])
    inflation = pd.DataFrame([{"side": "postgres", "mechanism": m, "level": 0.5, "tenant": "churn", "churn_rate": 1100.0,
                               "jobs_per_s": 900.0, "runs": 1, "churn_sustained": False, "p99_ms": 1.0}
                              for m in ("idle_xid_300s", "idle_xid_300s | holder_timeout")])
    stalls = pd.DataFrame([{"mechanism": "idle_xid_300s", "stretch": "during", "start_s": 20.0, "end_s": 320.0,
                            "jobs": 150 * 300, "held_s": None, "held_completed_per_s": None, "dead_tuples_max": 90_000},
                           {"mechanism": "idle_xid_300s | holder_timeout", "stretch": "during", "start_s": 20.0,
                            "end_s": 320.0, "jobs": 1100 * 300, "held_s": 30.1, "held_completed_per_s": 455.0,
                            "dead_tuples_max": 48_000}])
    row = mitigations_table(inflation, stalls, same_seconds_from(runs)).iloc[0]
    assert (row.during_act_per_s, row.unmitigated_during_act_per_s) == (455.0, 400.0)
    assert row.compared_over_s == "the act's first 30.1 s"
    # without the runs to read, the comparison is not made rather than made over other seconds
    assert pd.isna(mitigations_table(inflation, stalls).iloc[0].unmitigated_during_act_per_s)


def queue_row(side, level, p99_ms, spread=None):
    """The churn's own inflation row at a level: its job p99 (worst repetition), or only the
    spread text of tables written before ``p99_worst_ms``."""
    found = {**row(side, level, None, None, tenant="churn"), "p99_ms": spread or f"{p99_ms:.2f}"}
    return found if spread else {**found, "p99_worst_ms": p99_ms}


def test_a_queue_that_keeps_its_rate_only_by_queueing_its_jobs_is_not_carried():
    """The bystander in its band at 75 % but the churn's job p99 at 306 ms in one repetition: the
    level is the queue's miss, and a dedicated side that held it there with its queue inside the
    target wins the cell."""
    from pglimits_core.workloads.interference.colocation import QUEUE_TARGET_MS, is_miss

    rows = frame(row("postgres", 0.5, 1.0, 1.1), row("postgres", 0.75, 1.0, 1.1),
                 queue_row("postgres", 0.5, 36.7), queue_row("postgres", 0.75, None, spread="217.99 (202.95–305.94)"),
                 row("dedicated", 0.75, 1.0, 1.2), queue_row("dedicated", 0.75, 12.0))
    postgres = carried(rows, "postgres", "fts")
    assert postgres.held.level == 0.5 and is_miss(postgres.stopped.state)
    assert postgres.stopped.state == f"the queue's job p99 above its target (306 ms > {QUEUE_TARGET_MS:g} ms)"
    assert outcome(postgres, carried(rows, "dedicated", "fts")) == DEDICATED_WINS
    slow_dedicated = frame(*[r for r in rows.to_dict("records") if r["side"] == "postgres"],
                           row("dedicated", 0.75, 1.0, 1.2), queue_row("dedicated", 0.75, 229.0))
    assert outcome(postgres, carried(slow_dedicated, "dedicated", "fts")).startswith(
        f"{NOT_DECIDED}: the dedicated side held no level at or above 75%")
