"""Search tables and verdicts from run rows: medians with their spread, the client-bound mark,
correctness verdicts, ranking agreement, latency at matched rates, and the seed comparison."""

from __future__ import annotations

import pandas as pd
import pytest

from pglimits_core.workloads.search.report import headline_table, search_flags, seed_comparison
from pglimits_core.workloads.search.tables import (
    correctness_table,
    latency_table,
    peak_table,
    qps_table,
    ranking_table,
    search_run_columns,
)


def client_row(run_id: str, variant: str, stream: str, clients: int, qps: float, p99: float = 2.0,
               bound: bool | None = False, experiment: str = "throughput", **extra) -> dict:
    return {"run_id": run_id, "status": "complete", "experiment": experiment, "variant": variant,
            "system": variant.split()[0], "stream": stream, "clients": clients, "role": "client",
            "items_per_s": qps, "service_time_p50_ms": p99 / 4, "service_time_p99_ms": p99,
            "client_bound": bound, "client_cpu_pct": 50.0, "server_cpu_pct": 120.0, "other_cpu_pct": 1.0,
            "median_matches": 42.0, "queries": 300, "errors": 0, "run_s": 4.0, **extra}


def frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def test_throughput_is_the_median_over_repetitions_with_its_spread_and_client_cost():
    table = qps_table(frame(client_row("a", "pg_gin ranked", "mixed", 8, 1000.0, p99=3.0),
                            client_row("b", "pg_gin ranked", "mixed", 8, 1200.0, p99=5.0),
                            client_row("c", "pg_gin ranked", "mixed", 8, 1100.0, p99=4.0)))
    row = table.iloc[0]
    assert (row.qps, row.min_qps, row.max_qps, row.runs) == (1100.0, 1000.0, 1200.0, 3)
    assert (row.p99_ms, row.p99_min_ms, row.p99_max_ms) == (4.0, 3.0, 5.0)
    assert row.qps_text == "1,100 (1,000–1,200)"
    # 50 % of one core over 1,100 queries/s: 455 µs of client CPU per query
    assert row.client_cpu_us_per_query == pytest.approx(1e4 * 50.0 / 1100.0)


def test_one_client_bound_repetition_marks_the_point_and_none_is_not_a_mark():
    table = qps_table(frame(client_row("a", "elasticsearch", "rare", 32, 900.0, bound=True),
                            client_row("b", "elasticsearch", "rare", 32, 950.0, bound=False),
                            client_row("c", "opensearch", "rare", 32, 800.0, bound=None)))
    marks = table.set_index("variant")
    assert marks.loc["elasticsearch"].client_bound is True and marks.loc["elasticsearch"].qps_text.endswith("ᶜ")
    assert marks.loc["opensearch"].client_bound is None and "ᶜ" not in marks.loc["opensearch"].qps_text


def test_a_run_whose_record_has_no_cpu_split_shows_none_never_zero():
    # the record decides (no whole sampler second in its window): a short run is blank, and a
    # 3-s run whose window held one has its split whatever the run's length
    blank = client_row("a", "opensearch", "rare", 2, 800.0, bound=None, client_cpu_pct=None, server_cpu_pct=None,
                       other_cpu_pct=None, run_s=1.1)
    row = qps_table(frame(blank)).iloc[0]
    assert pd.isna(row.client_bound) and pd.isna(row.client_cpu_pct) and pd.isna(row.client_cpu_us_per_query)
    assert row.qps == 800.0
    split = qps_table(frame(client_row("b", "opensearch", "rare", 2, 800.0, run_s=3.0))).iloc[0]
    assert split.client_cpu_pct == 50.0 and not split.client_bound


def test_failed_runs_give_no_number_and_streams_sort_in_study_order():
    failed = {**client_row("x", "pg_gin ranked", "mixed", 1, 99_999.0), "status": "failed"}
    table = qps_table(frame(client_row("a", "pg_gin ranked", "mixed", 1, 100.0), failed,
                            client_row("b", "pg_gin ranked", "frequent", 1, 50.0)))
    assert list(table.stream) == ["frequent", "mixed"] and table.qps.max() == 100.0


