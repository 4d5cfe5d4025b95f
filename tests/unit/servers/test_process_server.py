"""One ``ProcessServer.stop()`` for every server the project spawns: the server's own signal, its
grace time, then SIGKILL; the ownership record goes; a process that died on its own is only
reaped and forgotten, never signalled (its pid may be someone else's by then)."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from pglimits_core.servers import ownership
from pglimits_core.servers.base import Endpoint
from pglimits_core.servers.ownership import OWNER_VAR
from pglimits_core.servers.process import ProcessServer, spawn

#: writes the name of the signal it got to argv[1]; ignores it when argv[2] == "stubborn"
SERVER = """
import signal, sys, time
def got(signum, _):
    open(sys.argv[1], "w").write(signal.Signals(signum).name)
    if sys.argv[2] != "stubborn":
        sys.exit(0)
signal.signal(signal.SIGINT, got)
signal.signal(signal.SIGTERM, got)
open(sys.argv[1] + ".ready", "w").close()
time.sleep(60)
"""


class FakeServer(ProcessServer):
    name = "fake"
    stop_signal = signal.SIGINT
    stop_grace_s = 0.5

    def __init__(self, note: Path, mood: str = "polite", **options: Any):
        super().__init__(note.parent / "data", None, **options)
        self.note, self.mood = note, mood

    def start(self) -> Endpoint:
        self._process = spawn([sys.executable, "-c", SERVER, str(self.note), self.mood],
                              self.note.parent / "fake.log")
        deadline = time.monotonic() + 30
        while not Path(f"{self.note}.ready").exists():  # its handlers are in place
            assert time.monotonic() < deadline and self._process.poll() is None
            time.sleep(0.02)
        self.endpoint = Endpoint(self.name, "fake://", pids=(self._process.pid,))
        return self.endpoint

    def health(self) -> bool:
        return self._running()

    def describe(self) -> dict[str, Any]:
        return {}

    def storage_bytes(self) -> int:
        return 0


@pytest.fixture
def note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PGLIMITS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv(OWNER_VAR, raising=False)
    return tmp_path / "signal"


def has_record(pid: int) -> bool:
    """Its record file is there (``recorded_servers()`` would sweep a stale one on its own)."""
    return (ownership.records_dir() / f"{pid}.json").exists()


def test_stop_sends_the_servers_own_signal_and_forgets_its_record(note: Path):
    server = FakeServer(note)
    pid = server.start().pids[0]
    assert has_record(pid)
    server.stop()
    assert note.read_text() == "SIGINT"
    assert not psutil.pid_exists(pid)  # stopped and reaped: no zombie either
    assert not has_record(pid) and server.endpoint is None
    server.stop()  # idempotent


def test_what_ignores_the_signal_is_killed_after_the_grace_time(note: Path):
    server = FakeServer(note, mood="stubborn")
    pid = server.start().pids[0]
    started = time.monotonic()
    server.stop()
    assert note.read_text() == "SIGINT" and not psutil.pid_exists(pid)
    assert 0.5 <= time.monotonic() - started < 10


def test_the_grace_time_option_overrides_the_class_default(note: Path):
    server = FakeServer(note, mood="stubborn", stop_grace_s=2)
    server.start()
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started >= 2


def test_a_server_that_died_on_its_own_is_reaped_and_forgotten_not_signalled(note: Path):
    server = FakeServer(note)
    process = psutil.Process(server.start().pids[0])
    process.kill()
    psutil.wait_procs([process], timeout=10)  # reaped, as a crash drill's kill leaves it
    assert has_record(process.pid)
    server.stop()
    assert not note.exists()  # no signal reached a handler
    assert not has_record(process.pid) and server.endpoint is None
