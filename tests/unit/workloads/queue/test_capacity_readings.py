"""How the capacity and matched records are read where a reader could be misled: a ceiling with
both CPU sets saturated, a search that stopped under a rate a window held, a ceiling that falls
inside its window, a cell whose pairing left Postgres's best design out, a matched point's class
and words, and a seed pair whose delivery promises differ."""

from __future__ import annotations

import pandas as pd

from pglimits_core.experiments.capacity import CEILING, CONFIRM, PROBE
from pglimits_core.experiments.capacity_summary import capacity_text, ceiling_text
from pglimits_core.experiments.capacity_table import capacity_table
from pglimits_core.samplers.limit import limit_side, side_of_record
from pglimits_core.workloads.queue.capacity_cells import capacity_cells
from pglimits_core.workloads.queue.head_to_head import latency_verdicts
from pglimits_core.workloads.queue.latency_names import P99
from pglimits_core.workloads.queue.seed import CLAIMS, Measured, judge
from tests.unit.experiments.test_capacity import capacity_row, ceiling_record, reading, record

SPLIT = {"client_and_server_share_cores": False}


def exact(server_busy: float, load_busy: float, server_used: float, load_used: float) -> dict:
    return {"server_set_busy": server_busy, "load_set_busy": load_busy, "server_set_cores": 1,
            "load_set_cores": 1, "server_cores_used": server_used, "load_cores_used": load_used,
            "harness_cores_used": 0.0}


def test_a_ceiling_with_both_sets_saturated_is_a_floor_not_the_servers_ceiling():
    # Redis without AOF: its core 86 % busy (0.82 by redis), the load's 99 % busy by the load
    both = exact(0.86, 0.99, 0.82, 0.98)
    assert limit_side(both, SPLIT, server_ceiling_cores=1)["side"] == "load"
    assert side_of_record({"side": "server"}, both) == "load"  # a record read before the rule
    server_only = exact(0.95, 0.09, 0.93, 0.08)
    assert limit_side(server_only, SPLIT)["side"] == "server"
    assert side_of_record({"side": "server"}, server_only) == "server"
    # an engine inside a compiled load (SQLite): its set is the load's, the server's idle
    embedded = exact(0.03, 0.99, 0.0, 0.98)
    assert side_of_record({"side": "server"}, embedded) == "server"


def at(target: float, stage: str, rate: float, p99_ms: float) -> dict:
    made = record(stage, rate, p99_ms, variant="redis_reliable appendfsync=always batch=10 pipeline=10",
                  server="redis")
    params = made["manifest"]["params"]
    params |= {"target_p99_ms": target, "slo": {**params["slo"], "p99_bound_us": target * 1000}}
    return made


def test_a_window_above_the_capacity_that_met_its_target_is_named_beside_it():
    # the first 5-s probe at 1,000 missed (a stall), so the 10-ms search went down; a 50-ms probe
    # at 2,000 held 2.4 ms — under 10 ms too (a short probe: seen, never the capacity; steady
    # windows of the 50-ms search would count as the 10-ms target's own)
    records = [at(10.0, PROBE, 1000, 35.8), at(10.0, PROBE, 500, 2.1), at(10.0, PROBE, 937.5, 2.5),
               *[at(10.0, CONFIRM, 1000, 2.7)] * 3, at(50.0, PROBE, 2000, 2.4)]
    row = capacity_table(records, reading, lambda s: 0.0).set_index("target_p99_ms").loc[10.0]
    assert row.capacity_per_s == 1000 and row.window_held_above_per_s == 2000
    text = capacity_text(row, "jobs/s")
    assert text.startswith("≥ 1,000 jobs/s") and "a window at 2,000/s met this target too" in text


def test_a_ceiling_that_falls_inside_its_window_says_so(tmp_path):
    runs = []
    for repetition, (first, last) in enumerate([(12_000, 6_000), (13_000, 5_500)]):
        path = tmp_path / f"run{repetition}"
        path.mkdir()
        seconds = range(5, 35)
        items = [first + (last - first) * (s - 5) / 29 for s in seconds]
        pd.DataFrame({"role": "tool", "op": "claim", "phase": "measure", "second": list(seconds),
                      "items": items}).to_parquet(path / "timeseries.parquet")
        made = ceiling_record(CEILING, 8_500 + repetition)
        runs.append({**made, "path": str(path)})
    row = capacity_table(runs, reading, lambda summary: float(summary.run_id)).iloc[0]
    assert -0.45 < row.ceiling_drift < -0.33 and row.ceiling_drift_low < row.ceiling_drift_high
    assert "its rate fell" in ceiling_text(row, "jobs/s") and "inside the window" in ceiling_text(row, "jobs/s")
    steady = capacity_table([ceiling_record(CEILING, 8_500)], reading, lambda s: float(s.run_id)).iloc[0]
    assert pd.isna(steady.ceiling_drift) and "inside the window" not in ceiling_text(steady, "jobs/s")


REDIS_B1, REDIS_B10 = "redis_reliable appendfsync=always batch=1", "redis_reliable appendfsync=always batch=10 pipeline=10"


