"""Our side of a seed comparison: medians over repetitions, flags carried, the matched rate named."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.seed_figures import CLAIMS, comparison_table, measured_pair

SQLITE_VS_PGMQ_AT_1K = next(c for c in CLAIMS if c.what == "queue p99 end-to-end at 1k msg/s")


def latency_rows(variant: str, rate: float, p99s: list[float], sustained: bool = True,
                 client_bound: list[bool] | None = None) -> list[dict]:
    bound = client_bound or [False] * len(p99s)
    return [{"variant": variant, "offered_per_s": rate, "e2e_p99_ms": p99, "sustained": sustained,
             "client_bound": cb} for p99, cb in zip(p99s, bound, strict=True)]


def test_latency_side_is_the_median_of_the_repetitions_not_the_first_run():
    table = pd.DataFrame(latency_rows("sqlite_wal batch=1", 1000.0, [1.0, 1.2, 1.1])
                         + latency_rows("pgmq batch=1", 1000.0, [17.4, 5.2, 4.8], client_bound=[True, False, False]))
    sqlite, pgmq = measured_pair(SQLITE_VS_PGMQ_AT_1K, {"latency": table})
    assert sqlite.value == 1.1 and pgmq.value == 5.2
    assert "median of 3" in pgmq.note and "client-bound" in pgmq.note  # any repetition's flag travels


def test_the_rate_both_sustained_wins_over_a_nearer_one():
    table = pd.DataFrame(latency_rows("sqlite_wal batch=1", 1000.0, [1.0]) + latency_rows("pgmq batch=1", 1000.0, [3.0])
                         + latency_rows("sqlite_wal batch=1", 1500.0, [2.0])
                         + latency_rows("pgmq batch=1", 1500.0, [90.0], sustained=False))
    claim = next(c for c in CLAIMS if c.what == "queue p99 end-to-end at 5k msg/s")
    sqlite, pgmq = measured_pair(claim, {"latency": table})
    assert (sqlite.value, pgmq.value) == (1.0, 3.0) and "at 1,000/s" in pgmq.note


def test_a_latency_claim_measured_only_at_another_rate_gets_no_verdict():
    table = pd.DataFrame(latency_rows("sqlite_wal batch=1", 1000.0, [1.0]) + latency_rows("pgmq batch=1", 1000.0, [5.0])
                         + latency_rows("sqlite_wal batch=1", 5000.0, [2.0])
                         + latency_rows("pgmq batch=1", 5000.0, [900.0], sustained=False))
    rows = comparison_table({"latency": table}).set_index("figure")
    assert rows.loc["queue p99 end-to-end at 1k msg/s", "verdict"] == "agree"  # 0.20x vs 0.18x
    at_5k = rows.loc["queue p99 end-to-end at 5k msg/s", "verdict"]
    assert at_5k.startswith("not comparable") and "5,000/s" in at_5k and "ours at 1,000/s" in at_5k
