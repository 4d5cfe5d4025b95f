"""QPS at matched recall, repetition by repetition: repetition r at the lower bracketing ef is
read with repetition r at the upper one, so the row's spread (and the verdict's worst case) is
the spread of runs that happened, never the bracketing points' extremes interpolated together."""

from __future__ import annotations

import pandas as pd
import pytest

from pglimits_core.analysis.verdict import BY_RATE, decide, sweep_class
from pglimits_core.workloads.vectors.matched import MARKS, SATURATED_MARK, matched_table, side
from pglimits_core.workloads.vectors.tables import sweep_table


def runs(variant: str, ef: int | None, recall: float, qps: list[float], server_ms: list[float] | None = None,
         repetitions: list[int] | None = None, clients: int = 1) -> list[dict]:
    """One sweep run per repetition (its QPS, and the server CPU that gives ``server_ms`` per
    query), scored at ``recall``, on a box with room (client + server well under 2 cores)."""
    server_ms = server_ms or [1.0] * len(qps)
    repetitions = list(range(len(qps))) if repetitions is None else repetitions
    return [{"experiment": "sweep", "status": "complete", "variant": variant, "ef": ef, "clients": clients,
             "repetition": r, "run_id": f"2026{r:02d}-{variant}-{ef}", "ops_per_s": q, "recall_mean": recall,
             "recall_worst5_mean": recall - 0.1, "recall_p5": recall, "rows_min": 10, "client_bound": False,
             "server_cpu_pct": ms * q / 10, "client_cpu_pct": 10.0, "cores": 2,
             "service_time_p50_ms": 1.0, "service_time_p99_ms": 2.0}
            for r, q, ms in zip(repetitions, qps, server_ms, strict=True)]


