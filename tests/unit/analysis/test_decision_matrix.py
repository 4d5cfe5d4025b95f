"""The decision matrix: the words for every outcome of the one rule on synthetic cells, each
workload's cells from its committed tables (one machine, a table file that exists), and a study
with no data gives "not decided here" cells or none, never an exception."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pglimits_core.analysis.decision import (
    DEDICATED_WINS,
    NO_DIFFERENCE,
    NOT_DECIDED,
    POSTGRES_AHEAD,
    POSTGRES_MEETS,
    Cell,
    margin,
    matrix_table,
    place,
    ratio_range,
    render_markdown,
    rule_words,
    write_matrix,
)
from pglimits_core.analysis.report import decision_sections
from pglimits_core.analysis.verdict import (
    BY_FLOOR,
    BY_RATE,
    INSIDE_BAND,
    LOAD,
    LOAD_LIMITED,
    NOT_COMPARABLE,
    NOT_RECORDED,
    SERVER,
    Side,
)
from pglimits_core.config import PROJECT_ROOT, StudyPaths
from pglimits_core.record.export import committed_host, committed_hosts
from pglimits_core.registry import workloads


def cell(pg: Side | None, dedicated: Side | None, meets: bool | None = None, missing: str = "") -> Cell:
    return Cell("toy", "1k ops/s", "p99 ≤ 50 ms", pg, dedicated, "latency", unit="ops/s", window_s=30.0,
                postgres_meets=meets, missing=missing)


def server(system: str, value: float, limit: str | None = SERVER, spread: float = 0.05, **kw) -> Side:
    """A side with runs ±``spread`` around ``value``."""
    return Side(system, value, limit=limit, value_range=(value * (1 - spread), value * (1 + spread)), **kw)


def test_a_dedicated_system_ahead_by_rate_wins():
    decided = cell(server("postgres", 1000), server("redis", 3000))
    assert decided.verdict.klass == BY_RATE and rule_words(decided) == DEDICATED_WINS
    assert margin(decided) == "dedicated ×3.00 (figure)"


def test_postgres_ahead_suffices_and_says_so():
    decided = cell(server("postgres", 3000), server("redis", 1000))
    assert rule_words(decided) == POSTGRES_AHEAD and margin(decided) == "Postgres ×3.00 (figure)"


def test_overlapping_runs_where_postgres_meets_the_target_is_postgres_suffices():
    assert rule_words(cell(server("postgres", 1000), server("redis", 1050), meets=True)) == POSTGRES_MEETS


@pytest.mark.parametrize("meets", [None, False])
def test_overlapping_runs_without_a_target_met_are_no_measurable_difference(meets):
    assert rule_words(cell(server("postgres", 1000), server("redis", 1050), meets=meets)) == NO_DIFFERENCE


def test_ahead_in_every_run_inside_the_band_is_not_decided_and_says_so():
    decided = cell(server("postgres", 1000, spread=0.01), server("redis", 1100, spread=0.01), meets=True)
    assert decided.verdict.klass == INSIDE_BAND
    assert rule_words(decided) == ("not decided here: redis ahead in every run, but inside the tie band "
                              "(runs 990–1,010 vs 1,089–1,111)")
    assert NO_DIFFERENCE not in rule_words(decided) and margin(decided) == "dedicated ×1.10 (figure); ×1.08 at the ranges' nearest ends: undecided"


def test_a_floor_above_a_ceiling_wins_and_its_figure_reads_at_least():
    decided = cell(Side("postgres", 15435, limit=SERVER, value_range=(14850, 15530), server_cpu_us_per_op=81.8),
                   Side("redis", 36380, limit=LOAD, value_range=(33535, 37410), server_cpu_us_per_op=10.4))
    assert decided.verdict.klass == BY_FLOOR and rule_words(decided) == DEDICATED_WINS
    assert margin(decided) == "dedicated ≥ ×2.16 (floor's worst run over the other's best)"
    shown = matrix_table([decided]).iloc[0]
    assert (shown.postgres_figure, shown.dedicated_figure) == ("15,435 ops/s", "≥ 36,380 ops/s")
    assert shown.spread == "Postgres/dedicated ≤ ×0.46 (figure; the winner's a floor) over the runs' range"
    # server CPU per operation is printed beside the cell, never deciding it
    assert (shown.postgres_server_cpu_us_per_op, shown.dedicated_server_cpu_us_per_op) == ("81.8", "10.4")


def test_client_bound_sides_are_not_decided_by_server_cpu_per_operation():
    decided = cell(server("postgres", 9000, LOAD, server_cpu_us_per_op=40),
                   server("redis", 5000, LOAD, server_cpu_us_per_op=10))
    assert decided.verdict.klass == LOAD_LIMITED and margin(decided) == "—"
    assert rule_words(decided) == ("not decided here: both figures are floors, each where its load generator's CPU set was saturated (the server's may have been too): "
                              "≥ 9,000 vs ≥ 5,000")


def test_a_floor_below_a_ceiling_never_wins():
    decided = cell(server("postgres", 1000, LOAD), server("redis", 1200), meets=True)
    assert decided.verdict.klass == LOAD_LIMITED
    assert rule_words(decided) == ("not decided here: postgres's load limited it at ≥ 1,000, below redis's 1,200: "
                              "the load could not show whether postgres passes it")
    assert margin(decided) == "—"


def test_a_limit_not_recorded_is_not_decided_here():
    decided = cell(server("postgres", 1, None), server("redis", 9))
    assert decided.verdict.klass == NOT_RECORDED
    assert rule_words(decided) == "not decided here: postgres: which side set the limit was not recorded"


def test_an_unreachable_rate_is_not_decided_here_with_why():
    decided = cell(server("postgres", 1316, reaches_rate=False), server("redis", 5000))
    assert decided.verdict.klass == NOT_COMPARABLE
    assert rule_words(decided) == f"{NOT_DECIDED}: postgres cannot reach the compared rate on this box"


def test_a_missing_side_is_not_decided_here_with_why():
    assert rule_words(cell(None, server("redis", 1), missing="no Postgres design")) == f"{NOT_DECIDED}: no Postgres design"
    assert cell(None, server("redis", 1)).verdict is None


def test_the_ratio_range_runs_worst_case_to_best_case():
    assert ratio_range(90, 110, 45, 55) == "Postgres/dedicated ×1.64–×2.44 over the runs' range"
    assert ratio_range(90, float("nan"), 45, 55) == ""


def test_the_table_and_markdown_name_the_machine_and_link_the_table(tmp_path):
    cells = place([cell(server("postgres", 3000), server("redis", 1000))], "box-a", tmp_path / "tables")
    table = matrix_table(cells)
    assert table.loc[0, "machine"] == "box-a" and table.loc[0, "verdict"] == POSTGRES_AHEAD
    assert table.loc[0, "table"].endswith("tables/toy-latency.csv")
    text = render_markdown(table)
    assert "### toy (machine `box-a`)" in text and "[toy-latency.csv](" in text
    assert "no cells" in render_markdown(matrix_table([]))
    written = write_matrix(table, tmp_path)
    assert (tmp_path / "decision-matrix.csv").exists() and "(tables/toy-latency.csv)" in written


def test_the_report_puts_the_matrix_first_only_when_there_are_cells():
    assert decision_sections([]) == []
    sections = decision_sections([cell(server("postgres", 1), server("redis", 1))])
    assert sections[0].title == "The decision matrix"


def committed_tables(workload) -> tuple[str, Path, dict[str, pd.DataFrame]]:
    machine = committed_host("full", nearest=True, study=workload.name)
    directory = StudyPaths.committed("full", machine).tables
    prefix = f"{workload.name}-"
    tables = {path.stem[len(prefix):]: read_table(path) for path in sorted(directory.glob(f"{prefix}*.csv"))}
    return machine, directory, tables


def read_table(path: Path) -> pd.DataFrame:
    """A committed table; one with no rows and no columns (an experiment these records lack) is
    written as an empty file."""
    return pd.read_csv(path) if path.read_text().strip() else pd.DataFrame()


WITH_DECISIONS = [w for w in workloads() if w.decisions is not None]


def test_every_built_in_workload_supplies_decisions():
    assert {w.name for w in WITH_DECISIONS} >= {"queue", "search", "pubsub", "vectors"}


@pytest.mark.parametrize("workload", WITH_DECISIONS, ids=lambda w: w.name)
def test_each_workload_decides_its_committed_tables(workload):
    if not committed_hosts("full", workload.name):
        pytest.skip(f"no committed {workload.name} records")
    machine, directory, tables = committed_tables(workload)
    cells = place(workload.decisions(tables), machine, directory)
    assert cells, f"{workload.name}: no cells from its committed tables"
    for decided in cells:
        assert decided.workload == workload.name and decided.machine == machine
        assert (PROJECT_ROOT / decided.path).is_file(), decided.path
        assert rule_words(decided)  # every outcome has its words


@pytest.mark.parametrize("workload", WITH_DECISIONS, ids=lambda w: w.name)
def test_a_workload_with_no_data_gives_undecided_cells_or_none(workload):
    for tables in (workload.tables(workload.frame([])), {}, {"latency": pd.DataFrame()}):
        for decided in workload.decisions(tables):
            assert rule_words(decided).startswith(NOT_DECIDED)


def queue_throughput(*rows) -> pd.DataFrame:
    return pd.DataFrame([{"variant": v, "durability_class": "per_commit", "jobs_per_s": j, "min_jobs_per_s": lo,
                          "max_jobs_per_s": hi, "client_bound": False, "consumers": 4} for v, j, lo, hi in rows])


def test_queue_peak_compares_only_like_delivery_and_batch():
    from pglimits_core.workloads.queue.decision import peak_cells

    table = queue_throughput(("pg_delete batch=50", 27375, 22238, 28062), ("pg_skiplocked batch=10", 8890, 6942, 9255),
                             ("pg_skiplocked batch=50", 20000, 19000, 21000),
                             ("redis_reliable appendfsync=always batch=10 pipeline=10", 9458, 7692, 9980))
    (decided,) = peak_cells(table)
    assert decided.postgres.system == "pg_skiplocked batch=10" and rule_words(decided) == NO_DIFFERENCE
    (unlike,) = peak_cells(queue_throughput(("pg_delete batch=50", 27375, 22238, 28062),
                                            ("redis_reliable batch=10", 9458, 7692, 9980)))
    assert rule_words(unlike) == f"{NOT_DECIDED}: not like for like (delivery / batch)" and unlike.verdict is None


def test_vectors_use_the_sweeps_client_bound_verdict_and_decide_on_qps():
    from pglimits_core.workloads.vectors.decision import decisions

    matched = pd.DataFrame([{"target_recall": 0.95, "clients": 8, "variant": v, "ef": 64, "recall_mean": 0.97,
                             "qps": q, "qps_min": lo, "qps_max": hi, "server_cpu_ms_per_query": c}
                            for v, q, lo, hi, c in (("pgvector hnsw", 763.3, 615, 830, 2.15),
                                                    ("qdrant hnsw", 945.7, 940, 950, 1.15))])
    sweep = matched[["variant", "ef", "clients"]].assign(client_bound=False)
    (decided,) = decisions({"matched": matched, "sweep": sweep})
    assert decided.verdict.klass == INSIDE_BAND and decided.postgres.limit == "neither"
    # pgvector 615-830 against Qdrant 940-950: Qdrant ahead in every pairing of runs, by as little as
    # x1.13 (inside the tie band): neither a win nor "no difference"
    assert rule_words(decided) == ("not decided here: qdrant hnsw ahead in every run, but inside the tie band "
                              "(runs 615–830 vs 940–950)")
    assert margin(decided) == "dedicated ×1.24 (figure); ×1.13 at the ranges' nearest ends: undecided"
    overlapping = matched.assign(qps_min=[615, 600], qps_max=[830, 950])  # Qdrant's slowest run below pgvector's fastest
    (tied,) = decisions({"matched": overlapping, "sweep": sweep})
    assert rule_words(tied) == POSTGRES_MEETS


def test_the_spread_column_shows_the_deciding_ratios_spread():
    decided = cell(Side("postgres", 3000, limit=SERVER, value_range=(2900, 3100)),
                   Side("redis", 1000, limit=SERVER, value_range=(950, 1050)))
    assert matrix_table([decided]).loc[0, "spread"].startswith("Postgres/dedicated ×2.76–×3.26 (figure)")


def test_queue_latency_target_cells_are_decided_on_meeting_the_target_even_client_bound():
    from pglimits_core.analysis.decision import NEITHER_MEETS
    from pglimits_core.workloads.queue.decision import latency_cells

    def runs(variant, p99s, bound=True):
        return [{"variant": variant, "durability_class": "per_commit", "offered_per_s": 1000, "sustained": True,
                 "send_to_claim_p99_ms": p99, "client_bound": bound} for p99 in p99s]

    def outcome(pg_p99s, redis_p99s, pg_bound=False, redis_bound=False):
        (decided,) = latency_cells(pd.DataFrame(runs("pg_skiplocked batch=10", pg_p99s, pg_bound)
                                                + runs("redis_reliable", redis_p99s, redis_bound)))
        return rule_words(decided)

    # delete-mode claims are at-most-once, the reliable queue at-least-once: never set side by side
    (unlike,) = latency_cells(pd.DataFrame(runs("pg_delete batch=50", [23, 25, 33]) + runs("redis_reliable", [7, 9, 12])))
    assert rule_words(unlike) == "not decided here: not like for like (delivery / batch)"
    # the same test as the peak cells: 50 per claim is never set beside a pipeline of 10
    (batched,) = latency_cells(pd.DataFrame(runs("pgmq batch=50", [23, 25, 33])
                                            + runs("redis_reliable batch=10 pipeline=10", [7, 9, 12])))
    assert rule_words(batched) == "not decided here: not like for like (delivery / batch)"

    # meeting the target holds even load-limited (a slow client only adds latency); the words never
    # say "no measurable difference" when one side's p99 was lower in every run
    assert outcome([23, 25, 33], [7, 9, 12], pg_bound=True, redis_bound=True) == (
        "Postgres suffices (meets the target in 3 of 3 runs; Redis's p99 lower in every run: 7.0–12.0 vs "
        "23.0–33.0 ms)")
    assert outcome([7, 9, 12], [23, 25, 33]) == (
        "Postgres suffices (meets the target in 3 of 3 runs; Postgres's p99 lower in every run: 7.0–12.0 vs "
        "23.0–33.0 ms)")
    assert outcome([8, 11, 14], [7, 9, 12]) == POSTGRES_MEETS  # the p99 ranges overlap
    assert outcome([60, 70, 80], [7, 9, 12]) == DEDICATED_WINS
    assert outcome([23, 25, 33], [60, 70, 80]) == POSTGRES_AHEAD
    assert outcome([60, 70, 80], [60, 70, 80]) == NEITHER_MEETS
    # a miss is the server's only when the load was not the limit (and the limit was recorded)
    missed = outcome([60, 70, 80], [7, 9, 12], pg_bound=True)
    assert missed == ("not decided here: pg_skiplocked batch=10 missed the target with its load as the limit "
                      "(the miss may not be the server's)")
    assert outcome([23, 25, 33], [60, 70, 80], redis_bound=True).startswith("not decided here: redis_reliable missed")
    unknown = outcome([60, 70, 80], [7, 9, 12], pg_bound=None)
    assert unknown.startswith("not decided here: pg_skiplocked batch=10 missed the target and which side set the "
                              "limit was not recorded")


def test_the_scoreboard_colours_each_verdict_family_and_draws_a_tile_per_cell(tmp_path):
    import pandas as pd

    from pglimits_core.analysis.scoreboard import family, write_scoreboard

    assert family("Postgres suffices (Postgres ahead)")[0] == "Postgres suffices"
    assert family("dedicated wins")[0] == "dedicated system wins"
    assert family("not decided here: no Postgres design in this durability class")[0] == "not decided on this box"
    table = pd.DataFrame([{"workload": "queue", "scale": f"scale {i}", "target": "p99 ≤ 50 ms",
                           "verdict": "dedicated wins"} for i in range(8)])
    paths = write_scoreboard(table, tmp_path, stamp="test")
    assert [p.name for p in paths] == ["decision-scoreboard.png", "decision-scoreboard.svg"]
    assert write_scoreboard(table.iloc[0:0], tmp_path / "empty") == []


def test_a_tile_carries_its_verdict_and_ratio_not_only_a_colour():
    import matplotlib.pyplot as plt
    import pandas as pd

    from pglimits_core.analysis.scoreboard import draw

    table = pd.DataFrame([
        {"workload": "vectors", "scale": "capacity, recall ≥ 0.95", "target": "query p99 ≤ 10 ms (held over 30-s windows)",
         "verdict": "dedicated wins", "margin": "dedicated ×2.19 (figure)"},
        {"workload": "search", "scale": "rare stream", "target": "none", "verdict": "Postgres suffices (Postgres ahead)",
         "margin": "Postgres ×2.21 (figure)"},
        {"workload": "pubsub", "scale": "1 subscriber", "target": "p99", "verdict": "not decided here: the tie band",
         "margin": "—"}])
    figure = draw(table)
    try:
        texts = [text.get_text().replace("\n", " ") for text in figure.axes[0].texts]
    finally:
        plt.close(figure)
    assert {"dedicated ×2.19", "Postgres ×2.21", "not decided"} <= set(texts)
    # the scale, then its target from a line of its own
    assert "recall ≥ 0.95 query p99 ≤ 10 ms" in texts and "rare stream flat out" in texts


def test_a_tile_names_its_scale_without_the_details_the_matrix_table_holds():
    from pglimits_core.analysis.scoreboard import tile_words

    scale = ("best closed-loop throughput of the measured consumer counts, durability periodic (server SIGKILL "
             "drill: pg_delete batch=1 lost 18 acknowledged messages in 2 drills); like for like (same batch)")
    assert tile_words(scale) == "best closed-loop throughput of the measured consumer counts, durability periodic"
    assert tile_words("send → claim p99 ≤ 50 ms (from the scheduled send)") == "send → claim p99 ≤ 50 ms"


def test_capacity_cells_replace_the_sweeps_cells_and_only_without_them_the_sweeps_show():
    from pglimits_core.registry import with_capacity

    sweep = [Cell("queue", "peak", "none", None, None, "throughput")]
    capacity = [Cell("queue", "capacity, durability per_commit", "p99 ≤ 10 ms", None, None, "capacity")]
    assert with_capacity(lambda tables: capacity, lambda tables: sweep)({}) == capacity
    assert with_capacity(lambda tables: [], lambda tables: sweep)({}) == sweep


def test_cells_answering_other_questions_follow_either_headline():
    """The filtered search's and the footprint's cells stand beside the capacity cells and beside
    the sweeps' alike (the capacity cells once hid the filtered ones)."""
    from pglimits_core.registry import with_capacity

    sweep = [Cell("vectors", "1 client", "recall ≥ 0.90", None, None, "matched")]
    capacity = [Cell("vectors", "capacity", "p99 ≤ 10 ms", None, None, "capacity")]
    filtered = [Cell("vectors", "filtered search, 1 %", "recall ≥ 0.90", None, None, "filtered")]
    both = with_capacity(lambda tables: capacity, lambda tables: sweep, lambda tables: filtered)
    assert both({}) == capacity + filtered
    assert with_capacity(lambda tables: [], lambda tables: sweep, lambda tables: filtered)({}) == sweep + filtered
