"""Ctrl-C in the middle of ``run_all.py``: no server survives, no finished record is corrupt,
``--resume`` completes by reusing the points already measured (none measured twice), and a
second ``--resume`` skips what is done."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from pglimits_core.config import FIGURES_DIR, PROJECT_ROOT
from pglimits_core.record.rundir import finished_runs
from pglimits_core.studies.resume import point_identity
from tests.conftest import TEST_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.notebook]
RUN_ALL = [sys.executable, str(PROJECT_ROOT / "run_all.py"), "--profile", "test", "--only", "queue"]


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    state = TEST_ROOT / f"resume-{uuid.uuid4().hex[:8]}"  # the Postgres OS user must reach it
    yield {"data": tmp_path / "data", "state": state, "figures": tmp_path / "figures"}
    for proc in processes_using(state):  # only ever our own leftovers, found by their private dir
        proc.kill()
    shutil.rmtree(state, ignore_errors=True)


def processes_using(state: Path) -> list[psutil.Process]:
    """Live processes of this run: the state dir in their command line (Postgres), as their
    working directory (Redis renames its command line) or in their environment (run_all, the
    notebook kernel, load workers)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE or proc.pid == os.getpid():
            continue
        try:
            env_state = proc.environ().get("PGLIMITS_STATE_DIR", "")
        except (psutil.AccessDenied, psutil.NoSuchProcess):
            env_state = ""
        where = " ".join(proc.info["cmdline"] or []) + " " + (proc.info["cwd"] or "") + " " + env_state
        if str(state) in where:
            found.append(proc)
    return found


def environment(dirs: dict[str, Path]) -> dict[str, str]:
    return {**os.environ, "PGLIMITS_DATA_DIR": str(dirs["data"]), "PGLIMITS_STATE_DIR": str(dirs["state"]),
            "PYTHONUNBUFFERED": "1"}


def wait_for_records(runs: Path, proc: subprocess.Popen, count: int, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while len(finished_runs(runs)) < count:
        assert proc.poll() is None, "run_all.py ended before it wrote any run record"
        assert time.monotonic() < deadline, f"no {count} run records after {timeout_s}s"
        time.sleep(0.5)


def wait_no_servers(state: Path, timeout_s: float = 30) -> list:
    """Servers stop asynchronously after the interrupt; give them a bounded grace period."""
    deadline = time.monotonic() + timeout_s
    while (left := processes_using(state)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def command(dirs: dict[str, Path], *args: str) -> list[str]:
    return [*RUN_ALL, "--figures-dir", str(dirs["figures"]), *args]


def interrupt_midway(dirs: dict[str, Path], log: Path, group: bool = True) -> int:
    """Start run_all, Ctrl-C it (SIGINT to its process group, like a terminal) after 2 records."""
    with log.open("w") as out:
        proc = subprocess.Popen(command(dirs), cwd=PROJECT_ROOT, env=environment(dirs), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for_records(dirs["data"] / "runs" / "test", proc, count=2)
            # one Ctrl-C (to the terminal's process group), or one SIGINT to run_all alone
            os.killpg(proc.pid, signal.SIGINT) if group else os.kill(proc.pid, signal.SIGINT)
            return proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)


def run_all(dirs: dict[str, Path], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(command(dirs, *args), cwd=PROJECT_ROOT, env=environment(dirs), capture_output=True,
                          text=True, timeout=600)


def complete_records(runs: Path) -> list[tuple[Path, dict]]:
    records = [(p, json.loads((p / "manifest.json").read_text())) for p in finished_runs(runs)]
    return [(p, m) for p, m in records if m["status"] == "complete"]


def committed_figures() -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in FIGURES_DIR.rglob("*") if p.is_file()}


def test_interrupted_run_all_leaves_nothing_behind_and_resumes(dirs: dict[str, Path], tmp_path: Path):
    before = committed_figures()
    log = tmp_path / "interrupted.log"
    code = interrupt_midway(dirs, log)
    assert code != 0, log.read_text()[-3000:]
    assert wait_no_servers(dirs["state"]) == [], f"servers survived Ctrl-C\n{log.read_text()[-3000:]}"
    runs = dirs["data"] / "runs" / "test"
    validate = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate", str(runs)],
                              capture_output=True, text=True)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    measured_before = {p.name for p, _ in complete_records(runs)}
    assert measured_before, "the interrupt came before any complete record"

    resumed = run_all(dirs, "--resume")
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    status = json.loads((dirs["data"] / "executed" / "test" / "status.json").read_text())
    assert status["10-queue"]["status"] == "complete"
    assert processes_using(dirs["state"]) == []
    after = complete_records(runs)
    assert measured_before <= {p.name for p, _ in after}, "records measured before the interrupt were not kept"
    identities = [point_identity(m["study"], m["system"], m["variant"], m["params"]) for _, m in after]
    assert len(identities) == len(set(identities)), "a point was measured twice (resume re-measured it)"

    again = run_all(dirs, "--resume")
    assert again.returncode == 0 and "skipped" in again.stdout, again.stdout + again.stderr
    assert "running with profile" not in again.stdout
    assert committed_figures() == before, "a test run wrote into the committed figures/"


def test_one_sigint_to_run_all_alone_stops_the_study_and_its_servers(dirs: dict[str, Path], tmp_path: Path):
    """Not only a terminal's Ctrl-C (which reaches the kernel too): a SIGINT that reaches run_all
    alone once let the study run on to its end; run_all now stops its kernel itself."""
    log = tmp_path / "interrupted.log"
    code = interrupt_midway(dirs, log, group=False)
    assert code == 130, log.read_text()[-3000:]
    assert wait_no_servers(dirs["state"]) == [], f"servers survived the SIGINT\n{log.read_text()[-3000:]}"
