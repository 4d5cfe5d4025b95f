"""A new workload is one package, one registry entry and one notebook: a toy workload defined
entirely in a temporary directory (its package, its profile, its notebook; the registry entry by
``PGLIMITS_WORKLOADS``) runs through ``run_all.py``, the report and the README block — and no
file of the repository changes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pglimits_core.config import PROJECT_ROOT
from tests.conftest import TEST_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.notebook]

# A real point: a SELECT 1 closed loop against the SQLite file the fleet creates, recorded by
# the same run_recorded every workload uses.
TOY_PACKAGE = '''
"""The toy workload: SELECT 1 against SQLite at two client counts."""
import pandas as pd
import matplotlib.pyplot as plt

from pglimits_core.analysis.runs import entry_rows, measured
from pglimits_core.load import ClosedLoop, Phase, Role, RunSpec
from pglimits_core.plotting.html_report import Section
from pglimits_core.profiles import Strict
from pglimits_core.studies.noop_ops import SQLiteNoop
from pglimits_core.studies.runner import run_recorded
from pglimits_core.studies.study import Point
from pglimits_core.registry import Chart, Workload


class ToySection(Strict):
    clients: list[int]
    duration_s: float = 0.5


def measure(run, clients, duration_s):
    spec = RunSpec(phases=[Phase("warmup", 0.2, warmup=True), Phase("measure", duration_s)],
                   roles=[Role("client", SQLiteNoop(run.ctx.endpoints["sqlite"].url), workers=clients,
                               loop=ClosedLoop())], seed=run.seed, start_method="fork")
    params = {"experiment": "select1", "variant": "sqlite", "clients": clients}
    return run_recorded(run.ctx, "toy", "sqlite", "select1", "sqlite", spec, params)


def plan(section, profile):
    return [Point("select1", "sqlite", "sqlite", {"clients": c},
                  lambda run, c=c: measure(run, c, section.duration_s)) for c in section.clients]


def tables(frame):
    rows = measured(frame)
    ops = rows[["variant", "workers", "ops_per_s"]].rename(columns={"workers": "clients"}) if len(rows) else pd.DataFrame()
    return {"ops": ops.reset_index(drop=True)}


def chart(table):
    fig, ax = plt.subplots()
    ax.plot(table.clients, table.ops_per_s, marker="o")
    ax.set(xlabel="clients", ylabel="SELECT 1 per s", title="Toy: SELECT 1")
    return fig


WORKLOAD = Workload(
    name="toy", title="Toy", notebook="15-toy", section=ToySection, plan=plan, frame=entry_rows,
    tables=tables, charts=(Chart("ops", "toy-ops", chart, "ops_per_s"),),
    report_sections=lambda t, f: ([Section("Toy: SELECT 1", tables=[("ops", t["ops"])],
                                           figures=[p for ps in f.values() for p in ps if p.suffix == ".png"])], []),
    readme_lines=lambda t, links: [f"Toy SELECT 1. {links}", "", t["ops"].to_markdown(index=False), ""],
)
'''

TOY_NOTEBOOK = {"cells": [
    {"cell_type": "code", "id": "params", "metadata": {"tags": ["parameters"]}, "execution_count": None,
     "outputs": [], "source": 'profile = "toy"\nmeasure = False\nresume = False\nfigures_dir = ""'},
    {"cell_type": "code", "id": "study", "metadata": {}, "execution_count": None, "outputs": [],
     "source": 'from pglimits_core import notebook\nview = notebook.open_study("toy", profile, measure=measure, '
               'resume=resume, figures_dir=figures_dir)\nview.show("ops")'}],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "nbformat": 4, "nbformat_minor": 5}


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=PROJECT_ROOT, capture_output=True, text=True).stdout


@pytest.fixture
def toy(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "toy_workload.py").write_text(TOY_PACKAGE)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "15-toy.ipynb").write_text(json.dumps(TOY_NOTEBOOK))
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "toy.yaml").write_text("description: a toy study\ntoy:\n  clients: [1, 2]\n")
    state = TEST_ROOT / f"toy-{uuid.uuid4().hex[:8]}"
    yield {**os.environ, "PYTHONPATH": f"{tmp_path / 'pkg'}:{PROJECT_ROOT}",
            "PGLIMITS_WORKLOADS": "toy=toy_workload:WORKLOAD",
            "PGLIMITS_NOTEBOOKS_DIR": str(tmp_path / "notebooks"),
            "PGLIMITS_PROFILES_DIR": str(tmp_path / "profiles"),
            "PGLIMITS_DATA_DIR": str(tmp_path / "data"), "PGLIMITS_FIGURES_DIR": str(tmp_path / "figures"),
            "PGLIMITS_STATE_DIR": str(state), "PYTHONUNBUFFERED": "1"}
    shutil.rmtree(state, ignore_errors=True)


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_a_toy_workload_runs_through_run_all_the_report_and_the_readme(toy: dict[str, str], tmp_path: Path):
    before = git_status()

    study = run(toy, "run_all.py", "--profile", "toy", "--only", "toy")
    assert study.returncode == 0, study.stdout[-3000:] + study.stderr[-3000:]
    assert "15-toy: complete" in study.stdout and "90-report: complete" in study.stdout, study.stdout

    results = next((tmp_path / "data" / "results").glob("*/toy"))
    ops = (results / "tables" / "toy-ops.md").read_text()
    assert ops.count("sqlite") == 2, ops  # one row per client count, measured
    report = (results / "report.html").read_text()
    assert "Toy: SELECT 1" in report and "data:image/png;base64" in report
    assert list((tmp_path / "figures").glob("*/toy/toy-ops.png"))
    executed = json.loads((tmp_path / "data" / "executed" / "toy" / "15-toy.ipynb").read_text())
    assert any("image/png" in out.get("data", {}) for cell in executed["cells"] for out in cell.get("outputs", []))

    exported = run(toy, "-c", "from pglimits_core.analysis import publish; print(publish.export('toy'))")
    assert exported.returncode == 0, exported.stderr
    readme = tmp_path / "README.md"
    readme.write_text("# toy\n")
    block = run(toy, "-c", "from pathlib import Path; from pglimits_core.analysis import readme_results as r; "
                            f"r.update_readme(r.results_block('toy'), Path({str(readme)!r}))")
    assert block.returncode == 0, block.stderr
    text = readme.read_text()
    assert "### Toy results (profile `toy`" in text and "toy-ops.png" in text and "Toy SELECT 1." in text

    assert git_status() == before, "adding a workload changed files of the repository"
