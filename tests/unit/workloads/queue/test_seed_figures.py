"""Our side of a seed comparison: within one durability class, medians over repetitions, flags
carried, the seed's rate used, and a rate we could not sustain reported as a finding."""

from __future__ import annotations

import pandas as pd

from pglimits_core.workloads.queue.durability_tables import label
from pglimits_core.workloads.queue.seed import CLAIMS, comparison_table, measured_pair

PER_COMMIT = label("per_commit")

SQLITE_VS_PGMQ_AT_1K = next(c for c in CLAIMS if c.what == "queue p99 end-to-end at 1k msg/s")
SQLITE_VS_PGMQ_AT_5K = next(c for c in CLAIMS if c.what == "queue p99 end-to-end at 5k msg/s")
SQLITE_FULL, SQLITE_NORMAL = "sqlite_wal batch=1 synchronous=full", "sqlite_wal batch=1"
CLASSES = {SQLITE_FULL: "per_commit", SQLITE_NORMAL: "periodic", "pgmq batch=1": "per_commit",
           "pgmq batch=1 synchronous_commit=off": "periodic", "pg_delete batch=1": "per_commit", "pg_delete batch=10": "per_commit",
           "pg_skiplocked batch=1": "per_commit", "pg_skiplocked batch=10": "per_commit", "redis_reliable batch=1": "none",
           "redis_reliable batch=10 pipeline=10": "none",
           "redis_reliable appendfsync=always batch=10 pipeline=10": "per_commit"}


def latency_rows(variant: str, rate: float, p99s: list[float], sustained: bool | list[bool] = True,
                 client_bound: list[bool] | None = None) -> list[dict]:
    bound = client_bound or [False] * len(p99s)
    kept = sustained if isinstance(sustained, list) else [sustained] * len(p99s)
    return [{"variant": variant, "durability_class": CLASSES[variant], "offered_per_s": rate, "send_to_claim_p99_ms": p99,
             "sustained": ok, "client_bound": cb} for p99, ok, cb in zip(p99s, kept, bound, strict=True)]


def throughput_rows(variant: str, consumers: int, jobs_per_s: float, lower_bound: bool = False) -> dict:
    return {"variant": variant, "durability_class": CLASSES[variant], "consumers": consumers,
            "jobs_per_s": jobs_per_s, "client_bound": False, "lower_bound": lower_bound,
            "lower_bound_why": "backlog ran out" if lower_bound else ""}


def by_figure(table: pd.DataFrame) -> pd.DataFrame:
    return comparison_table({"latency": table}).set_index("figure")


def test_latency_side_is_the_median_of_the_repetitions_not_the_first_run():
    table = pd.DataFrame(latency_rows(SQLITE_FULL, 1000.0, [1.0, 1.2, 1.1])
                         + latency_rows("pgmq batch=1", 1000.0, [17.4, 5.2, 4.8], client_bound=[True, False, False]))
    sqlite, pgmq = measured_pair(SQLITE_VS_PGMQ_AT_1K, {"latency": table}, "per_commit")
    assert sqlite.value == 1.1 and pgmq.value == 5.2
    assert "median of 3" in pgmq.note and "client-bound" in pgmq.note  # any repetition's flag travels


def test_sqlite_is_compared_with_postgres_at_matched_per_commit_durability():
    table = pd.DataFrame(latency_rows(SQLITE_NORMAL, 1000.0, [0.5]) + latency_rows(SQLITE_FULL, 1000.0, [1.0])
                         + latency_rows("pgmq batch=1", 1000.0, [5.0]))
    row = by_figure(table).loc["queue p99 end-to-end at 1k msg/s"]
    assert row["durability class (ours, both sides)"] == PER_COMMIT
    assert SQLITE_FULL in row["ours A"] and row["our ratio A/B"] == 0.2  # not NORMAL's 0.1
    assert "synchronous=NORMAL" in row["seed durability"]  # what the seed compared, said beside it