def test_peak_names_the_best_client_count_and_the_one_client_rate():
    table = qps_table(frame(client_row("a", "opensearch", "mixed", 1, 500.0),
                            client_row("b", "opensearch", "mixed", 8, 2500.0, p99=6.0),
                            client_row("c", "opensearch", "mixed", 32, 2400.0)))
    peak = peak_table(table).iloc[0]
    assert (peak["peak @clients"], peak["qps @1"], peak["peak qps_text"], peak["p99 ms at peak"]) == (8, "500", "2,500 @8", 6.0)
    head = headline_table({"peak": peak_table(table)})
    assert head.loc[0, "mixed: peak qps @clients"] == "2,500 @8"


def correctness_row(variant: str, disagreed: int, answers: list[dict] | None = None, gte: int | None = None) -> dict:
    manifest = {"params": {"experiment": "correctness", "outcome": {
        "checked": 5, "disagreed": disagreed, "total_relation_gte": gte, "track_total_hits": 10000 if gte is not None else None,
        "examples": [{"query": "ka bo", "problem": "count 9 != exact 3"}] if disagreed else [],
        "by_group": {"frequent": {"checked": 5, "disagreed": disagreed}}, "queries": answers or []}}}
    return {"run_id": f"r-{variant}", "status": "complete", "experiment": "correctness", "variant": variant,
            "system": variant.split()[0], **search_run_columns(manifest)}


def test_a_variant_that_disagrees_is_not_measured_and_says_why():
    table = correctness_table(frame(correctness_row("pg_gin ranked", 0),
                                    correctness_row("opensearch operator=or", 2, gte=1))).set_index("variant")
    assert table.loc["pg_gin ranked", "verdict"] == "measured"
    wrong = table.loc["opensearch operator=or"]
    assert wrong.verdict.startswith("NOT MEASURED") and wrong["disagreed by group"] == "frequent 2/5"
    assert wrong["first problem"] == "ka bo: count 9 != exact 3" and wrong["hits.total a lower bound (queries)"] == 1


def answers(*tops: list[int], overlaps=(1.0,), matches=(20,)) -> list[dict]:
    return [{"i": i, "group": "frequent", "matches": matches[i % len(matches)], "top": top,
             "bm25_overlap": overlaps[i % len(overlaps)], "bm25_tie_aware": overlaps[i % len(overlaps)], "ok": True}
            for i, top in enumerate(tops)]


def test_ranking_agreement_against_bm25_and_between_ranked_variants():
    lucene = answers(list(range(10)), list(range(10, 20)))
    postgres = answers(list(range(5)) + list(range(100, 105)), list(range(10, 20)), overlaps=(0.5, 1.0))
    table = ranking_table(frame(correctness_row("elasticsearch", 0, lucene),
                                correctness_row("pg_gin ranked", 0, postgres),
                                correctness_row("pg_gin unranked", 0, answers([1, 2]))))
    rows = table.set_index(["compared", "group"])
    assert rows.loc[("pg_gin ranked vs exact BM25", "frequent"), "mean overlap@10"] == 0.75
    assert rows.loc[("elasticsearch vs pg_gin ranked", "all"), "mean overlap@10"] == 0.75
    assert rows.loc[("elasticsearch vs pg_gin ranked", "all"), "queries in full agreement"] == 1
    # the unranked match is compared with BM25 (any 10 matches), never with a ranking
    assert not any("unranked vs" in c or "vs pg_gin unranked" in c for c in table.compared if "BM25" not in c)


def test_latency_is_sustained_only_when_every_repetition_kept_the_offered_rate():
    rows = [client_row(r, "pg_gin ranked", "mixed", 8, 500.0, experiment="latency", fraction=0.5,
                       offered_rate=500.0, achieved_rate=achieved, sustained=achieved >= 475,
                       latency_p50_ms=1.0, latency_p99_ms=p99)
            for r, achieved, p99 in (("a", 500.0, 3.0), ("b", 400.0, 30.0), ("c", 499.0, 4.0))]
    row = latency_table(frame(*rows)).iloc[0]
    assert not row.sustained and row.latency_p99_ms == 4.0 and (row.latency_p99_min_ms, row.latency_p99_max_ms) == (3.0, 30.0)


