"""A disk that fills in the middle of a study: the queue study's state directory (every server's
data) on a 60 MB filesystem this test mounts. The study finishes on its own, ``run_all.py`` exits
non-zero naming the full disk with its path and free space, the report still renders, nothing is
left running — and once there is room again, ``--resume`` measures only the points that failed.

Mounting a tmpfs needs root, which CI and these machines have; elsewhere the test says why it
cannot run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid

import psutil
import pytest

from pglimits_core.config import PROJECT_ROOT
from tests.conftest import TEST_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.notebook]


@pytest.fixture
def small_disk():
    if os.geteuid() != 0:
        pytest.fail("mounting the small filesystem needs root (CI runs as root): run this test as root")
    mount = TEST_ROOT / f"small-{uuid.uuid4().hex[:8]}"
    mount.mkdir(parents=True)
    # mode 0755: the Postgres OS user must traverse it to its data directory
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=60m,mode=0755", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)
    shutil.rmtree(mount, ignore_errors=True)


def run_all(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "run_all.py", "--profile", "test", "--only", "queue", *extra],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=1200)


def complete_runs(runs) -> set[str]:
    return {p.name for p in runs.iterdir() if p.is_dir() and (p / "manifest.json").exists()
            and json.loads((p / "manifest.json").read_text()).get("status") == "complete"}


def left_running(path) -> list[str]:
    return [" ".join(p.info["cmdline"] or [])[:120] for p in psutil.process_iter(["cmdline", "status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE and str(path) in " ".join(p.info["cmdline"] or [])]


def test_a_full_disk_is_named_the_run_fails_and_resume_measures_what_failed(small_disk, tmp_path):
    state = small_disk / "state"
    env = {**os.environ, "PGLIMITS_STATE_DIR": str(state), "PGLIMITS_DATA_DIR": str(tmp_path / "data"),
           "PGLIMITS_FIGURES_DIR": str(tmp_path / "figures"), "PYTHONUNBUFFERED": "1"}

    first = run_all(env)

    assert first.returncode == 1, first.stdout[-2000:] + first.stderr[-3000:]
    assert "90-report: complete" in first.stdout, first.stdout[-2000:]  # the report renders
    assert f"disk full under {small_disk}" in first.stderr, first.stderr[-3000:]
    outcome = json.loads((tmp_path / "data" / "runs" / "test" / "queue.outcome.json").read_text())
    failed = [f for f in outcome["failures"] if f["cause"] == "environment"]
    assert failed and any("disk full under" in f["error"] for f in failed), outcome["failures"]
    assert left_running(state) == []

    runs = tmp_path / "data" / "runs" / "test"
    measured_before = complete_runs(runs)
    subprocess.run(["mount", "-o", "remount,size=4g", str(small_disk)], check=True)  # room again
    second = run_all(env, "--resume")

    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-3000:]
    assert measured_before <= complete_runs(runs)  # nothing measured before is measured again
    assert left_running(state) == []