def test_one_row_per_class_measured_on_both_sides():
    table = pd.DataFrame(latency_rows(SQLITE_NORMAL, 1000.0, [0.5]) + latency_rows(SQLITE_FULL, 1000.0, [1.0])
                         + latency_rows("pgmq batch=1", 1000.0, [5.0])
                         + latency_rows("pgmq batch=1 synchronous_commit=off", 1000.0, [2.5]))
    rows = comparison_table({"latency": table})
    at_1k = rows[rows.figure == "queue p99 end-to-end at 1k msg/s"]
    assert list(at_1k["durability class (ours, both sides)"]) == [PER_COMMIT, label("periodic")]
    assert list(at_1k["our ratio A/B"]) == [0.2, 0.2]


def test_a_pair_in_different_classes_is_not_judged():
    table = pd.DataFrame([throughput_rows("pg_delete batch=10", 8, 5600.0),
                          throughput_rows("redis_reliable batch=10 pipeline=10", 4, 51_000.0)])
    row = comparison_table({"throughput": table}).set_index("A / B").loc[
        "Postgres delete-mode, batch 10 / Redis reliable queue (pipelined)"]
    assert row["verdict"].startswith("not compared") and "context only" in row["verdict"]
    assert PER_COMMIT in row["verdict"] and label("none") in row["verdict"]
    assert row["durability class (ours, both sides)"] == "—" and row["our ratio A/B"] == 0.11


def test_the_redis_side_is_the_pipelined_variant_like_the_seeds():
    table = pd.DataFrame([throughput_rows("pg_delete batch=10", 8, 6000.0),
                          throughput_rows("redis_reliable batch=1", 8, 15_000.0),  # unpipelined: not the seed's
                          throughput_rows("redis_reliable appendfsync=always batch=10 pipeline=10", 4, 3000.0)])
    row = comparison_table({"throughput": table}).set_index("A / B").loc[
        "Postgres delete-mode, batch 10 / Redis reliable queue (pipelined)"]
    assert "pipeline=10" in row["ours B"] and row["our ratio A/B"] == 2.0
    assert row["durability class (ours, both sides)"] == PER_COMMIT


def test_a_rate_one_system_did_not_sustain_is_a_finding_not_incomparable():
    table = pd.DataFrame(latency_rows(SQLITE_FULL, 1000.0, [1.0]) + latency_rows("pgmq batch=1", 1000.0, [5.0])
                         + latency_rows(SQLITE_FULL, 5000.0, [2.0, 2.1, 2.2])
                         + latency_rows("pgmq batch=1", 5000.0, [900.0, 3.0, 950.0], sustained=[False, True, False]))
    row = by_figure(table).loc["queue p99 end-to-end at 5k msg/s"]
    assert row["verdict"] == "differ: pgmq batch=1 did not sustain 5,000/s here (fell short in 2 of 3 runs)"
    assert pd.isna(row["our ratio A/B"])  # a p99 at a rate not kept up with is no latency
    assert "at 5,000/s" in row["ours B"] and "not sustained in 2 of 3 runs" in row["ours B"]


def test_a_latency_claim_measured_only_at_another_rate_is_context_without_a_verdict():
    table = pd.DataFrame(latency_rows(SQLITE_FULL, 1000.0, [1.0]) + latency_rows("pgmq batch=1", 1000.0, [5.0]))
    rows = by_figure(table)
    # 0.20x vs 0.18x, from the sweep's short windows: indicative only
    assert rows.loc["queue p99 end-to-end at 1k msg/s", "verdict"] == "indicative only (the sweep's short windows): agree"
    at_5k = rows.loc["queue p99 end-to-end at 5k msg/s", "verdict"]
    assert at_5k.startswith("not comparable") and "5,000/s" in at_5k and "ours at 1,000/s" in at_5k


def test_a_lower_bound_travels_into_the_verdict():
    table = pd.DataFrame([throughput_rows(SQLITE_FULL, 1, 4000.0, lower_bound=True),
                          throughput_rows("pgmq batch=1", 1, 2000.0)])
    row = comparison_table({"throughput": table}).set_index("figure").loc["queue throughput at 1 consumer"]
    assert row["ours A"].startswith("≥ 4,000 jobs/s") and "lower bound: backlog ran out" in row["ours A"]
    # the burn-down sweep's short windows: indicative, never decided
    assert row["verdict"] == "indicative only (the sweep's short windows): agree (ours A: a lower bound)"


