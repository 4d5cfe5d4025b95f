"""A load worker dies with its parent: a SIGKILLed study never leaves one holding a connection."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil

PARENT = """
from pglimits_core.load import ClosedLoop, Phase, Role, RunSpec, run_load

class Sleep:
    name = "sleep"
    def open(self): pass
    def __call__(self):
        import time; time.sleep(0.05)
    def close(self): pass

if __name__ == "__main__":
    run_load(RunSpec(phases=[Phase("measure", 60)], roles=[Role("r", Sleep(), workers=2, loop=ClosedLoop())],
                     seed=1, start_method="fork"))
"""


def test_workers_die_when_their_parent_is_sigkilled():
    parent = subprocess.Popen([sys.executable, "-c", PARENT])
    try:
        deadline = time.monotonic() + 30
        while len(workers := psutil.Process(parent.pid).children()) < 2:
            assert time.monotonic() < deadline and parent.poll() is None, "the workers never started"
            time.sleep(0.1)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        _, alive = psutil.wait_procs(workers, timeout=10)
        assert alive == [], f"workers outlived their parent: {[p.pid for p in alive]}"
    finally:
        if parent.poll() is None:
            parent.kill()
