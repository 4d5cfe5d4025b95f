"""The committed results: every run record under data/results/ validates against the schema,
and the README's results block is what those records give (generated, never typed)."""

import json
import subprocess
import sys

import pytest

from pglimits_core.analysis import readme_results
from pglimits_core.config import PROJECT_ROOT
from pglimits_core.record.export import (
    committed_host,
    committed_hosts,
    notebook_text,
    without_progress,
)
from pglimits_core.registry import workloads

RESULTS = PROJECT_ROOT / "data" / "results"


def test_committed_results_validate():
    assert list(RESULTS.glob("*/full/runs/*/manifest.json")), "no committed full-profile run records"
    result = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate", str(RESULTS)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_results_block_is_exactly_what_the_committed_records_give():
    """The whole block (every workload's headline, drills, figure links), recomputed from the
    committed records without writing anything: a refactor that changes a number shows here."""
    results = readme_results.RESULTS_DOC.read_text()
    assert readme_results.results_block("full", write=False) in results, (
        "docs/RESULTS.md's results block is stale: make results (or pglimits results build)")
    for study in ("queue", "search"):
        assert f"machine `{committed_host('full', nearest=True, study=study)}`" in results


def test_each_workload_s_committed_records_come_from_one_machine():
    """A workload's block may come from its own machine, but from one: with two, which one the
    tables show would depend on the machine regenerating them (its own first)."""
    for workload in workloads():
        assert len(committed_hosts("full", workload.name)) <= 1, (
            f"{workload.name}: committed full records from {committed_hosts('full', workload.name)}; "
            "keep the newest sitting's and remove the other machine's")


def test_readme_answer_is_exactly_the_decision_matrix_the_committed_records_give():
    from pglimits_core.analysis import answer

    readme = (PROJECT_ROOT / "README.md").read_text()
    assert answer.answer_block("full") in readme, (
        "README's answer is stale: make results (or pglimits results build)")


def test_readme_first_screen_lines_are_what_the_committed_matrix_gives():
    from pglimits_core.analysis import headline

    block = headline.committed_headline("full")
    assert block in (PROJECT_ROOT / "README.md").read_text(), (
        "README's headline lines are stale: make results (or pglimits results build)")
    assert block.count("\n- **") >= 4  # queue, search, pub/sub, vectors


def test_readme_stays_short_enough_to_read_at_a_glance():
    assert len((PROJECT_ROOT / "README.md").read_text().splitlines()) <= 150


def test_an_unknown_host_is_a_one_line_error():
    with pytest.raises(Exception, match="no committed runs"):
        readme_results.results_block("full", host="no-such-machine")


#: the capacity table's columns every workload shares, one vocabulary from records to tables:
#: a change to how a committed record becomes one of these numbers shows here
SHARED_CAPACITY_COLUMNS = ("variant", "side", "target_p99_ms", "ceiling_per_s", "ceiling_low", "ceiling_high",
                           "ceiling_limit", "ceiling_by", "check_per_s", "agrees", "capacity_per_s",
                           "capacity_limit", "capacity_miss_per_s", "p99_ms", "server_cpu_us_per_item", "steady_s",
                           "below_per_s")


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*/full/tables/*-capacity.csv")),
                         ids=lambda p: f"{p.parts[-4]}/{p.name}")
def test_each_committed_capacity_table_is_what_its_records_give_on_the_shared_columns(path):
    """Golden: a machine's committed ``<workload>-capacity.csv`` against the same table computed
    now from that machine's committed records, on the columns every workload shares."""
    import io

    import pandas as pd

    from pglimits_core.analysis.outputs import build_outputs
    from pglimits_core.registry import workload

    now = build_outputs(workload(path.name.removesuffix("-capacity.csv")), path.parent.parent / "runs").tables
    assert not now.get("capacity", pd.DataFrame()).empty, f"{path}: its records make no capacity table"
    was = pd.read_csv(path)
    columns = [c for c in SHARED_CAPACITY_COLUMNS if c in was]
    assert {"variant", "ceiling_per_s", "capacity_per_s", "side"} <= set(columns), path
    rebuilt = pd.read_csv(io.StringIO(now["capacity"][columns].to_csv(index=False)))
    pd.testing.assert_frame_equal(was[columns], rebuilt, check_dtype=False, obj=str(path))


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*/full/notebooks/*.ipynb")), ids=lambda p: p.name)
def test_each_committed_notebook_opens_on_its_tables_not_on_a_progress_bar(path):
    """Exported notebooks fold the study's progress bar (a hundred stderr lines) into its last
    line: the committed copy is what ``export.without_progress`` leaves, byte for byte."""
    notebook = json.loads(path.read_text())
    assert path.read_text() == notebook_text(without_progress(notebook)), (
        f"{path.name} carries its progress bar: pglimits results export (or export.without_progress)")