def test_a_lower_bound_that_could_reach_the_seeds_range_makes_the_verdict_inconclusive():
    from pglimits_core.workloads.queue.seed import CLAIMS, Measured, judge

    claim = CLAIMS[0]  # Postgres two-phase / pipelined Redis: the seed's ratio is 4.1-5.9
    floor_a = Measured("pg_skiplocked batch=1", 1_000.0, "", durability_class="per_commit", lower_bound=True)
    redis = Measured("redis_reliable batch=10 pipeline=10", 10_000.0, "", durability_class="per_commit")
    assert judge(claim, floor_a, redis)[1].startswith("inconclusive")
    measured_a = Measured("pg_skiplocked batch=1", 1_000.0, "", durability_class="per_commit")
    assert judge(claim, measured_a, redis)[1].startswith("differ")


def test_the_sqlite_mitigations_are_judged_against_stock_sqlite_in_its_own_durability_class():
    classes = {"sqlite_wal batch=50": "periodic", "sqlite_wal batch=1 shards=4": "periodic",
               "sqlite_wal batch=1 shards=8": "periodic", "sqlite_wal batch=1 synchronous=off": "none"}
    CLASSES.update(classes)
    table = pd.DataFrame([throughput_rows(SQLITE_NORMAL, 4, 10_000), throughput_rows("sqlite_wal batch=50", 4, 16_000),
                          throughput_rows("sqlite_wal batch=1 shards=4", 8, 30_000),
                          throughput_rows("sqlite_wal batch=1 shards=8", 8, 12_000),
                          throughput_rows("sqlite_wal batch=1 synchronous=off", 4, 30_000)])
    rows = comparison_table({"throughput": table}).set_index("figure")
    sweep = "indicative only (the sweep's short windows): "  # burn-down windows: never decided
    batched = rows.loc["SQLite mitigation: 50 messages per claim (peak throughput)"]
    assert batched["our ratio A/B"] == 1.6 and batched["verdict"] == sweep + "agree"  # seed 1.51-1.67x
    four = rows.loc["SQLite mitigation: 4 files, a writer each (peak throughput)"]
    assert four["our ratio A/B"] == 3.0 and four["verdict"] == sweep + "agree"
    eight = rows.loc["SQLite mitigation: 8 files against 4 (peak throughput)"]
    assert eight["our ratio A/B"] == 0.4 and eight["verdict"] == sweep + "same direction, different size"


def capacity_row(variant: str, ceiling: float, low: float, high: float, limit: str, durability: str = "per_commit") -> dict:
    return {"variant": variant, "durability_class": durability, "target_p99_ms": 10.0, "ceiling_per_s": ceiling,
            "ceiling_low": low, "ceiling_high": high, "ceiling_limit": limit, "ceiling_clients": 8,
            "ceiling_runs": 3, "ceiling_s": 30.0, "ceiling_by": "pgbench" if variant.startswith("pg") else None}


def test_a_peak_throughput_claim_is_read_from_the_capacity_ceilings_where_both_sides_have_one():
    capacity = pd.DataFrame([capacity_row("pg_skiplocked batch=10", 9_900.0, 8_266.0, 10_192.0, "server"),
                             capacity_row("redis_reliable appendfsync=always batch=10 pipeline=10", 36_000.0,
                                          33_000.0, 37_000.0, "load")])
    sweep = pd.DataFrame([throughput_rows("pg_delete batch=10", 8, 6000.0),  # no capacity row: the sweep's
                          throughput_rows("redis_reliable appendfsync=always batch=10 pipeline=10", 4, 3000.0)])
    rows = comparison_table({"capacity": capacity, "throughput": sweep}).set_index("A / B")
    two_phase = rows.loc["Postgres SKIP LOCKED two-phase, batch 10 / Redis reliable queue (pipelined)"]
    assert "capacity ceiling: pgbench, 8 clients, median of 3 × 30-s windows" in two_phase["ours A"]
    assert two_phase["ours B"].startswith("≥ 36,000 jobs/s")  # the load's limit: a floor
    assert two_phase["our ratio A/B"] == "≤ 0.28×" and two_phase["verdict"].startswith("differ")  # B a floor
    assert two_phase["verdict class"].startswith("decided")  # a floor 33,000 above a ceiling 10,192
    delete = rows.loc["Postgres delete-mode, batch 10 / Redis reliable queue (pipelined)"]
    assert delete["our ratio A/B"] == 2.0  # no capacity ceiling for delete-mode: the sweep decides