def matched_of(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    return matched_table(sweep_table(frame), frame).set_index(["target_recall", "clients", "variant"], drop=False)


# two repetitions whose rounds ran in opposite directions: each interpolates to 800 at recall 0.90
# (halfway between ef 10 at 0.80 and ef 40 at 1.00), while the points' extremes interpolated min with
# min and max with max give 400-1200, a spread no pairing of runs had
CROSSED = runs("qdrant hnsw", 10, 0.80, [1200, 400]) + runs("qdrant hnsw", 40, 1.00, [400, 1200])


def test_each_repetition_is_interpolated_with_its_own_run_at_the_other_ef():
    row = matched_of(CROSSED).loc[(0.9, 1, "qdrant hnsw")]
    assert row.qps_is == "interpolated between ef=10 and ef=40" and row.runs == 2
    assert (row.qps, row.qps_min, row.qps_max) == (pytest.approx(800), pytest.approx(800), pytest.approx(800))
    assert row.qps_spread == pytest.approx(1.0)


def test_the_stated_median_is_the_median_of_the_repetitions_at_the_target():
    # per repetition at 0.90: 1000, 700, 760 -> median 760 (the points' medians interpolated: 750)
    rows = runs("qdrant hnsw", 10, 0.80, [1200, 800, 1000]) + runs("qdrant hnsw", 40, 1.00, [800, 600, 520])
    row = matched_of(rows).loc[(0.9, 1, "qdrant hnsw")]
    assert (row.qps, row.qps_min, row.qps_max, row.runs) == (pytest.approx(760), pytest.approx(700),
                                                              pytest.approx(1000), 3)


def test_the_verdict_reads_the_repetitions_spread_not_the_interpolated_extremes():
    # pgvector measured at its smallest ef (it already reaches 0.90): 480 and 520 QPS
    rows = CROSSED + runs("pgvector hnsw", 10, 0.95, [480, 520])
    matched = matched_of(rows)
    qdrant, pgvector = matched.loc[(0.9, 1, "qdrant hnsw")], matched.loc[(0.9, 1, "pgvector hnsw")]
    verdict = decide(side(qdrant), side(pgvector))
    # every pairing of runs has Qdrant ahead by more than the tie band (800/520 at worst); the
    # extremes interpolated (400-1200) would have put its worst case at 400/520: no winner
    assert verdict.klass == BY_RATE and verdict.winner == "qdrant hnsw"
    assert verdict.spread == (pytest.approx(800 / 520), pytest.approx(800 / 480))
    assert qdrant.verdict == sweep_class(BY_RATE) and qdrant.qdrant_over_pgvector == pytest.approx(800 / 500, abs=1e-3)


def test_server_cpu_per_query_is_paired_by_repetition_too():
    # rep 0: 1.0 ms at ef 10, 3.0 ms at ef 40; rep 1: 3.0 and 1.0 -> 2.0 ms each at recall 0.90
    rows = (runs("qdrant hnsw", 10, 0.80, [500, 500], server_ms=[1.0, 3.0])
            + runs("qdrant hnsw", 40, 1.00, [400, 400], server_ms=[3.0, 1.0]))
    row = matched_of(rows).loc[(0.9, 1, "qdrant hnsw")]
    assert (row.server_cpu_us_per_query, row.server_cpu_us_min, row.server_cpu_us_max) == (
        pytest.approx(2000), pytest.approx(2000), pytest.approx(2000))
    assert side(row).server_cpu_us_per_op == pytest.approx(2000)  # printed beside a cell, never deciding it


def test_a_repetition_missing_at_one_bracket_is_dropped_and_counted():
    rows = runs("qdrant hnsw", 10, 0.80, [1200, 400, 5000]) + runs("qdrant hnsw", 40, 1.00, [400, 1200])
    row = matched_of(rows).loc[(0.9, 1, "qdrant hnsw")]
    assert row.runs == 2 and (row.qps_min, row.qps_max) == (pytest.approx(800), pytest.approx(800))
    assert row.qps_is == "interpolated between ef=10 and ef=40 (2 of 3 repetitions: a repetition missing at either ef is dropped)"
    # at the upper point's own recall the lower point weighs nothing: every upper repetition counts
    at_upper = matched_of(runs("qdrant hnsw", 10, 0.80, [900]) + runs("qdrant hnsw", 40, 0.95, [700, 500]))
    assert at_upper.loc[(0.95, 1, "qdrant hnsw"), ["qps", "qps_min", "qps_max", "runs"]].tolist() == [600, 500, 700, 2]


def test_no_repetition_at_both_brackets_claims_no_spread():
    rows = runs("qdrant hnsw", 10, 0.80, [1200], repetitions=[0]) + runs("qdrant hnsw", 40, 1.00, [400], repetitions=[1])
    row = matched_of(rows).loc[(0.9, 1, "qdrant hnsw")]
    assert row.qps == pytest.approx(800) and row.runs == 0 and pd.isna(row.qps_min) and pd.isna(row.qps_max)
    assert "no repetition measured at both ef" in row.qps_is and side(row).value_range is None


def test_records_without_a_repetition_pair_each_points_runs_in_time():
    labelled = matched_of(CROSSED).loc[(0.9, 1, "qdrant hnsw")]
    unlabelled = [{key: value for key, value in run.items() if key != "repetition"} for run in reversed(CROSSED)]
    row = matched_of(unlabelled).loc[(0.9, 1, "qdrant hnsw")]  # run ids in time order, rows in any order
    assert (row.qps, row.qps_min, row.qps_max, row.runs) == (labelled.qps, labelled.qps_min, labelled.qps_max, 2)


def test_the_exact_scan_and_the_smallest_ef_are_their_runs_as_measured():
    rows = runs("pgvector exact", None, 1.0, [9, 8, 12]) + runs("pgvector hnsw", 10, 0.95, [480, 520, 500])
    matched = matched_of(rows)
    exact, hnsw = matched.loc[(0.9, 1, "pgvector exact")], matched.loc[(0.9, 1, "pgvector hnsw")]
    assert (exact.qps, exact.qps_min, exact.qps_max, exact.runs) == (9, 8, 12, 3)
    assert (hnsw.qps, hnsw.qps_min, hnsw.qps_max, hnsw.runs) == (500, 480, 520, 3)


def test_a_saturated_box_and_a_client_bound_run_are_marked_and_the_caption_defines_the_markers():
    from pglimits_core.workloads.vectors.report import CAPTIONS, HOW_TO_READ, readme_lines

    rows = [dict(run, client_cpu_pct=150.0) for run in CROSSED]  # 150 % + ~50 % of 2 cores: saturated
    matched = matched_of(rows)
    assert matched.loc[(0.9, 1, "qdrant hnsw"), "qps_text"] == f"800 {SATURATED_MARK}"
    # each marker is defined once, in the caption of the table that shows it (and the same words
    # wherever it is shown): the matched table in the report and its headline in the README
    assert CAPTIONS["matched"].count(MARKS) == 1 and "ᶜ" not in HOW_TO_READ and "ᵇ" not in HOW_TO_READ
    assert all(MARKS in caption for caption in CAPTIONS.values() if "ᶜ" in caption or "ᵇ" in caption)
    text = "\n".join(readme_lines({"matched": matched.reset_index(drop=True)}, "links"))
    assert text.count(MARKS) == 1 and text.count("ᵇ =") == 1 and text.count("ᶜ =") == 1
    assert text.index(MARKS) < text.index(f"800 {SATURATED_MARK}")


def test_the_decision_cell_is_decided_on_the_repetitions_and_says_how_many():
    from pglimits_core.analysis.decision import DEDICATED_WINS, rule_words
    from pglimits_core.workloads.vectors.decision import decisions

    frame = pd.DataFrame(CROSSED + runs("pgvector hnsw", 10, 0.95, [480, 520]))
    sweep = sweep_table(frame)
    cell = next(c for c in decisions({"matched": matched_table(sweep, frame), "sweep": sweep})
                if c.target == "recall ≥ 0.90")
    assert rule_words(cell) == DEDICATED_WINS  # the extremes interpolated (400-1200) would call it a tie
    assert cell.figures == ("500 QPS (recall 0.950, ef 10; median of 2 runs)",
                            "800 QPS (at recall 0.90, interpolated between ef 10 and 40; median of 2 runs)")