def test_a_cell_names_postgres_best_design_where_the_pairing_left_it_out():
    table = pd.DataFrame([capacity_row("pg_skiplocked batch=1", 700.0, 1000.0),
                          capacity_row("pg_skiplocked batch=10", 1164.0, 1662.0),
                          capacity_row(REDIS_B1, 1662.0, 2375.0, side="dedicated", ceiling=9000.0),
                          capacity_row(REDIS_B10, 1000.0, None, side="dedicated", ceiling=900.0)])
    target = next(c for c in capacity_cells(table) if "10 ms" in c.target)
    assert target.postgres.system == "pg_skiplocked batch=1" and target.dedicated.system == REDIS_B1
    assert f"Postgres's best: pg_skiplocked batch=10 1,164 jobs/s (its peer {REDIS_B10}: ≥ 1,000 jobs/s)" in target.scale
    alone = table[table.variant != "pg_skiplocked batch=10"]
    assert "Postgres's best" not in next(c for c in capacity_cells(alone) if "10 ms" in c.target).scale


def matched_rows(variant: str, p99s: list[float]) -> list[dict]:
    return [{"variant": variant, "durability_class": "per_commit", "offered_per_s": 1000.0, "achieved_per_s": 1000.0,
             "consumed_per_s": 1000.0, "sustained": True, P99: p99, "limit": "neither", "client_bound": None}
            for p99 in p99s]


def test_a_matched_points_class_is_its_own_and_its_words_name_the_winner_in_ms():
    table = pd.DataFrame(matched_rows("pg_skiplocked batch=10", [3.8, 7.4, 5.2]) + matched_rows(REDIS_B10, [1.9, 2.1, 2.0]))
    steady = latency_verdicts(table, {}, steady=True).iloc[0]
    assert not steady.verdict_class.startswith("indicative")
    assert steady.verdict_why.startswith(f"{REDIS_B10}: ahead beyond the tie band")
    assert "p99 3.80–7.40 ms here vs 1.90–2.10 ms" in steady.verdict_why
    sweep = latency_verdicts(table, {}).iloc[0]
    assert sweep.verdict_class.startswith("indicative")


def test_a_seed_pair_with_different_delivery_promises_is_shown_never_judged():
    claim = next(c for c in CLAIMS if c.metric == "e2e_p99")
    sqlite = Measured("sqlite_wal batch=1", 1.3, rate=claim.rate, durability_class="periodic")
    pg_delete = Measured("pg_delete batch=1 synchronous_commit=off", 2.9, rate=claim.rate, durability_class="periodic")
    ratio, verdict = judge(claim, sqlite, pg_delete)
    assert ratio is None and verdict.startswith("not compared: different delivery guarantees")
    pgmq = Measured("pgmq batch=1", 2.9, rate=claim.rate, durability_class="periodic", sweep=True)
    _, swept = judge(claim, sqlite, pgmq)
    assert swept.startswith("indicative only (the sweep's short windows): ")


def test_overlapping_runs_agree_with_a_seeds_parity_and_decide_no_seeds_direction():
    from pglimits_core.analysis.verdict import Side

    def side(variant: str, p99s: list[float], rate: float) -> Measured:
        values = sorted(1000 / p for p in p99s)
        found = Side(variant, 1000 / sorted(p99s)[1], limit="neither", value_range=(values[0], values[-1]))
        return Measured(variant, sorted(p99s)[1], rate=rate, durability_class="per_commit", side=found)

    parity = next(c for c in CLAIMS if c.what == "queue p99 latency at matched 5k jobs/s")  # seed ×1.05
    pg, redis = side("pg_skiplocked batch=10", [3.8, 5.2, 7.4], 5000), side(REDIS_B10, [2.6, 4.8, 11.0], 5000)
    assert judge(parity, pg, redis)[1].startswith("agree: our runs show no measurable difference either")
    # runs that overlap with the figures ×1.93 apart show no parity either: nothing to agree with
    apart_runs = side(REDIS_B10, [2.6, 2.7, 11.0], 5000)
    assert judge(parity, pg, apart_runs)[1].startswith("not decided here: our runs show no direction")
    # one side ahead in every run, inside the band (×1.88 on the medians): not the seed's parity
    ahead = side(REDIS_B10, [3.1, 3.45, 3.97], 5000)
    assert judge(parity, side("pg_skiplocked batch=10", [4.79, 6.49, 8.57], 5000), ahead)[1].startswith(
        "not decided here")
    direction = next(c for c in CLAIMS if c.what == "queue p99 end-to-end at 1k msg/s")  # seed ×0.18
    sqlite, pgmq = side("sqlite_wal batch=1 synchronous=full", [3.8, 5.2, 7.4], 1000), side("pgmq batch=1", [2.6, 2.7, 11.0], 1000)
    assert judge(direction, sqlite, pgmq)[1].startswith("not decided here: our runs show no direction")
    apart = side("pgmq batch=1", [18.0, 19.0, 20.0], 1000)
    assert not judge(direction, sqlite, apart)[1].startswith(("not decided", "agree: our runs"))