def test_two_ceilings_limited_by_their_loads_are_not_decided_whatever_their_ratio():
    capacity = pd.DataFrame([capacity_row("pg_skiplocked batch=10", 9_900.0, 9_000.0, 10_000.0, "load"),
                             capacity_row("redis_reliable appendfsync=always batch=10 pipeline=10", 36_000.0,
                                          33_000.0, 37_000.0, "load")])
    row = comparison_table({"capacity": capacity}).iloc[0]
    assert row["verdict"].startswith("inconclusive")  # A's floor could still reach the seed's ×4.1
    assert not row["verdict class"].startswith("decided")


SEED_003_AT_5K = next(c for c in CLAIMS if c.what == "queue p99 latency at matched 5k jobs/s")


def test_a_rate_this_box_cannot_offer_is_judged_at_the_same_share_of_its_own_ceiling():
    """The seed's 5k/s was ~11 % of its 46k peak; 11 % of a 9,900 ceiling is ~1,076: the 1,000/s
    point both sides were offered is within ×1.5 of it, so the claim is judged there, and says so."""
    capacity = pd.DataFrame([capacity_row("pg_skiplocked batch=10", 9_900.0, 9_000.0, 10_000.0, "server")])
    latency = pd.DataFrame(latency_rows("pg_skiplocked batch=10", 1000.0, [4.0, 4.4, 4.2])
                           + latency_rows("redis_reliable appendfsync=always batch=10 pipeline=10", 1000.0, [2.0, 2.1, 2.2]))
    a, b = measured_pair(SEED_003_AT_5K, {"latency": latency, "capacity": capacity}, "per_commit")
    assert (a.value, b.value, a.rate) == (4.2, 2.1, 1000.0) and "10.1% of pg_skiplocked batch=10's ceiling" in a.own_terms
    assert "the seed's share (10.9%: 5,000 of 46,000), within ×1.5" in a.own_terms
    row = comparison_table({"latency": latency, "capacity": capacity}).set_index("figure").loc[
        "queue p99 latency at matched 5k jobs/s"]
    assert row["our ratio A/B"] == 2.0 and row["verdict"].startswith("indicative only (the sweep's short windows): "
                                                                     "same direction")
    assert "at its own terms: 1,000/s = 10.1%" in row["verdict"]


def test_without_a_ceiling_or_near_the_share_the_absolute_rate_still_rules():
    latency = pd.DataFrame(latency_rows("pg_skiplocked batch=10", 1000.0, [4.0])
                           + latency_rows("redis_reliable appendfsync=always batch=10 pipeline=10", 1000.0, [2.0]))
    no_ceiling = comparison_table({"latency": latency}).set_index("figure").loc["queue p99 latency at matched 5k jobs/s"]
    assert no_ceiling["verdict"].startswith("not comparable: not offered 5,000/s")
    far = pd.DataFrame([capacity_row("pg_skiplocked batch=10", 40_000.0, 39_000.0, 41_000.0, "server")])  # 11 % = 4,348
    row = comparison_table({"latency": latency, "capacity": far}).set_index("figure").loc[
        "queue p99 latency at matched 5k jobs/s"]
    assert row["verdict"].startswith("not comparable")  # 1,000 is not within ×1.5 of 4,348


