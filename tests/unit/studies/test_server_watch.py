"""The study's watch over its servers and the causes of failed points, on fake servers (the real
deaths are in tests/notebooks/test_server_death.py)."""

from __future__ import annotations

import errno
import signal
from pathlib import Path

from pglimits_core.studies.causes import (
    BY_DESIGN,
    ENVIRONMENT,
    ERROR,
    NotMeasured,
    cause_of,
    full_disk,
)
from pglimits_core.studies.watch import ServerWatch, how_it_ended


class FakeServer:
    """exit_status() as Popen.poll(): None while running, -9 after a SIGKILL."""

    def __init__(self, restart_fails: bool = False):
        self.returncode: int | None = None
        self.restart_fails = restart_fails
        self.starts = 0
        self.endpoint = "ep"

    def exit_status(self):
        return self.returncode

    def stop(self):
        pass

    def start(self):
        if self.restart_fails:
            raise RuntimeError("could not bind port")
        self.starts += 1
        self.returncode = None
        return self.endpoint


def a_watch(server: FakeServer, restarted: list | None = None) -> ServerWatch:
    seen = restarted if restarted is not None else []
    return ServerWatch({"qdrant": server}, lambda name, s: seen.append(name), [Path("/")])


def test_a_signal_and_an_exit_status_in_words():
    assert how_it_ended(-signal.SIGKILL) == "SIGKILL"
    assert how_it_ended(1) == "exit status 1"


def test_a_live_server_is_ready_and_nothing_is_recorded():
    watch = a_watch(FakeServer())
    assert watch.ready("qdrant") is None and watch.deaths == []


def test_a_death_is_recorded_once_and_the_server_restarted():
    server, restarted = FakeServer(), []
    watch = a_watch(server, restarted)
    server.returncode = -signal.SIGKILL
    reason = watch.explain("qdrant", ConnectionError("Socket closed"))
    assert reason.startswith("qdrant died (SIGKILL) at ") and reason.endswith("ConnectionError: Socket closed")
    assert watch.ready("qdrant") is None  # restarted
    assert server.starts == 1 and restarted == ["qdrant"]
    assert [(d.how, d.restarted) for d in watch.deaths] == [("SIGKILL", True)]


def test_a_second_death_gives_the_server_up_with_the_reason():
    server = FakeServer()
    watch = a_watch(server)
    server.returncode = -signal.SIGKILL
    assert watch.ready("qdrant") is None
    server.returncode = -signal.SIGKILL
    reason = watch.ready("qdrant")
    assert "qdrant died (SIGKILL)" in reason and "again after a restart" in reason
    assert watch.ready("qdrant") == reason  # every later point gets the same reason
    assert len(watch.deaths) == 2


def test_a_failed_restart_is_the_reason_for_every_later_point():
    server = FakeServer(restart_fails=True)
    watch = a_watch(server)
    server.returncode = -signal.SIGKILL
    reason = watch.ready("qdrant")
    assert "qdrant died (SIGKILL)" in reason and "restart failed: RuntimeError: could not bind port" in reason
    assert watch.deaths[0].restart_error == reason


def test_a_servers_own_exit_status_is_named():
    server = FakeServer()
    watch = a_watch(server)
    server.returncode = 1
    assert watch.what_happened("qdrant").startswith("qdrant died (exit status 1) at ")


def test_a_full_disk_is_named_with_its_path_and_free_space(tmp_path, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(60 << 20, 60 << 20, 0))
    assert full_disk([tmp_path]) == f"disk full under {tmp_path} (0 B free)"


def test_a_write_error_names_the_disk_even_with_some_space_left(tmp_path):
    error = OSError(errno.ENOSPC, "No space left on device")
    assert full_disk([tmp_path], error).startswith(f"disk full under {tmp_path} (")
    assert full_disk([tmp_path], ValueError("bad value")) is None


def test_causes():
    assert cause_of("qdrant died (SIGKILL) at 12:00:00 — x") == ENVIRONMENT
    assert cause_of("not run: disk full under /x (0 B free)") == ENVIRONMENT
    assert cause_of("server opensearch unavailable") == ENVIRONMENT
    assert cause_of("OperationalError: connection refused") == ENVIRONMENT
    assert cause_of("DiskFull: could not write to file \"pg_wal/x\"") == ENVIRONMENT
    assert cause_of("x", NotMeasured("answers disagree with the exact match set")) == BY_DESIGN
    assert cause_of("KeyError: 'rate'") == ERROR
