"""A server that dies in the middle of a study, nobody having planned it: noticed with its signal,
restarted, the remaining points measured — or, when it dies again, the remaining points recorded
as not run with that reason. ``run_all.py`` then exits non-zero naming the cause, the report
still renders, ``--resume`` measures exactly the points that failed, and nothing is left running.

The study is a toy workload (defined in a temporary directory, registered by
``PGLIMITS_WORKLOADS``) whose points each run the server's own no-op round trip through the same
``run_recorded`` as every study; a thread of point ``kill_at`` SIGKILLs the server's main process
from outside while that point's load is running, as an OOM kill would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from pglimits_core.config import PROJECT_ROOT, state_dir
from tests.conftest import TEST_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.notebook]

DEATH_PACKAGE = '''
"""Toy: the server's no-op at one client, ``points`` times; ``kill_at`` points die mid-load."""
import os, signal, threading

import pandas as pd

from pglimits_core.analysis.runs import entry_rows, measured
from pglimits_core.load import ClosedLoop, Phase, Role, RunSpec
from pglimits_core.profiles import Strict
from pglimits_core.registry import Workload
from pglimits_core.studies.calibration import noop_operation
from pglimits_core.studies.runner import run_recorded
from pglimits_core.studies.study import Point


class DeathSection(Strict):
    server: str
    points: int = 5
    kill_at: list[int] = []
    duration_s: float = 1.0


def kill_soon(pid, after_s=0.4):
    """SIGKILL ``pid`` from another thread while the point's load runs."""
    threading.Timer(after_s, lambda: os.kill(pid, signal.SIGKILL)).start()


def measure(run, server, index, section):
    params = {"experiment": "noop", "variant": server, "index": index}
    spec = lambda: RunSpec(phases=[Phase("measure", section.duration_s)],
                           roles=[Role("client", noop_operation(server)(run.ctx.endpoints[server].url), workers=1,
                                       loop=ClosedLoop())], seed=run.seed, start_method="fork")
    if reused := run.ctx.reuse("death", server, "noop", {**params, "spec": spec().describe()}):
        return reused  # resumed: this point's complete record is kept, not measured again
    if index in section.kill_at and os.environ.get("DEATH_KILLS") != "off":
        kill_soon(run.ctx.endpoints[server].pids[0])
    return run_recorded(run.ctx, "death", server, "noop", server, spec(), params)


def plan(section, profile):
    return [Point("noop", section.server, section.server, {"index": i},
                  lambda run, i=i: measure(run, section.server, i, section)) for i in range(section.points)]


def tables(frame):
    rows = measured(frame)
    return {"noop": rows[["variant", "ops_per_s"]].reset_index(drop=True) if len(rows) else pd.DataFrame()}


WORKLOAD = Workload(name="death", title="Death", notebook="16-death", section=DeathSection, plan=plan,
                    frame=entry_rows, tables=tables)
