"""The core capacity experiment against a synthetic design with a known knee, its table from
records alone, and the queue's capacity cells (bracket, floor, like for like)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pglimits_core.analysis.verdict import BY_RATE, LOAD, LOAD_LIMITED
from pglimits_core.experiments.capacity import (
    CEILING,
    CONFIRM,
    PROBE,
    CapacityPlan,
    measure_capacity,
)
from pglimits_core.experiments.capacity_cells import capacity_side
from pglimits_core.experiments.capacity_table import capacity_table
from pglimits_core.load.ratesearch import PointResult
from pglimits_core.record.summary import Summary
from pglimits_core.studies.runner import RecordedRun
from pglimits_core.workloads.queue.capacity_cells import capacity_cells

PLAN = CapacityPlan(targets_ms=(10.0,), ceiling_clients=(4,), ceiling_s=30, warmup_s=5, repetitions=3,
                    probe_s=5, start_rate=250, max_probes=8, steady_s=30, confirmations=3)


class KneeDesign:
    """p99 5 ms up to ``knee`` jobs/s, 80 ms above; ``flaky`` confirmations fail once each."""

    label, system, server = "pg_delete batch=1", "pg_delete", "postgres"

    def __init__(self, knee: float, flaky: int = 0):
        self.knee, self.flaky, self.calls = knee, flaky, []

    def ceiling_run(self, run, clients, warmup_s, duration_s, params):
        self.calls.append(params)
        return RecordedRun(Path("/nowhere"), Summary(run_id="c", status="complete", entries=[]), "complete", None, {})

    def rate_run(self, run, rate, warmup_s, duration_s, params):
        self.calls.append({**params, "duration_s": duration_s})
        return RecordedRun(Path("/nowhere"), Summary(run_id=str(rate), status="complete", entries=[]), "complete",
                           None, {})

    def reading(self, summary, offered, outcome):
        failing = self.flaky and self.calls[-1]["stage"] == CONFIRM
        if failing:
            self.flaky -= 1
        p99 = 80_000 if offered > self.knee or failing else 5_000
        return PointResult(offered, offered, 1_000, p99)


def test_the_ceiling_comes_first_then_short_probes_then_steady_confirmations():
    design = KneeDesign(knee=1000)
    records = measure_capacity(None, design, PLAN)
    stages = [call["stage"] for call in design.calls]
    assert stages[:3] == [CEILING] * 3 and len(records) == len(design.calls)
    probes = [c for c in design.calls if c["stage"] == PROBE]
    confirms = [c for c in design.calls if c["stage"] == CONFIRM]
    assert probes and all(c["duration_s"] == PLAN.probe_s for c in probes)
    # three windows at the confirmed rate, then one at the probe that missed above it (it misses)
    assert len(confirms) == 3 + 1 and all(c["duration_s"] == PLAN.steady_s for c in confirms)
    confirmed = confirms[0]["offered_per_s"]
    assert 900 <= confirmed <= 1000 and all(c["offered_per_s"] == confirmed for c in confirms[:3])


def test_a_looser_target_starts_at_the_tighter_ones_rate_and_never_confirms_below_it_again():
    from dataclasses import replace

    design = KneeDesign(knee=1000)
    measure_capacity(None, design, replace(PLAN, targets_ms=(50.0, 10.0)))
    tight = [c["offered_per_s"] for c in design.calls if c["stage"] == CONFIRM and c["target_p99_ms"] == 10.0]
    held_at_10 = tight[0]
    loose_probes = [c["offered_per_s"] for c in design.calls if c["stage"] == PROBE and c["target_p99_ms"] == 50.0]
    loose_confirms = [c["offered_per_s"] for c in design.calls if c["stage"] == CONFIRM and c["target_p99_ms"] == 50.0]
    assert min(loose_probes) >= held_at_10  # the 10-ms windows hold 50 ms: nothing below them is probed
    assert all(rate > held_at_10 for rate in loose_confirms)  # nor confirmed again


class CeilingReadingDesign(KneeDesign):
    """A knee design whose ceiling windows it can read: ``ceiling`` items/s each."""

    def __init__(self, knee: float, ceiling: float):
        super().__init__(knee)
        self.ceiling = ceiling

    def items_per_s(self, summary):
        return self.ceiling


def test_with_a_start_share_the_search_starts_at_that_share_of_the_ceiling_and_narrows_the_knee():
    from dataclasses import replace

    plan = replace(PLAN, start_share=0.5, max_probes=6)
    design = CeilingReadingDesign(knee=30_000, ceiling=36_000)
    measure_capacity(None, design, plan)
    probes = [c["offered_per_s"] for c in design.calls if c["stage"] == PROBE]
    assert probes[0] == 18_000  # half the ceiling, not the plan's 250
    confirmed = next(c["offered_per_s"] for c in design.calls if c["stage"] == CONFIRM)
    assert 27_000 <= confirmed <= 30_000  # within the search's 10 % of the knee on 6 probes
    # from 250 the same 6 probes only double to 8,000: nowhere near the knee
    fixed = CeilingReadingDesign(knee=30_000, ceiling=36_000)
    measure_capacity(None, fixed, replace(PLAN, max_probes=6))
    assert max(c["offered_per_s"] for c in fixed.calls if c["stage"] == PROBE) < 27_000
    # a design that cannot read its ceiling keeps the plan's start
    plain = KneeDesign(knee=1000)
    measure_capacity(None, plain, plan)
    assert next(c["offered_per_s"] for c in plain.calls if c["stage"] == PROBE) == PLAN.start_rate


def test_a_confirmation_that_fails_steps_the_rate_down_and_confirms_again():
    design = KneeDesign(knee=1000, flaky=1)
    measure_capacity(None, design, PLAN)
    confirms = [c["offered_per_s"] for c in design.calls if c["stage"] == CONFIRM]
    assert len(confirms) == 1 + 3 and confirms[1] < confirms[0]
    assert abs(confirms[1] - confirms[0] * PLAN.step_down) < 0.01


def record(stage: str, rate: float, p99_ms: float, limit: str = "neither", variant="pg_delete batch=1",
           server="postgres", required: int = 3) -> dict:
    params = {"experiment": "capacity", "variant": variant, "stage": stage, "target_p99_ms": 10.0,
              "offered_per_s": rate, "window_s": 30, "clients": 4, "confirmations_required": required,
              "slo": {"p99_bound_us": 10_000, "min_achieved_fraction": 0.99, "max_backlog_growth": 0.01}}
    manifest = {"status": "complete", "system": variant.split()[0], "servers": {server: {}}, "params": params,
                "limit": {"side": limit}, "cpu": {"exact": {"server_cores_used": 0.5}}}
    return {"manifest": manifest, "summary": Summary(run_id=f"{rate}-{p99_ms}", status="complete", entries=[]).model_dump()}


def reading(summary, offered, outcome):
    return PointResult(offered, offered, None, float(summary.run_id.split("-")[1]) * 1000)


def test_the_table_reads_the_capacity_its_bracket_and_the_held_windows_from_the_records():
    records = [record(PROBE, 500, 4), record(PROBE, 1000, 30), record(PROBE, 750, 6),
               record(CONFIRM, 750, 6.5), record(CONFIRM, 750, 7.0), record(CONFIRM, 750, 6.0)]
    row = capacity_table(records + [record(CONFIRM, 1000, 30)], reading, lambda s: 0.0).iloc[0]
    assert row.capacity_per_s == 750 and row.capacity_miss_per_s == 1000
    assert row.confirmations == "3 of 3 held" and row.p99_ms == 6.5 and row.p99_high_ms == 7.0
    assert row.side == "postgres" and row.capacity_limit == "neither"
    assert row.server_cpu_us_per_item == 0.5 / 750 * 1e6


def test_a_failed_confirmation_at_a_rate_does_not_count_it_held():
    records = [record(CONFIRM, 900, 6), record(CONFIRM, 900, 40)] + [record(CONFIRM, 765, 6)] * 3
    row = capacity_table(records, reading, lambda s: 0.0).iloc[0]
    assert row.capacity_per_s == 765 and row.confirmations == "3 of 3 held"


def test_a_capacity_is_never_read_above_a_steady_window_that_missed_below_it():
    """A tail that is not monotone in rate: a steady window missed at 938/s while 1,313/s held all
    three — the capacity is the held rate under the miss (656), bracketed by it, and the rate that
    held above it is kept to show; with nothing held under the miss, the capacity is below it."""
    records = ([record(CONFIRM, 656, 6)] * 3 + [record(CONFIRM, 938, 6), record(CONFIRM, 938, 119)]
               + [record(CONFIRM, 1313, 8)] * 3)
    row = capacity_table(records, reading, lambda s: 0.0).iloc[0]
    assert row.capacity_per_s == 656 and row.capacity_miss_per_s == 938 and row.held_above_miss_per_s == 1313
    nothing_under = capacity_table([record(CONFIRM, 938, 119)] + [record(CONFIRM, 1313, 8)] * 3,
                                   reading, lambda s: 0.0).iloc[0]
    assert pd.isna(nothing_under.capacity_per_s) and nothing_under.below_per_s == 938
    monotone = capacity_table([record(CONFIRM, 656, 6)] * 3 + [record(CONFIRM, 938, 60)], reading,
                              lambda s: 0.0).iloc[0]
    assert monotone.capacity_per_s == 656 and pd.isna(monotone.held_above_miss_per_s)


def test_an_errored_or_thin_window_vetoes_no_rate_that_held():
    errored = record(CONFIRM, 938, 119)
    errored["manifest"]["status"] = "failed"
    thin = record(CONFIRM, 938, 119)
    thin["manifest"]["params"]["window_s"] = 0.05  # 47 operations: no p99
    for veto in (errored, thin):
        row = capacity_table([record(CONFIRM, 656, 6)] * 3 + [veto] + [record(CONFIRM, 1313, 8)] * 3,
                             reading, lambda s: 0.0).iloc[0]
        assert row.capacity_per_s == 1313 and pd.isna(row.held_above_miss_per_s)


def test_a_non_monotone_capacity_says_so_in_its_words():
    from pglimits_core.experiments.capacity_summary import capacity_text

    records = ([record(CONFIRM, 656, 6)] * 3 + [record(CONFIRM, 938, 119)] + [record(CONFIRM, 1313, 8)] * 3)
    row = capacity_table(records, reading, lambda s: 0.0).iloc[0]
    words = capacity_text(row, "jobs/s")
    assert words.startswith("656–938 jobs/s") and "every window held at 1,313 too, above the miss at 938" in words


def test_an_interrupted_confirmation_confirms_nothing():
    """1 of 3 windows measured (a sitting stopped mid-confirmation) holds no rate."""
    records = [record(PROBE, 1000, 30), record(CONFIRM, 900, 6)]
    row = capacity_table(records, reading, lambda s: 0.0).iloc[0]
    assert pd.isna(row.capacity_per_s) and row.confirmations == "none held"


def test_a_point_is_judged_by_the_slo_its_record_carries():
    strict = record(CONFIRM, 750, 6.5)
    strict["manifest"]["params"]["slo"]["p99_bound_us"] = 5_000  # recorded as held to 5 ms
    row = capacity_table([strict] * 3, reading, lambda s: 0.0).iloc[0]
    assert pd.isna(row.capacity_per_s)


def test_only_a_steady_windows_miss_bounds_a_capacity_a_probes_is_kept_to_show():
    records = [record(PROBE, 1000, 30)] + [record(CONFIRM, 750, 6.0)] * 3
    row = capacity_table(records, reading, lambda s: 0.0).iloc[0]
    assert pd.isna(row.capacity_miss_per_s) and row.probe_miss_per_s == 1000
    bounded = capacity_side(pd.Series({**row.to_dict(), "ceiling_high": 900.0, "ceiling_limit": "server"}))
    assert bounded.value_range == (750.0, 900.0) and bounded.limit != LOAD  # its server's own ceiling
    unbounded = capacity_side(pd.Series({**row.to_dict(), "ceiling_high": 900.0, "ceiling_limit": "load"}))
    assert unbounded.limit == LOAD and unbounded.value_range == (750.0, 750.0)


def test_where_only_a_probe_missed_above_the_confirmed_rate_steady_windows_pin_the_top():
    design = KneeDesign(knee=1000)
    measure_capacity(None, design, PLAN)
    confirms = [c["offered_per_s"] for c in design.calls if c["stage"] == CONFIRM]
    probes = {c["offered_per_s"] for c in design.calls if c["stage"] == PROBE}
    top = confirms[-1]
    assert top > confirms[0] and top in probes and top > design.knee  # one window there, and it missed
    assert confirms.count(top) == 1


def test_a_miss_the_load_caused_makes_the_capacity_a_floor():
    records = [record(CONFIRM, 1000, 30, limit="load")] + [record(CONFIRM, 750, 6.0)] * 3
    row = capacity_table(records, reading, lambda s: 0.0).iloc[0]
    assert row.capacity_miss_limit == "load"
    assert capacity_side(row).limit == LOAD


def capacity_row(variant, rate, miss, limit="neither", side="postgres", klass="per_commit", ceiling=1000.0):
    return {"variant": variant, "side": side, "durability_class": klass, "target_p99_ms": 10.0,
            "capacity_per_s": rate, "capacity_miss_per_s": miss, "capacity_limit": limit,
            "server_cpu_us_per_item": 100.0, "ceiling_per_s": ceiling, "ceiling_low": ceiling * 0.9,
            "ceiling_high": ceiling * 1.1, "ceiling_limit": "server"}


def test_windows_that_held_with_the_load_saturated_held_and_a_server_bound_above_makes_a_bracket():
    # pub/sub at 10 subscribers: psload's core saturated at 12,000/s, which held; the server missed 14,400
    held = {**capacity_row("pg_notify batch=1", 12_000.0, 14_400.0, limit=LOAD, ceiling=13_800.0),
            "capacity_miss_limit": "server"}
    side = capacity_side(pd.Series(held))
    assert side.value_range == (12_000.0, 14_400.0) and side.limit == "server" and not side.floor
    # no steady miss above: the server-limited ceiling bounds it
    side = capacity_side(pd.Series({**held, "capacity_miss_per_s": None, "capacity_miss_limit": None}))
    assert side.value_range == (12_000.0, 13_800.0 * 1.1) and side.limit == "server"
    # a steady miss above a lower ceiling still bounds it: the ceiling may be another tool's
    side = capacity_side(pd.Series({**held, "capacity_miss_per_s": 16_000.0}))
    assert side.value_range == (12_000.0, 16_000.0)
    # a record that does not say who set the miss: the held windows' saturated load leaves it a floor
    side = capacity_side(pd.Series({**held, "capacity_miss_limit": None}))
    assert side.floor and side.limit == LOAD


def test_a_capacity_is_a_bracket_and_without_a_miss_above_it_a_floor():
    bracket = capacity_side(pd.Series(capacity_row("pg_delete batch=1", 750.0, 1000.0)))
    assert bracket.value_range == (750.0, 1000.0) and bracket.limit == "neither"
    floor = capacity_side(pd.Series(capacity_row("redis_reliable batch=1", 3000.0, None, side="dedicated")))
    assert floor.limit == LOAD and floor.value_range == (3000.0, 3000.0)


def test_the_queue_cells_pair_like_for_like_designs_of_a_class_and_judge_by_rate():
    table = pd.DataFrame([capacity_row("pg_skiplocked batch=1", 700.0, 800.0),
                          capacity_row("redis_reliable appendfsync=always batch=1", 3000.0, 3400.0, side="dedicated"),
                          capacity_row("pg_delete batch=1", 900.0, 1000.0)])  # at-most-once: no Redis peer
    cells = capacity_cells(table)
    target = next(c for c in cells if "10 ms" in c.target)
    assert target.postgres.system == "pg_skiplocked batch=1"
    assert target.verdict.klass == BY_RATE and target.verdict.winner == "redis_reliable appendfsync=always batch=1"
    floors = pd.DataFrame([capacity_row("pg_skiplocked batch=1", 700.0, 800.0),
                           capacity_row("redis_reliable batch=1", 750.0, None, side="dedicated", ceiling=600.0)])
    floored = next(c for c in capacity_cells(floors) if "10 ms" in c.target)
    assert floored.verdict.klass == LOAD_LIMITED  # a floor inside the other's bracket decides nothing


def test_a_queue_design_measured_by_its_ceiling_alone_makes_no_cell():
    """SQLite's ceilings (the source studies' peak figures) have no target: no cell, and they do not
    enter the ceiling cell of their class either."""
    sqlite = {**capacity_row("sqlite_wal batch=1", None, None, side="dedicated", klass="periodic", ceiling=9000.0),
              "target_p99_ms": None}
    table = pd.DataFrame([capacity_row("pg_skiplocked batch=1", 700.0, 800.0),
                          capacity_row("redis_reliable appendfsync=always batch=1", 3000.0, 3400.0, side="dedicated"),
                          sqlite])
    cells = capacity_cells(table)
    assert cells and not any("periodic" in c.scale for c in cells)
    assert all(c.dedicated is None or "sqlite" not in c.dedicated.system for c in cells)


def test_a_cell_decides_only_from_steady_windows():
    from pglimits_core.analysis.decision import NOT_DECIDED, Cell, words
    from pglimits_core.analysis.verdict import Side

    postgres, dedicated = Side("pg", 1000.0, "server", (950.0, 1050.0)), Side("redis", 4000.0, "server", (3900.0, 4100.0))
    steady = Cell("queue", "capacity", "p99 ≤ 10 ms", postgres, dedicated, "capacity", window_s=30.0)
    short = Cell("queue", "peak", "none", postgres, dedicated, "throughput", window_s=2.0)
    unknown = Cell("queue", "peak", "none", postgres, dedicated, "throughput")
    assert words(steady) == "dedicated wins"
    assert words(short).startswith(f"{NOT_DECIDED}: 2-s windows") and "indicative: dedicated wins" in words(short)
    assert "a sweep's short windows" in words(unknown) and "indicative: dedicated wins" in words(unknown)


class ToolDesign(KneeDesign):
    """A design whose ceiling ran a C tool: the harness checks it on the same clients."""

    def check_run(self, run, clients, warmup_s, duration_s, params):
        self.calls.append({**params, "duration_s": duration_s})
        return RecordedRun(Path("/nowhere"), Summary(run_id="h", status="complete", entries=[]), "complete", None, {})


def test_a_tool_ceiling_is_checked_by_the_harness_after_it_and_a_harness_ceiling_is_not():
    from pglimits_core.experiments.capacity import CHECK, VariantDesign

    design = ToolDesign(knee=1000)
    records = measure_capacity(None, design, PLAN)
    stages = [call["stage"] for call in design.calls]
    assert stages[:4] == [CEILING] * 3 + [CHECK] and len(records) == len(design.calls)
    assert design.calls[3]["clients"] == 4 and design.calls[3]["duration_s"] == PLAN.ceiling_s
    assert VariantDesign().check_run(None, 4, 1, 30, {}) is None  # the harness's own ceiling: nothing to check


def ceiling_record(stage: str, rate: float, tool: str | None = "pgbench", clients: int = 4) -> dict:
    params = {"experiment": "capacity", "variant": "pg_delete batch=1", "stage": stage, "clients": clients,
              "repetition": 0, "window_s": 30, "target_p99_ms": None, **({"tool": tool} if tool else {})}
    manifest = {"status": "complete", "system": "pg_delete", "servers": {"postgres": {}}, "params": params,
                "limit": {"side": "server"}, "cpu": {"exact": {"server_cores_used": 0.9}}}
    return {"manifest": manifest, "summary": Summary(run_id=str(rate), status="complete", entries=[]).model_dump()}


def test_the_table_sets_the_harness_beside_its_tool_and_says_whether_they_agree():
    from pglimits_core.experiments.capacity import CHECK

    rate = lambda summary: float(summary.run_id)  # noqa: E731
    agree = capacity_table([ceiling_record(CEILING, 4000), ceiling_record(CHECK, 3300, tool=None)], reading, rate)
    row = agree.iloc[0]
    assert row.ceiling_by == "pgbench" and row.check_per_s == 3300 and row.agrees
    assert abs(row.check_over_ceiling - 0.825) < 1e-9
    apart = capacity_table([ceiling_record(CEILING, 4000), ceiling_record(CHECK, 2900, tool=None)], reading, rate)
    assert not apart.iloc[0].agrees  # 0.725: outside the 25 % band
    unchecked = capacity_table([ceiling_record(CEILING, 4000)], reading, rate).iloc[0]
    assert unchecked.ceiling_by == "pgbench" and unchecked.agrees is None
    other_clients = capacity_table([ceiling_record(CEILING, 4000), ceiling_record(CHECK, 3900, None, clients=8)],
                                   reading, rate).iloc[0]
    assert other_clients.agrees is None  # a check on other terms checks nothing
    harness = capacity_table([ceiling_record(CEILING, 4000, tool=None)], reading, rate).iloc[0]
    assert harness.ceiling_by is None and harness.agrees is None


def test_a_harness_check_limited_by_its_own_core_checks_nothing_and_the_cell_says_so():
    from pglimits_core.experiments.capacity import CHECK

    rate = lambda summary: float(summary.run_id)  # noqa: E731
    floor = ceiling_record(CHECK, 4600, tool=None)
    floor["manifest"]["limit"] = {"side": "load"}
    row = capacity_table([ceiling_record(CEILING, 30000, tool="qload"), floor], reading, rate).iloc[0]
    assert row.check_limit == LOAD and row.agrees is None  # it measured its own core, not the server
    server_bound = capacity_table([ceiling_record(CEILING, 30000, tool="qload"),
                                   ceiling_record(CHECK, 4600, tool=None)], reading, rate).iloc[0]
    assert server_bound.agrees is not None and not server_bound.agrees  # a server-limited harness that far below: they disagree
    from pglimits_core.experiments.capacity_cells import load_check

    assert "limited by its own core (a floor: no check of the server)" in load_check(row)


def test_a_cell_says_whether_its_deciding_rows_passed_the_load_check():
    checked = {"ceiling_by": "pgbench", "agrees": False, "check_over_ceiling": 0.6}
    table = pd.DataFrame([{**capacity_row("pg_skiplocked batch=1", 700.0, 800.0), **checked},
                          {**capacity_row("redis_reliable appendfsync=always batch=1", 3000.0, 3400.0,
                                          side="dedicated"), "ceiling_by": None, "agrees": None}])
    cell = next(c for c in capacity_cells(table) if "10 ms" in c.target)
    assert "pg_skiplocked batch=1: harness ×0.60 of pgbench (disagree" in cell.load_check
    assert "redis_reliable appendfsync=always batch=1: ceiling by the harness alone" in cell.load_check
    from pglimits_core.analysis.decision import row

    assert row(cell)["load_check"] == cell.load_check


class CeilingOnlyDesign(KneeDesign):
    targets_ms = ()  # its ceiling alone (the search's match-set classes)


def test_a_design_with_no_targets_of_its_own_measures_its_ceiling_alone():
    design = CeilingOnlyDesign(knee=1000)
    measure_capacity(None, design, PLAN)
    assert [c["stage"] for c in design.calls] == [CEILING] * PLAN.repetitions


def test_the_table_splits_one_variant_by_a_params_key_and_keeps_each_client_counts_ceiling():
    def on(record, stream, clients=4):
        record["manifest"]["params"] |= {"stream": stream, "clients": clients}
        return record

    rate = lambda summary: float(summary.run_id)  # noqa: E731
    records = [on(ceiling_record(CEILING, 4000), "mixed"), on(ceiling_record(CEILING, 3000), "rare"),
               on(ceiling_record(CEILING, 3600), "rare", clients=32), on(ceiling_record(CEILING, 3400), "rare", 32)]
    table = capacity_table(records, reading, rate, split_by="stream").set_index("stream")
    assert table.loc["mixed", "ceiling_per_s"] == 4000 and table.loc["rare", "ceiling_per_s"] == 3500
    rare = {c["clients"]: c for c in table.loc["rare", "ceiling_by_clients"]}
    assert rare[4]["per_s"] == 3000 and (rare[32]["low"], rare[32]["high"], rare[32]["runs"]) == (3400, 3600, 2)
    assert rare[32]["p99_ms"] is None  # no latency in these summaries: none made up
    assert "stream" not in capacity_table(records, reading, rate)  # unsplit: one design per variant


def test_a_peer_that_held_nothing_is_still_the_pair_and_the_cell_says_what_it_tried():
    failed_pg = {**capacity_row("pg_skiplocked batch=10", None, None), "confirm_s": 30.0,
                 "confirm_failed": [(3500.0, 162.8, "server"), (2975.0, 2663.0, "neither")],
                 "probe_held_max_per_s": 3500.0}
    table = pd.DataFrame([capacity_row("pg_skiplocked batch=1", 2000.0, 2125.0),
                          capacity_row("redis_reliable appendfsync=always batch=1", 2337.5, 2750.0, side="dedicated"),
                          failed_pg,
                          capacity_row("redis_reliable appendfsync=always batch=10 pipeline=10", 4037.5, 4750.0,
                                       side="dedicated")])
    target = next(c for c in capacity_cells(table) if "10 ms" in c.target)
    assert target.dedicated.system == "redis_reliable appendfsync=always batch=10 pipeline=10"
    assert target.postgres is None  # the batch-10 pair, not the batch-1 one it used to fall back to
    assert ("Postgres: no design held the target (pg_skiplocked batch=10's 30-s window sets failed at 3,500 and "
            "2,975/s (its short probes held up to 3,500/s); the search stopped there: no rate below 2,975/s was "
            "tried)") in target.missing


def test_steady_windows_its_load_failed_are_named_floors_of_the_load_and_the_others_neither_side_s():
    loaded = {**capacity_row("redis_reliable batch=1", None, None, side="dedicated", klass="none"), "confirm_s": 30.0,
              "confirm_failed": [(24000.0, 19.4, LOAD), (20400.0, 10.8, "neither")], "probe_held_max_per_s": 16000.0}
    table = pd.DataFrame([capacity_row("pg_skiplocked batch=1 persistence=unlogged", None, None, klass="none"), loaded])
    target = next(c for c in capacity_cells(table) if "10 ms" in c.target)
    assert "in 1 of 2 its load's CPU was saturated (a floor of the load there), in 1 neither side's" in target.missing


def test_a_capacity_cells_words_name_brackets_not_runs():
    table = pd.DataFrame([capacity_row("pg_skiplocked batch=1", 937.5, 1000.0),
                          capacity_row("redis_reliable appendfsync=always batch=1", 1062.5, 1250.0, side="dedicated")])
    target = next(c for c in capacity_cells(table) if "10 ms" in c.target)
    assert target.verdict.why == ("redis_reliable appendfsync=always batch=1 ahead across both brackets (confirmed "
                                  "rate to the next that missed), but inside the tie band (brackets 938–1,000 vs "
                                  "1,062–1,250)")


class CompiledDesign(KneeDesign):
    """A design whose rate points ran a compiled load: the harness checks the lowest capacity."""

    def rate_check_run(self, run, rate, warmup_s, duration_s, params):
        self.calls.append({**params, "duration_s": duration_s})
        return RecordedRun(Path("/nowhere"), Summary(run_id="r", status="complete", entries=[]), "complete", None, {})


def test_a_compiled_loads_capacity_is_checked_by_the_harness_at_the_lowest_confirmed_rate():
    from pglimits_core.experiments.capacity import RATE_CHECK

    plan = CapacityPlan(targets_ms=(10.0, 50.0), ceiling_clients=(4,), ceiling_s=30, warmup_s=5, repetitions=3,
                        probe_s=5, start_rate=250, max_probes=8, steady_s=30, confirmations=3)
    design = CompiledDesign(knee=1000)
    records = measure_capacity(None, design, plan)
    (check,) = [c for c in design.calls if c["stage"] == RATE_CHECK]
    assert design.calls[-1] is check and len(records) == len(design.calls)
    confirmed = [c["offered_per_s"] for c in design.calls if c["stage"] == CONFIRM]
    assert check["offered_per_s"] == min(confirmed) and check["duration_s"] == plan.steady_s
    assert check["target_p99_ms"] in (10.0, 50.0) and check["confirmations_required"] == 1
    nothing = CompiledDesign(knee=0.001)  # nothing held: nothing to check
    measure_capacity(None, nothing, plan)
    assert not [c for c in nothing.calls if c["stage"] == RATE_CHECK]


def test_the_rate_check_sits_beside_the_capacity_and_never_counts_as_a_confirmation():
    from pglimits_core.experiments.capacity import RATE_CHECK
    from pglimits_core.experiments.capacity_cells import load_check

    confirmed = [record(PROBE, 1000, 30), record(CONFIRM, 750, 6.5), record(CONFIRM, 750, 7.0),
                 record(CONFIRM, 750, 6.0)]
    held = capacity_table([*confirmed, record(RATE_CHECK, 750, 8.0, required=1)], reading, lambda s: 0.0).iloc[0]
    assert held.capacity_per_s == 750 and held.confirmations == "3 of 3 held" and len(held.curve) == 4
    assert held.rate_check_p99_ms == 8.0 and held.rate_agrees and held.rate_check_tool_p99_ms == 6.5
    assert "at 750/s the harness held the target too (p99 8.0 ms; the compiled load's 6.5)" in load_check(held)
    missed = capacity_table([*confirmed, record(RATE_CHECK, 750, 30.0, required=1)], reading, lambda s: 0.0).iloc[0]
    assert missed.rate_agrees is not None and not missed.rate_agrees
    floor = capacity_table([*confirmed, record(RATE_CHECK, 750, 30.0, limit=LOAD, required=1)], reading,
                           lambda s: 0.0).iloc[0]
    assert floor.rate_agrees is None and "limited by its own core" in load_check(floor)
    # a check at a lower rate than the figure checks nothing about the figure
    elsewhere = capacity_table([*confirmed, record(RATE_CHECK, 500, 4.0, required=1)], reading, lambda s: 0.0).iloc[0]
    assert elsewhere.rate_agrees is None and not elsewhere.rate_check_at_figure
    assert "at 500/s, not the figure, the harness held the target (p99 4.0 ms): no check of the figure" in load_check(
        elsewhere)


def test_a_design_that_held_at_no_rate_is_below_its_lowest_full_window_and_the_cell_decides():
    from pglimits_core.experiments.capacity_cells import capacity_side

    nothing = [record(PROBE, 500, 80), record(PROBE, 31.25, 40), record(PROBE, 3.9, 25)]  # 3.9/s x 30 s = 117
    row = capacity_table(nothing, reading, lambda s: 0.0).iloc[0]
    assert row.below_per_s == 3.9 and row.below_p99_ms == 25 and row.lowest_tried_per_s == 3.9
    side = capacity_side(row)
    assert side.below and side.value == 3.9 and side.limit == "neither"
    short = [{**r, "manifest": {**r["manifest"], "params": {**r["manifest"]["params"], "window_s": 4}}}
             for r in nothing]  # 3.9/s x 4 s = 16 queries: no p99; 31.25 x 4 = 125 is the lowest full window
    assert capacity_table(short, reading, lambda s: 0.0).iloc[0].below_per_s == 31.25
    by_load = [record(PROBE, 500, 80), record(PROBE, 31.25, 40, limit=LOAD)]
    assert capacity_side(capacity_table(by_load, reading, lambda s: 0.0).iloc[0]) is None  # the load may have missed it
    held = capacity_table([record(PROBE, 500, 80), record(PROBE, 250, 5)], reading, lambda s: 0.0).iloc[0]
    assert pd.isna(held.get("below_per_s"))


def test_a_looser_target_is_never_below_what_a_tighter_targets_steady_windows_held():
    def at(target, stage, rate, p99_ms):
        made = record(stage, rate, p99_ms)
        params = made["manifest"]["params"]
        params |= {"target_p99_ms": target, "slo": {**params["slo"], "p99_bound_us": target * 1000}}
        return made

    records = [*[at(10.0, CONFIRM, 1625, 7.8)] * 3,  # held 10 ms at 1,625
               at(100.0, CONFIRM, 2250, 673), *[at(100.0, CONFIRM, 1575, 7.2)] * 3]  # 2,250 failed, 1,575 held
    table = capacity_table(records, reading, lambda s: 0.0).set_index("target_p99_ms")
    assert table.loc[10.0].capacity_per_s == 1625
    assert table.loc[100.0].capacity_per_s == 1625 and table.loc[100.0].capacity_miss_per_s == 2250
    assert table.loc[100.0].capacity_windows_of_ms == 10.0 and pd.isna(table.loc[10.0].capacity_windows_of_ms)
    only_failed_tighter = [*[at(10.0, CONFIRM, 1625, 40)] * 1, *[at(100.0, CONFIRM, 1575, 7.2)] * 3]
    looser = capacity_table(only_failed_tighter, reading, lambda s: 0.0).set_index("target_p99_ms").loc[100.0]
    assert looser.capacity_per_s == 1575  # 40 ms holds 100 ms, but one window is not the 3 a confirmation needs


def test_a_tighter_target_reads_the_windows_a_looser_targets_search_ran_that_met_it():
    def at(target, rate, p99_ms):
        made = record(CONFIRM, rate, p99_ms)
        params = made["manifest"]["params"]
        params |= {"target_p99_ms": target, "slo": {**params["slo"], "p99_bound_us": target * 1000}}
        return made

    # the 10-ms search stopped at 10,780; the 50-ms search's windows at 14,700 held 4-5 ms
    records = [*[at(10.0, 10780, 3.0)] * 3, at(10.0, 15400, 11.9), *[at(50.0, 14700, 4.6)] * 3]
    table = capacity_table(records, reading, lambda s: 0.0).set_index("target_p99_ms")
    assert table.loc[10.0].capacity_per_s == 14700 and table.loc[10.0].capacity_windows_of_ms == 50.0
    assert table.loc[10.0].capacity_miss_per_s == 15400
    # a looser search's window that missed the tighter target bounds it there too
    missed = [*[at(10.0, 1000, 3.0)] * 3, *[at(50.0, 1400, 30.0)] * 3]
    tight = capacity_table(missed, reading, lambda s: 0.0).set_index("target_p99_ms").loc[10.0]
    assert tight.capacity_per_s == 1000 and tight.capacity_miss_per_s == 1400


def test_where_no_probe_held_steady_windows_bound_the_design_below_its_lowest_full_probe():
    from pglimits_core.experiments.capacity import MIN_ITEMS

    design = KneeDesign(knee=0.001)  # misses at every rate
    measure_capacity(None, design, PLAN)
    probes = [c["offered_per_s"] for c in design.calls if c["stage"] == PROBE]
    confirms = [c for c in design.calls if c["stage"] == CONFIRM]
    lowest_full = min(r for r in probes if r * PLAN.probe_s >= MIN_ITEMS)
    assert confirms and confirms[0]["offered_per_s"] == lowest_full and confirms[0]["duration_s"] == PLAN.steady_s
    assert len(confirms) == 1 + PLAN.max_steps_down  # each set stops at its first failed window
    assert min(c["offered_per_s"] for c in confirms) < lowest_full


def test_a_bracket_a_step_down_left_wide_is_narrowed_by_steady_windows_at_its_middle():
    from dataclasses import replace

    design = KneeDesign(knee=1000, flaky=1)  # the first steady set misses once: a step down follows
    narrowed = replace(PLAN, narrow_steps=2, narrow_to=1.2)
    measure_capacity(None, design, narrowed)
    confirms = [c["offered_per_s"] for c in design.calls if c["stage"] == CONFIRM]
    found, stepped = confirms[0], confirms[0] * PLAN.step_down
    middle = round((stepped * found) ** 0.5, 1)
    assert round(stepped, 3) in confirms and middle in confirms  # the middle of [×0.7, ×1] tried steadily
    plain = KneeDesign(knee=1000, flaky=1)
    measure_capacity(None, plain, PLAN)  # narrow_steps 0 (the default): the bracket stays ×1.43
    assert all(c["offered_per_s"] != middle for c in plain.calls if c["stage"] == CONFIRM)
