"""One study at a time per state directory: a second study gets a one-line error naming the first
one's process, never clears its data directories; the lock goes with the process that held it."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.studies.study_lock import lock_path, one_study_at_a_time

HOLD = """
import sys, time
from pglimits_core.studies.study_lock import one_study_at_a_time
with one_study_at_a_time():
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
"""


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("PGLIMITS_STATE_DIR", str(tmp_path))
    return tmp_path


def test_a_second_study_on_the_same_state_directory_is_refused_with_the_first_ones_pid(state):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, "30"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with (pytest.raises(PGLimitsError, match=f"another study is running on .*pid {holder.pid}") as refused,
              one_study_at_a_time()):
            pass
        assert "PGLIMITS_STATE_DIR" in refused.value.fix
    finally:
        holder.kill()
        holder.wait()
    with one_study_at_a_time():  # killed: the kernel released its lock
        assert lock_path().read_text() != str(holder.pid)


def test_the_lock_is_reentrant_within_one_process_and_released_after(state):
    with one_study_at_a_time():
        with one_study_at_a_time():
            pass
        other = subprocess.run([sys.executable, "-c", HOLD, "0"], capture_output=True, text=True, timeout=60)
        assert other.returncode != 0 and "another study is running" in other.stderr
    started = time.monotonic()
    after = subprocess.run([sys.executable, "-c", HOLD, "0"], capture_output=True, text=True, timeout=60)
    assert after.returncode == 0 and after.stdout.strip() == "held" and time.monotonic() - started < 30