def seed_tables(pg_qps: float, es_qps: float, pg_p99: float, es_p99: float, pg_bound=False, es_bound=False,
                clients: int = 32) -> dict[str, pd.DataFrame]:
    throughput = qps_table(frame(client_row("a", "pg_gin ranked", "mixed", clients, pg_qps, p99=pg_p99, bound=pg_bound),
                                 client_row("b", "elasticsearch", "mixed", clients, es_qps, p99=es_p99, bound=es_bound)))
    return {"throughput": throughput}


def test_seed_comparison_agrees_differs_and_is_inconclusive_on_a_client_bound_floor():
    agree = seed_comparison(seed_tables(3000.0, 2000.0, 4.6, 3.4)).set_index("figure").verdict
    assert agree.str.startswith("agree").all()
    opposite = seed_comparison(seed_tables(1000.0, 2000.0, 9.0, 3.4)).verdict
    assert opposite.iloc[0] == "differ (opposite direction)"
    # Postgres's qps a floor (client-bound) below the seed's ratio: it could still reach it
    floor = seed_comparison(seed_tables(1000.0, 2000.0, 9.0, 3.4, pg_bound=True)).verdict
    assert floor.iloc[0].startswith("inconclusive")


def test_seed_comparison_needs_the_seeds_32_clients():
    row = seed_comparison(seed_tables(3000.0, 2000.0, 4.6, 3.4, clients=8)).iloc[0]
    assert row.verdict.startswith("not comparable") and row["our ratio A/B"] is None
    assert seed_comparison({"throughput": pd.DataFrame()}).verdict.eq("not measured here").all()


def test_a_busy_neighbour_is_flagged_beside_the_client_bound_mark():
    table = qps_table(frame(client_row("a", "opensearch", "rare", 32, 800.0, bound=True, other_cpu_pct=35.0),
                            client_row("b", "pg_gin ranked", "rare", 32, 900.0, other_cpu_pct=5.0)))
    flags = search_flags(table).set_index("variant")["flags"]
    assert flags["opensearch"] == "client-bound; busy neighbour in 1 of 1 runs (up to 35 % of a core)"
    assert flags["pg_gin ranked"] == ""


def capacity_at(variant: str, per_clients: list[tuple[int, float, float | None, str]]) -> dict:
    return {"variant": variant, "stream": "mixed", "target_p99_ms": 10.0, "ceiling_by": "pgbench", "ceiling_s": 30.0,
            "ceiling_by_clients": [{"clients": c, "per_s": rate, "low": rate, "high": rate, "runs": 3, "limit": limit,
                                    "p99_ms": p99} for c, rate, p99, limit in per_clients]}


def test_the_seed_row_reads_the_capacity_ceiling_at_32_clients_over_the_short_sweep():
    capacity = pd.DataFrame([capacity_at("pg_gin ranked", [(16, 2900.0, 6.0, "server"), (32, 3000.0, 11.0, "server")]),
                             capacity_at("elasticsearch", [(16, 1900.0, 9.0, "server"), (32, 2000.0, 16.0, "server")])])
    tables = {**seed_tables(500.0, 500.0, 9.0, 9.0, clients=16), "capacity": capacity}
    rows = seed_comparison(tables).set_index("figure")
    qps = rows.loc["full-text search, ranked 2-term AND, 32 clients (throughput)"]
    assert qps["our ratio A/B"] == 1.5 and qps.verdict.startswith("agree")  # seed 22,900 / 15,200 = 1.51
    assert "capacity ceiling, pgbench, 30-s windows" in qps["ours A"] and "32 clients" in qps["ours A"]
    p99 = rows.loc["full-text search, ranked 2-term AND, 32 clients (p99)"]
    assert p99["our ratio A/B"] == 0.69


def test_a_capacity_ceiling_without_32_clients_leaves_the_sweep_to_say_so():
    capacity = pd.DataFrame([capacity_at("pg_gin ranked", [(16, 2900.0, 6.0, "server")]),
                             capacity_at("elasticsearch", [(16, 1900.0, 9.0, "load")])])
    row = seed_comparison({**seed_tables(3000.0, 2000.0, 4.6, 3.4, clients=8), "capacity": capacity}).iloc[0]
    assert row.verdict.startswith("not comparable")
