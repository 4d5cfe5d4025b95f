"""The queue's full profile keeps the point counts its time budget was designed for (the
estimates in configs/profiles/full.yaml's queue comments): a change that adds points must
change this test, and with it the stated budget. Also the prefill sizing behind its per-point cost."""

from __future__ import annotations

from collections import Counter

from pglimits_core.profiles import load_profile
from pglimits_core.workloads.queue.plan import plan
from pglimits_core.workloads.queue.prefill_size import FLOOR, SAFETY, PrefillSizer

#: points per experiment of the full plan (3 repetitions where the experiment repeats)
DESIGNED = {"throughput": 109, "latency": 51, "steady": 18, "recovery": 20, "consumer_crash": 10, "backup": 6,
            "harness_bench": 4, "capacity": 12, "placement": 4, "matched": 30, "depth": 6, "soak": 3}


def full_points():
    profile = load_profile("full")
    return plan(profile.section("queue"), profile)


def first_round(points):
    """The points before the first (variant, consumers) seen again: round 1 of the rounds."""
    seen = set()
    for i, p in enumerate(points):
        if (p.label, p.params["consumers"]) in seen:
            return points[:i]
        seen.add((p.label, p.params["consumers"]))
    return points


def test_the_full_plan_has_the_designed_points_per_experiment():
    assert dict(Counter(p.experiment for p in full_points())) == DESIGNED


def test_the_full_burn_down_measures_16_1_and_64_consumers_only_where_they_are_compared():
    """4 consumers for all 22 variants and 16 for 11 of them (the SQL designs and the Redis queue,
    SQLite's one-message design), 3 rounds; 1 and 64 for the five one-message designs, first round only."""
    burn_down = [p for p in full_points() if p.experiment == "throughput"]
    counts = Counter(p.params["consumers"] for p in burn_down)
    assert counts == {1: 5, 4: 66, 16: 33, 64: 5}
    assert {p.params["consumers"] for p in burn_down[len(first_round(burn_down)):]} == {4, 16}
    assert all("batch=1 " in p.label + " " for p in burn_down if p.params["consumers"] in (1, 64))


def test_the_full_latency_offers_no_rate_its_producers_cannot_reach():
    """No 5,000 or 10,000/s (4 Python producers beside 4 consumers sustained neither): 1,000/s
    for every latency design, 3 rounds."""
    latency = [p for p in full_points() if p.experiment == "latency"]
    assert Counter(p.params["rate"] for p in latency) == {1000: 51}


def test_a_variant_s_consumer_counts_run_in_ascending_order_so_the_sizing_learns_upward():
    burn_down = first_round([p for p in full_points() if p.experiment == "throughput"])
    for label in {p.label for p in burn_down}:
        counts = [p.params["consumers"] for p in burn_down if p.label == label]
        assert counts == sorted(counts)


def test_the_prefill_is_the_cap_until_a_rate_is_known_then_sized_from_the_best_one():
    sizer = PrefillSizer()
    assert sizer.size("throughput", "v", cap=200_000, seconds=5) == 200_000
    sizer.learn("throughput", "v", 1_000.0)
    assert sizer.size("throughput", "v", cap=200_000, seconds=5) == max(FLOOR, int(SAFETY * 1_000 * 5))
    sizer.learn("throughput", "v", 500.0)  # a slower point does not shrink the next backlog
    sizer.learn("throughput", "v", None)
    assert sizer.size("throughput", "v", cap=200_000, seconds=5) == 20_000
    sizer.learn("throughput", "v", 30_000.0)
    assert sizer.size("throughput", "v", cap=200_000, seconds=5) == 200_000  # never above the cap
    assert sizer.size("capacity", "v", cap=300_000, seconds=6) == 300_000  # per experiment
    sizer.learn("throughput", "slow", 10.0)
    assert sizer.size("throughput", "slow", cap=200_000, seconds=5) == FLOOR


def test_the_source_studies_peak_figures_are_ceilings_alone_and_their_latency_claims_steady_windows():
    """Five designs measured by their ceiling only (no latency target to search), every matched
    point a steady window of the compiled load, 3 rounds; 200/s only where the SQLite source's
    share of this box's pgmq ceiling lands."""
    points = full_points()
    ceilings = {p.label for p in points if p.experiment == "capacity" and p.params["targets_ms"] == []}
    assert ceilings == {"pg_delete batch=10", "sqlite_wal batch=1", "sqlite_wal batch=50",
                        "sqlite_wal batch=1 shards=4", "sqlite_wal batch=1 shards=8"}
    matched = [p for p in points if p.experiment == "matched"]
    assert {p.params["duration_s"] for p in matched} == {30} and Counter(p.params["rate"] for p in matched) == {
        1000: 18, 200: 12}
    assert all(p.label.startswith(("sqlite", "pgmq", "pg_skiplocked")) for p in matched if p.params["rate"] == 200)
    assert {p.label for p in matched if p.params["rate"] == 1000} == {
        "pg_skiplocked batch=10", "redis_reliable appendfsync=always batch=10 pipeline=10",
        "sqlite_wal batch=1 synchronous=full", "pgmq batch=1", "sqlite_wal batch=1",
        "pg_skiplocked batch=1 synchronous_commit=off"}


def test_the_soak_holds_each_compared_design_after_its_depths_and_at_half_its_first_ceiling():
    """Three designs (the per-commit, at-least-once ones a capacity cell sets face to face), each
    its 1M and 5M depths then 15 min: 45 min of soak, the budget's largest single block."""
    points = [p for p in full_points() if p.experiment in ("depth", "soak")]
    assert [(p.experiment, p.params.get("depth")) for p in points[:3]] == [
        ("depth", 1_000_000), ("depth", 5_000_000), ("soak", None)]
    soaks = [p for p in points if p.experiment == "soak"]
    assert sum(p.params["duration_s"] for p in soaks) == 2700 and {p.params["share"] for p in soaks} == {0.5}
