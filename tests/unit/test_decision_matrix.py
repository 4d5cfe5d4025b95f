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
    words,
    write_matrix,
)
from pglimits_core.analysis.report import decision_sections
from pglimits_core.analysis.verdict import (
    AT_SERVER,
    BY_SERVER_CPU,
    NOT_BY_HARNESS,
    NOT_COMPARABLE,
    Side,
)
from pglimits_core.config import PROJECT_ROOT, StudyPaths
from pglimits_core.record.export import committed_host, committed_hosts
from pglimits_core.registry import workloads


def cell(pg: Side | None, dedicated: Side | None, meets: bool | None = None, missing: str = "") -> Cell:
    return Cell("toy", "1k ops/s", "p99 ≤ 50 ms", pg, dedicated, "latency", unit="ops/s",
                postgres_meets=meets, missing=missing)


def server(system: str, value: float, **kw) -> Side:
    return Side(system, value, client_bound=False, **kw)


def test_a_dedicated_system_ahead_at_the_server_wins():
    decided = cell(server("postgres", 1000), server("redis", 3000))
    assert decided.verdict.klass == AT_SERVER and words(decided) == DEDICATED_WINS
    assert margin(decided) == "dedicated ×3.00 (figure)"


def test_postgres_ahead_suffices_and_says_so():
    decided = cell(server("postgres", 3000), server("redis", 1000))
    assert words(decided) == POSTGRES_AHEAD and margin(decided) == "Postgres ×3.00 (figure)"


def test_a_tie_where_postgres_meets_the_target_is_postgres_suffices():
    assert words(cell(server("postgres", 1000), server("redis", 1100), meets=True)) == POSTGRES_MEETS


@pytest.mark.parametrize("meets", [None, False])
def test_a_tie_without_a_target_met_is_no_measurable_difference(meets):
    assert words(cell(server("postgres", 1000), server("redis", 1100), meets=meets)) == NO_DIFFERENCE


def test_client_bound_sides_are_decided_by_server_cpu_per_operation():
    decided = cell(Side("postgres", 9000, client_bound=True, server_cpu_us_per_op=40),
                   Side("redis", 5000, client_bound=True, server_cpu_us_per_op=10))
    assert decided.verdict.klass == BY_SERVER_CPU and words(decided) == DEDICATED_WINS
    assert margin(decided) == "dedicated ×4.00 (server CPU per op)"


def test_a_client_bound_higher_rate_never_wins():
    decided = cell(Side("postgres", 9000, client_bound=True), server("redis", 1000), meets=True)
    assert decided.verdict.klass == NOT_BY_HARNESS
    assert words(decided).startswith(f"{NOT_DECIDED}: ") and "postgres" in words(decided)
    assert margin(decided) == "—"


def test_an_unknown_client_bound_verdict_is_not_decided_here():
    assert words(cell(Side("postgres", 1, client_bound=None), server("redis", 9))).startswith(NOT_DECIDED)


def test_an_unreachable_rate_is_not_decided_here_with_why():
    decided = cell(Side("postgres", 1316, client_bound=False, reaches_rate=False), server("redis", 5000))
    assert decided.verdict.klass == NOT_COMPARABLE
    assert words(decided) == f"{NOT_DECIDED}: postgres cannot reach the compared rate on this box"


def test_a_missing_side_is_not_decided_here_with_why():
    assert words(cell(None, server("redis", 1), missing="no Postgres design")) == f"{NOT_DECIDED}: no Postgres design"
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
    tables = {path.stem[len(prefix):]: pd.read_csv(path) for path in sorted(directory.glob(f"{prefix}*.csv"))}
    return machine, directory, tables


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
        assert words(decided)  # every outcome has its words


@pytest.mark.parametrize("workload", WITH_DECISIONS, ids=lambda w: w.name)
def test_a_workload_with_no_data_gives_undecided_cells_or_none(workload):
    for tables in (workload.tables(workload.frame([])), {}, {"latency": pd.DataFrame()}):
        for decided in workload.decisions(tables):
            assert words(decided).startswith(NOT_DECIDED)
