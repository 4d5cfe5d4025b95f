"""The `pglimits` command as a user runs it: real servers, real signals, nothing left behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pglimits_core.servers.fleet import read_state, stop_recorded
from tests.conftest import processes_using, server_processes

pytestmark = pytest.mark.integration
PGLIMITS = [sys.executable, "-m", "pglimits_core"]


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*PGLIMITS, *args], capture_output=True, text=True, timeout=timeout)


def test_unknown_server_is_one_line_and_exit_2(isolated_state: Path):
    result = run("servers", "up", "mysql")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "use one of" in result.stderr


def test_servers_up_then_ctrl_c_leaves_no_process(isolated_state: Path):
    proc = subprocess.Popen([*PGLIMITS, "servers", "up", "postgres", "redis"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while not read_state() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert {"postgres", "redis"} <= set(read_state()), proc.stdout
        pids = [pid for ep in read_state().values() for pid in ep.pids]
        started = server_processes(pids)
        assert len(started) >= 2
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:  # a failed assertion above: stop it the polite way, then sweep
            proc.terminate()
            proc.wait(timeout=60)
        stop_recorded()
    assert server_processes(pids) == [] and not any(p.is_running() for p in started)
    assert processes_using(isolated_state) == []
    assert read_state() == {}


def test_detached_status_down_and_refusing_a_second_up(isolated_state: Path):
    assert run("servers", "up", "--detach", "redis", "sqlite").returncode == 0
    pids = [pid for ep in read_state().values() for pid in ep.pids]
    try:
        status = run("servers", "status")
        assert "redis" in status.stdout and "yes" in status.stdout
        assert "7.0." in status.stdout  # the version the running redis-server reports
        second = run("servers", "up", "redis")
        assert second.returncode == 2 and "servers down" in second.stderr
    finally:
        assert run("servers", "down").returncode == 0
    assert pids and server_processes(pids) == []


def test_port_in_use_is_reported_and_nothing_started(isolated_state: Path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        result = run("servers", "up", "--port", f"redis={sock.getsockname()[1]}", "redis")
    assert result.returncode == 2 and "already in use" in result.stderr
    assert processes_using(isolated_state) == []
