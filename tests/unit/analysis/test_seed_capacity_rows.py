"""The source studies' pub/sub and vector figures read from the capacity experiment: the ceilings
(and, for vectors, the capacity at the p99 target) of the designs at the source's terms, judged by
the one agreement rule on their ``Side``s — a floor that could move the ratio into the source's
range makes the row inconclusive, a side held nowhere is an upper bound, and a p99 is judged
only where both ceilings were their servers'."""

from __future__ import annotations

import pandas as pd
import pytest

from pglimits_core.analysis.seed import judge_sides
from pglimits_core.analysis.verdict import LOAD, NEITHER, NOT_COMPARABLE, SERVER, Side


def test_judge_sides_reads_floors_and_upper_bounds_the_way_they_move_the_ratio():
    server = Side("a", 1000.0, SERVER, (950.0, 1050.0))
    assert judge_sides(server, Side("b", 800.0, SERVER, (780.0, 820.0)), 1.25, 1.25)[1].startswith("agree")
    # B a floor: the true A/B is at most ours (1.25); the seed's 2.0 is above: cannot move into it
    ratio, words, klass = judge_sides(server, Side("b", 800.0, LOAD, (780.0, 820.0)), 2.0, 2.0)
    assert ratio == pytest.approx(1.25) and words.startswith("same direction") and "B a lower bound" in words
    # A a floor: the true ratio may rise to the seed's: inconclusive
    assert judge_sides(Side("a", 1000.0, LOAD, (950.0, 1050.0)), Side("b", 800.0, SERVER, (780.0, 820.0)),
                       2.0, 2.0)[1].startswith("inconclusive")
    # B held nowhere (below 400): the true A/B is above ours, as a floor on A
    below = Side("b", 400.0, NEITHER, (0.0, 400.0), below=True)
    assert judge_sides(server, below, 5.0, 5.0)[1].startswith("inconclusive")
    assert judge_sides(server, below, 1.0, 1.0)[1].startswith("same direction")
    # inside the seed's range with a bound that may carry it out: never "agree"
    assert judge_sides(server, below, 2.0, 2.0)[1].startswith("inconclusive: ours B below its figure")
    assert judge_sides(Side("a", 1400.0, LOAD, (1350.0, 1450.0)), Side("b", 1000.0, SERVER, (990.0, 1010.0)),
                       1.306, 1.306)[1].startswith("inconclusive")
    assert judge_sides(None, server, 1.0, 1.0) == (None, "not measured here", "—")


def _pubsub_row(system: str, rate: float, limit: str, p99: float) -> dict:
    return {"variant": f"{system} batch=1 subscribers=10", "subscribers": 10, "ceiling_per_s": rate,
            "ceiling_low": rate * 0.95, "ceiling_high": rate * 1.05, "ceiling_limit": limit, "ceiling_runs": 3,
            "ceiling_s": 30.0, "ceiling_by": "psload", "ceiling_delivery_p99_ms": p99, "target_p99_ms": 10.0,
            "capacity_per_s": rate / 2}


def test_pubsub_seed_rows_come_from_the_fan_out_10_ceilings():
    from pglimits_core.workloads.pubsub.report import seed_comparison

    capacity = pd.DataFrame([_pubsub_row("pg_notify", 11_000.0, SERVER, 2.4),
                             _pubsub_row("redis_publish", 14_000.0, SERVER, 2.0)])
    rows = seed_comparison({"capacity": capacity}).set_index("figure")
    published = rows.loc["published per s (the ceiling: publishers flat out)"]
    assert published["our ratio A/B"] == pytest.approx(11 / 14, abs=0.01) and published.verdict.startswith("agree")
    assert "psload" in published["ours A"] and "3 × 30-s windows" in published["ours A"]
    p99 = rows.loc["delivery p99 ms (at the ceiling: publishers flat out)"]
    # a closed loop's p99 at the ceiling against the source's from the intended send: shown, not judged
    assert pd.isna(p99["our ratio A/B"]) and p99.verdict.startswith("not comparable")
    assert p99["verdict class"] == NOT_COMPARABLE
    # a load-limited ceiling is a floor: the ratio is a bound, printed as one
    capacity.loc[1, "ceiling_limit"] = LOAD
    rows = seed_comparison({"capacity": capacity}).set_index("figure")
    published = rows.loc["published per s (the ceiling: publishers flat out)"]
    assert published["ours B"].startswith("≥ ") and published["our ratio A/B"] == "≤ 0.79×"


def _vectors_row(engine: str, ef: int, ceiling: float, capacity: float, cores: float) -> dict:
    return {"variant": f"{engine} ef={ef}", "engine": engine, "ef": ef, "server": "postgres" if "pgvector" in engine
            else "qdrant", "recall_target": 0.95, "recall_mean": 0.96, "target_p99_ms": 10.0,
            "ceiling_per_s": ceiling, "ceiling_low": ceiling * 0.97, "ceiling_high": ceiling * 1.03,
            "ceiling_limit": SERVER, "ceiling_runs": 3, "ceiling_s": 30.0, "ceiling_clients": 8,
            "ceiling_by": "pgbench", "ceiling_server_cores": cores, "capacity_per_s": capacity,
            "capacity_miss_per_s": capacity * 1.1, "capacity_limit": NEITHER, "confirmations": "3 of 3 held"}


def test_vectors_seed_rows_come_from_the_recall_0_95_designs():
    from pglimits_core.workloads.vectors.report import seed_comparison

    capacity = pd.DataFrame([_vectors_row("qdrant hnsw", 64, 1300.0, 900.0, 0.98),
                             _vectors_row("pgvector hnsw", 64, 1000.0, 700.0, 0.99)])
    sweep = pd.DataFrame({"variant": ["qdrant hnsw", "pgvector hnsw"], "recall_mean": [0.995, 0.992]})
    rows = seed_comparison({"capacity": capacity, "sweep": sweep, "matched": pd.DataFrame()})
    # the ceiling (the source's QPS states no latency bound: a capacity at a p99 target is not its
    # figure), reaches 0.97, reaches 0.99 — the source states one QPS figure, so the server CPU
    # per query (the capacity table's column) is no second row
    assert len(rows) == 3
    ceiling = rows.iloc[0]
    assert ceiling.figure.startswith("QPS at recall ≥ 0.95 (the source's 0.968 / 0.949), the ceiling (8 clients, ef 64")
    assert ceiling["our ratio A/B"] == pytest.approx(1.3) and ceiling.verdict.startswith("agree")
    assert "3 × 30-s windows, pgbench" in ceiling["ours B"]
    assert not rows.figure.str.contains("CPU-second").any()
    # a design whose ef fell short of its target is no design at that recall: the sweep's rows then
    capacity.loc[0, "recall_mean"] = 0.93
    assert len(seed_comparison({"capacity": capacity, "sweep": sweep, "matched": pd.DataFrame()})) == 2
