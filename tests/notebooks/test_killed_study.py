"""``run_all.py`` SIGKILLed (an OOM kill, a closed terminal, a CI timeout): no cleanup runs.

Killed three times — while its servers start, in the middle of the measured points, and while
the report runs — each time: ``pglimits servers status`` names what the killed run left
running, and the study never reads as complete. The next ``run_all.py --resume`` stops the
orphans first and reruns what was interrupted; after the last kill it ends with every notebook
complete and each planned point measured exactly once. Afterwards no process of the run is left.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from pglimits_core.config import PROJECT_ROOT, profiles_dir, state_dir
from pglimits_core.record.rundir import PARTIAL_SUFFIX, finished_runs
from pglimits_core.servers import ownership
from pglimits_core.studies.resume import point_identity
from tests.conftest import TEST_ROOT

KILL_WAIT_S = 900
# four runs, each waited for up to KILL_WAIT_S: on a busy 2-vCPU box together they take longer
# than the suite's default 600 s per test, and a busy box must not fail the test
pytestmark = [pytest.mark.integration, pytest.mark.notebook, pytest.mark.timeout(3 * KILL_WAIT_S)]
# the test profile's queue sweeps alone (three servers, six points, the report after it): every
# moment the test kills at, in a fraction of the whole profile's time
PROFILE = "killed"
RUN_ALL = [sys.executable, str(PROJECT_ROOT / "run_all.py"), "--profile", PROFILE]
PGLIMITS = [sys.executable, "-m", "pglimits_core"]


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    state = TEST_ROOT / f"killed-{uuid.uuid4().hex[:8]}"  # the Postgres OS user must reach it
    installed = state_dir() / "bin"  # where `make setup` put the downloaded binaries (Qdrant)
    monkeypatch.setenv("PGLIMITS_STATE_DIR", str(state))  # so `ownership` here sees the study's
    monkeypatch.delenv(ownership.OWNER_VAR, raising=False)
    # the downloaded server binaries live in the state dir: the study's shares the installed ones
    state.mkdir(parents=True, mode=0o700)
    (state / "bin").symlink_to(installed, target_is_directory=True)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    test_profile = yaml.safe_load((profiles_dir() / "test.yaml").read_text())
    one_workload = {key: test_profile[key] for key in ("description", "seed", "queue")}
    # the sweeps only: the drills (crash, backup, a consumer's kill) add a minute a run and no
    # moment this test kills at
    for drill in ("consumer_crash", "recovery", "backup", "steady"):
        one_workload["queue"].pop(drill, None)
    (profiles / f"{PROFILE}.yaml").write_text(yaml.safe_dump(one_workload))
    monkeypatch.setenv("PGLIMITS_PROFILES_DIR", str(profiles))  # planned_points below reads it too
    env = {**os.environ, "PGLIMITS_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    yield {"env": env, "state": state, "data": tmp_path / "data", "figures": tmp_path / "figures",
           "logs": tmp_path}
    ownership.stop_orphans(grace_s=5)  # never leave our own leftovers, whatever failed above
    for tracked in ownership.checkout_processes():
        os.kill(tracked.pid, signal.SIGKILL)


def of_run(pid: int) -> set[int]:
    """Live processes (servers, kernel, workers) that the run ``pid`` owns."""
    return {t.pid for t in ownership.checkout_processes() if ownership.owner_pid(t.owner) == pid}


def start(study: dict, name: str, *args: str) -> subprocess.Popen:
    log = (study["logs"] / f"{name}.log").open("w")
    return subprocess.Popen([*RUN_ALL, "--figures-dir", str(study["figures"]), *args], cwd=PROJECT_ROOT,
                            env=study["env"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def kill_when(study: dict, proc: subprocess.Popen, moment: Callable[[], bool], what: str) -> None:
    """SIGKILL ``run_all.py`` itself (not its group: nothing else gets a signal) at ``moment``."""
    # the queue section runs before the report: a minute or two on a busy 2-vCPU box
    deadline = time.monotonic() + KILL_WAIT_S
    while not moment():
        assert proc.poll() is None, f"run_all.py ended before {what}"
        assert time.monotonic() < deadline, f"never reached {what} in {KILL_WAIT_S} s"
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def status_of(study: dict) -> dict:
    try:
        return json.loads((study["data"] / "executed" / PROFILE / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def check_after_kill(study: dict, killed: subprocess.Popen, expect_orphans: bool) -> None:
    """What a person sees after the kill: the orphans named, nothing presented as complete."""
    left = of_run(killed.pid)
    assert left or not expect_orphans, "the kill left nothing running: the check would prove nothing"
    shown = subprocess.run([*PGLIMITS, "servers", "status"], env=study["env"], capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    named = {int(n) for n in re.findall(r"^\W*(\d+)\b", shown.stdout, flags=re.M)}
    still = left & of_run(killed.pid)  # alive before and after `servers status` looked
    assert still <= named, f"orphans {sorted(still - named)} not named by `servers status`:\n{shown.stdout}"
    entries = status_of(study).values()
    assert {e["status"] for e in entries} != {"complete"}
    running = [e for e in entries if e["status"] == "running"]
    assert all(not ownership.owner_alive(e["owner"]) for e in running), "a killed run's notebook has a live owner"


def test_a_study_killed_three_times_resumes_to_the_planned_points_and_leaves_nothing(study: dict):
    from pglimits_core.analysis.report import planned_points
    from pglimits_core.record.records import load_records

    runs = study["data"] / "runs" / PROFILE
    first = start(study, "first")
    kill_when(study, first, lambda: any(t.server for t in ownership.checkout_processes()), "its servers started")
    check_after_kill(study, first, expect_orphans=True)

    second = start(study, "second", "--resume")
    kill_when(study, second, lambda: len(finished_runs(runs)) >= 4, "four run records")
    check_after_kill(study, second, expect_orphans=True)
    assert not of_run(first.pid), "the second run did not stop the first one's orphans"

    third = start(study, "third", "--resume")
    kill_when(study, third, lambda: status_of(study).get("90-report", {}).get("status") == "running", "the report")
    check_after_kill(study, third, expect_orphans=False)  # the report kernel may already have exited

    last = subprocess.run([*RUN_ALL, "--figures-dir", str(study["figures"]), "--resume"], cwd=PROJECT_ROOT,
                          env=study["env"], capture_output=True, text=True, timeout=KILL_WAIT_S)
    assert last.returncode == 0, last.stdout[-3000:] + last.stderr[-3000:]
    assert {entry["status"] for entry in status_of(study).values()} == {"complete"}

    records = [r["manifest"] for r in load_records(None, runs)]  # every workload's
    complete = [m for m in records if m["status"] == "complete"]
    assert {(m["study"], m["params"]["variant"], m["params"]["experiment"]) for m in complete} == planned_points(PROFILE)
    identities = [point_identity(m["study"], m["system"], m["variant"], m["params"]) for m in complete]
    assert len(identities) == len(set(identities)), "a point was measured twice"
    assert all(not m["run_id"].endswith(PARTIAL_SUFFIX) for m in records)
    deadline = time.monotonic() + 30
    while (left := ownership.checkout_processes()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == [], f"processes of the study are still running: {left}"
