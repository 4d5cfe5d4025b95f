"""Analysis never crashes on partial records: every workload's frame, tables, charts, report
sections, README lines and seed comparison are built from its committed records after

- every run of one system is marked failed (a server that died early and never came back),
- half of the records are gone (a study cut short), and
- a target is never reached (vectors: no run reaches recall 0.95 — "not reached within the sweep").

Each must render, and a matrix cell left with one side says it is not decided and why; nothing raises.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from pathlib import Path

import matplotlib
import pytest

from pglimits_core.analysis.decision import matrix_table, workload_cells
from pglimits_core.analysis.outputs import build_outputs
from pglimits_core.config import StudyPaths
from pglimits_core.plotting import html_report
from pglimits_core.record.export import committed_host, committed_hosts
from pglimits_core.registry import workload

matplotlib.use("Agg")
WORKLOADS = ["queue", "search", "pubsub", "vectors"]


def committed_runs(name: str) -> Path:
    if not committed_hosts("full", name):
        pytest.fail(f"no committed full-profile records of {name}: the repository should hold them")
    return StudyPaths.committed("full", committed_host("full", nearest=True, study=name)).runs


def copy_runs(name: str, target: Path) -> list[Path]:
    copied = []
    for path in sorted(committed_runs(name).iterdir()):
        manifest = path / "manifest.json"
        if path.is_dir() and manifest.exists() and json.loads(manifest.read_text()).get("study") == name:
            shutil.copytree(path, target / path.name)
            copied.append(target / path.name)
    return copied


def manifest_of(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text())


def fail_every_run_of(system: str, runs: list[Path]) -> None:
    for path in runs:
        manifest = manifest_of(path)
        if manifest.get("system") == system:
            manifest.update(status="failed", error=f"{system} died (SIGKILL) at 12:03:41; restart failed")
            (path / "manifest.json").write_text(json.dumps(manifest))
            (path / "summary.json").unlink(missing_ok=True)


def second_system(runs: list[Path]) -> str:
    counts = Counter(manifest_of(path).get("system") for path in runs)
    return counts.most_common()[1][0] if len(counts) > 1 else counts.most_common()[0][0]


def render_everything(name: str, runs_root: Path, tmp_path: Path) -> None:
    """Build every output of the partial records, and check what the matrix then says: a cell
    with a side missing is "not decided here" with the reason, never a verdict against nothing."""
    chosen = workload(name)
    outputs = build_outputs(chosen, runs_root, tmp_path / "figures", tmp_path / "tables")
    matrix = matrix_table(workload_cells(chosen, outputs.tables, "box", tmp_path / "tables"))
    one_sided = matrix[(matrix.postgres == "—") | (matrix.dedicated == "—")] if not matrix.empty else matrix
    for verdict in one_sided.get("verdict", []):
        assert verdict.startswith("not decided here: ") and len(verdict) > len("not decided here: ") + 5, verdict
    figure_paths = outputs.figure_paths
    if chosen.report_sections is not None:
        results, reference = chosen.report_sections(outputs.tables, figure_paths)
        html_report.render(f"{name} (partial records)", "", [*results, *reference])
    if chosen.readme_lines is not None:
        chosen.readme_lines(outputs.tables, "links")
    if chosen.seed_comparison is not None:
        chosen.seed_comparison(outputs.tables)


@pytest.mark.parametrize("name", WORKLOADS)
def test_one_system_with_every_run_failed_still_renders(name, tmp_path):
    runs = copy_runs(name, tmp_path / "runs")
    fail_every_run_of(second_system(runs), runs)
    render_everything(name, tmp_path / "runs", tmp_path)


@pytest.mark.parametrize("name", WORKLOADS)
def test_half_of_the_records_gone_still_renders(name, tmp_path):
    runs = copy_runs(name, tmp_path / "runs")
    for path in random.Random(7).sample(runs, len(runs) // 2):
        shutil.rmtree(path)
    render_everything(name, tmp_path / "runs", tmp_path)


@pytest.mark.parametrize("name", WORKLOADS)
def test_no_records_at_all_still_renders(name, tmp_path):
    (tmp_path / "runs").mkdir()
    render_everything(name, tmp_path / "runs", tmp_path)


def test_vectors_with_no_run_reaching_recall_095_still_renders(tmp_path):
    runs = copy_runs("vectors", tmp_path / "runs")
    for path in runs:
        recall = manifest_of(path).get("params", {}).get("outcome", {}).get("recall_mean")
        if recall is not None and recall >= 0.95:
            shutil.rmtree(path)
    render_everything("vectors", tmp_path / "runs", tmp_path)