'''

DEATH_NOTEBOOK = {"cells": [
    {"cell_type": "code", "id": "params", "metadata": {"tags": ["parameters"]}, "execution_count": None,
     "outputs": [], "source": 'profile = "death"\nmeasure = False\nresume = False\nfigures_dir = ""'},
    {"cell_type": "code", "id": "study", "metadata": {}, "execution_count": None, "outputs": [],
     "source": 'from pglimits_core import notebook\nview = notebook.open_study("death", profile, measure=measure, '
               'resume=resume, figures_dir=figures_dir)\nview.not_run()'}],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "nbformat": 4, "nbformat_minor": 5}


def study_env(tmp_path: Path, server: str, kill_at: list[int], points: int = 5) -> dict[str, str]:
    (tmp_path / "pkg").mkdir(exist_ok=True)
    (tmp_path / "pkg" / "death_workload.py").write_text(DEATH_PACKAGE)
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    (tmp_path / "notebooks" / "16-death.ipynb").write_text(json.dumps(DEATH_NOTEBOOK))
    (tmp_path / "profiles").mkdir(exist_ok=True)
    (tmp_path / "profiles" / "death.yaml").write_text(
        f"description: a server dies mid-study\ndeath:\n  server: {server}\n  points: {points}\n  kill_at: {kill_at}\n")
    state = TEST_ROOT / f"death-{uuid.uuid4().hex[:8]}"
    state.mkdir(parents=True)
    (state / "bin").symlink_to(state_dir() / "bin", target_is_directory=True)  # the installed Qdrant
    return {**os.environ, "PYTHONPATH": f"{tmp_path / 'pkg'}:{PROJECT_ROOT}",
            "PGLIMITS_WORKLOADS": "death=death_workload:WORKLOAD",
            "PGLIMITS_NOTEBOOKS_DIR": str(tmp_path / "notebooks"),
            "PGLIMITS_PROFILES_DIR": str(tmp_path / "profiles"),
            "PGLIMITS_DATA_DIR": str(tmp_path / "data"), "PGLIMITS_FIGURES_DIR": str(tmp_path / "figures"),
            "PGLIMITS_STATE_DIR": str(state), "PYTHONUNBUFFERED": "1"}


def run_all(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "run_all.py", "--profile", "death", "--only", "death", *extra],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=900)


def outcome(env: dict[str, str]) -> dict:
    return json.loads((Path(env["PGLIMITS_DATA_DIR"]) / "runs" / "death" / "death.outcome.json").read_text())


def complete_runs(env: dict[str, str]) -> list[str]:
    runs = Path(env["PGLIMITS_DATA_DIR"]) / "runs" / "death"
    return sorted(p.name for p in runs.iterdir() if p.is_dir() and
                  json.loads((p / "manifest.json").read_text()).get("status") == "complete")


def left_running(env: dict[str, str]) -> list[str]:
    state = env["PGLIMITS_STATE_DIR"]
    return [" ".join(p.info["cmdline"] or [])[:120] for p in psutil.process_iter(["cmdline", "status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE and state in " ".join(p.info["cmdline"] or [])]


@pytest.fixture
def cleanup_state():
    envs: list[dict[str, str]] = []
    yield envs
    for env in envs:
        shutil.rmtree(env["PGLIMITS_STATE_DIR"], ignore_errors=True)


@pytest.mark.parametrize("server", ["postgres", "redis", "qdrant", "opensearch"])
def test_a_server_killed_mid_study_is_recorded_restarted_and_the_study_goes_on(server, tmp_path, cleanup_state):
    env = study_env(tmp_path, server, kill_at=[1])
    cleanup_state.append(env)

    first = run_all(env)

    assert first.returncode == 1, first.stdout[-2000:] + first.stderr[-3000:]
    assert "90-report: complete" in first.stdout, first.stdout  # the report renders
    deaths = outcome(env)["deaths"]
    assert [(d["server"], d["how"], d["restarted"]) for d in deaths] == [(server, "SIGKILL", True)], deaths
    assert f"{server} died (SIGKILL)" in first.stderr, first.stderr[-2000:]
    # the killed point failed with the death as its reason; every point after the restart ran
    failing = [f for f in outcome(env)["failures"] if f["cause"] in ("environment", "error")]
    assert len(failing) == 1 and f"{server} died (SIGKILL)" in failing[0]["error"], failing
    assert len(complete_runs(env)) == 4
    assert left_running(env) == []

    measured_before = complete_runs(env)
    second = run_all({**env, "DEATH_KILLS": "off"}, "--resume")  # nobody kills it this time

    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-3000:]
    after = complete_runs(env)
    assert set(measured_before) < set(after) and len(after) == 5  # only the failed point measured again
    assert left_running(env) == []


def test_a_server_that_dies_twice_is_given_up_and_its_remaining_points_say_why(tmp_path, cleanup_state):
    env = study_env(tmp_path, "redis", kill_at=[1, 2], points=5)
    cleanup_state.append(env)

    result = run_all(env)

    assert result.returncode == 1
    failures = outcome(env)["failures"]
    not_run = [f for f in failures if f["error"].startswith("not run: ")]
    assert len(not_run) == 2 and all("redis died (SIGKILL)" in f["error"] and "again after a restart" in f["error"]
                                     for f in not_run), failures
    assert len(complete_runs(env)) == 1  # the point before the first death
    assert "redis: redis died (SIGKILL)" in result.stderr
    assert left_running(env) == []