def test_the_steady_matched_rates_rule_before_the_sweeps_short_windows():
    """The matched experiment's 30-s windows decide a latency claim both sides were offered there;
    the sweep's short windows only where the matched rates lack the pair."""
    sweep = pd.DataFrame(latency_rows(SQLITE_FULL, 1000.0, [9.0]) + latency_rows("pgmq batch=1", 1000.0, [1.0]))
    steady = pd.DataFrame([{**row, "window_s": 30.0} for row in latency_rows(SQLITE_FULL, 1000.0, [1.0, 1.1, 1.2])
                           + latency_rows("pgmq batch=1", 1000.0, [5.0, 5.5, 6.0])])
    sqlite, pgmq = measured_pair(SQLITE_VS_PGMQ_AT_1K, {"latency": sweep, "matched": steady}, "per_commit")
    assert (sqlite.value, pgmq.value) == (1.1, 5.5)
    assert "× 30-s windows (the steady matched rates)" in sqlite.note
    only_sweep, _ = measured_pair(SQLITE_VS_PGMQ_AT_1K, {"latency": sweep}, "per_commit")
    assert only_sweep.value == 9.0 and "the latency sweep: short windows" in only_sweep.note


def test_the_sqlite_sources_5k_is_judged_at_its_share_of_this_boxs_pgmq_ceiling_in_either_class():
    """5,000 of the source's 48,150 pgmq peak is ~10.4 %; of a 1,700 pgmq ceiling here that is ~177/s,
    so the 200/s matched point is the claim's own terms — for the periodic pair too, whose Postgres
    design is not pgmq (the share is of the design the source's peak was measured on)."""
    capacity = pd.DataFrame([capacity_row("pgmq batch=1", 1_700.0, 1_650.0, 1_720.0, "server")])
    steady = pd.DataFrame([{**row, "window_s": 30.0} for row in
                           latency_rows(SQLITE_FULL, 200.0, [2.0]) + latency_rows("pgmq batch=1", 200.0, [4.0])
                           + latency_rows(SQLITE_NORMAL, 200.0, [1.0])
                           + latency_rows("pg_skiplocked batch=1", 200.0, [2.0])
                           + latency_rows(SQLITE_FULL, 1000.0, [3.0]) + latency_rows("pgmq batch=1", 1000.0, [9.0])])
    steady.loc[steady.variant == "pg_skiplocked batch=1", "durability_class"] = "periodic"
    rows = comparison_table({"matched": steady, "capacity": capacity})
    at_5k = rows[rows.figure == "queue p99 end-to-end at 5k msg/s"].set_index("durability class (ours, both sides)")
    assert at_5k.loc[PER_COMMIT, "our ratio A/B"] == 0.5 and at_5k.loc[label("periodic"), "our ratio A/B"] == 0.5
    assert "at its own terms: 200/s = 11.8% of pgmq batch=1's ceiling" in at_5k.loc[PER_COMMIT, "verdict"]


def test_a_matched_table_without_the_claims_rate_leaves_the_claim_to_the_sweep():
    """The periodic pair ran only at 200/s in the matched rates: its 1k claim is the sweep's pair at
    1,000/s, not a "not comparable" pair at 200."""
    sweep = pd.DataFrame(latency_rows(SQLITE_NORMAL, 1000.0, [1.0]) + latency_rows("pg_delete batch=1", 1000.0, [2.0]))
    sweep.loc[sweep.variant == "pg_delete batch=1", "durability_class"] = "periodic"
    steady = pd.DataFrame([{**row, "window_s": 30.0} for row in
                           latency_rows(SQLITE_NORMAL, 200.0, [0.5]) + latency_rows("pg_delete batch=1", 200.0, [1.5])])
    steady.loc[steady.variant == "pg_skiplocked batch=1", "durability_class"] = "periodic"
    sqlite, postgres = measured_pair(SQLITE_VS_PGMQ_AT_1K, {"latency": sweep, "matched": steady}, "periodic")
    assert (sqlite.rate, sqlite.value, postgres.value) == (1000.0, 1.0, 2.0)
    assert "the latency sweep: short windows" in sqlite.note
