"""Orphans are found (servers by their records, clients by their environment) and stopped;
nothing of a live run, another checkout or a stranger with a reused pid is touched."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pglimits_core.servers import ownership
from pglimits_core.servers.ownership import CHECKOUT_VAR, OWNER_VAR

SLEEP = """
import signal, sys, time
def terminated(*_):
    open(sys.argv[1], "w").write("SIGTERM")
    sys.exit(0)
signal.signal(signal.SIGTERM, terminated)
open(sys.argv[1] + ".ready", "w").close()
time.sleep(60)
"""


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private state dir: this checkout's records and marks are the test's own."""
    monkeypatch.setenv("PGLIMITS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv(OWNER_VAR, raising=False)
    return tmp_path


def dead_owner() -> str:
    """The id of a process that existed and is gone."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    owner = ownership.process_id(child.pid)
    child.wait()
    return owner


def sleeper(note: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", SLEEP, str(note)], env=env or dict(os.environ),
                               start_new_session=True)
    deadline = time.monotonic() + 30
    while not Path(f"{note}.ready").exists():  # its SIGTERM handler is in place
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.02)
    return process


def client(note: Path, checkout: str, owner: str) -> subprocess.Popen:
    return sleeper(note, {**os.environ, CHECKOUT_VAR: checkout, OWNER_VAR: owner})


def server(note: Path, owner: str) -> subprocess.Popen:
    """A process recorded as a server, whose environment (like Redis's) tells nothing."""
    process = sleeper(note, {"PATH": os.environ.get("PATH", "")})
    ownership.record_server(process.pid, "fake-server", owner=owner)
    return process


def test_orphans_of_this_checkout_are_stopped_and_nothing_else(state: Path):
    checkout, me, dead = ownership.checkout_id(), ownership.claim_ownership(), dead_owner()
    processes = {
        "orphan client": client(state / "client", checkout, dead),
        "orphan server": server(state / "server", dead),
        "live client": client(state / "live", checkout, me),
        "other checkout": client(state / "other", checkout + "-other", dead),
    }
    try:
        expected = {processes["orphan client"].pid, processes["orphan server"].pid}
        assert {t.pid for t in ownership.orphans()} == expected
        stopped = ownership.stop_orphans(grace_s=5)
        assert {t.pid for t in stopped} == expected
        assert {t.pid for t in stopped if t.server} == {processes["orphan server"].pid}
        assert not (state / "client").exists()  # the client side is SIGKILLed outright ...
        assert (state / "server").read_text() == "SIGTERM"  # ... a server is asked to shut down
        assert processes["live client"].poll() is None and processes["other checkout"].poll() is None
        assert ownership.orphans() == [] and ownership.recorded_servers() == []
    finally:
        for process in processes.values():
            process.kill()
            process.wait()


def test_a_record_whose_pid_now_belongs_to_a_stranger_is_dropped(state: Path):
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        ownership.record_server(stranger.pid, "postgres")
        record = ownership.records_dir() / f"{stranger.pid}.json"
        forged = record.read_text().replace(ownership.process_id(stranger.pid), f"x:{stranger.pid}:1")
        record.write_text(forged)  # as if the recorded process died and its pid was reused
        assert ownership.recorded_servers() == [] and not record.exists()
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_ownership_is_kept_by_a_live_owner_and_taken_over_when_asked(state: Path, monkeypatch: pytest.MonkeyPatch):
    me = ownership.process_id(os.getpid())
    monkeypatch.setenv(OWNER_VAR, dead_owner())
    assert ownership.claim_ownership() == me  # a dead owner is replaced
    parent = ownership.process_id(psutil.Process().ppid())
    monkeypatch.setenv(OWNER_VAR, parent)
    assert ownership.claim_ownership() == parent  # a live one is kept (a kernel run by run_all)
    assert ownership.claim_ownership(take_over=True) == me
    assert not ownership.owner_alive("") and not ownership.owner_alive("garbage")
    env = ownership.child_env({"PATH": "/bin"})
    assert env == {"PATH": "/bin", CHECKOUT_VAR: ownership.checkout_id(), OWNER_VAR: me}
