"""Process plumbing shared by every server the project starts itself.

Every server runs in its own process group (``start_new_session``) so that stopping it kills
its children too, and so that a Ctrl-C aimed at the terminal's foreground group does not reach
it before the fleet has a chance to stop it in order. ``ProcessServer`` is the one ``stop()``
every such server uses; each says only which signal asks it to shut down and how long it gets.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil

from pglimits_core.errors import PGLimitsError
from pglimits_core.placement import server_argv
from pglimits_core.servers.base import Server
from pglimits_core.servers.ownership import child_env, forget_server, record_server

LOCALHOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (chosen by the kernel)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOCALHOST, 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOCALHOST, port))
        except OSError:
            return False
        return True


def choose_port(requested: int | None, system: str) -> int:
    """The requested port if it is free (error naming the fix if not), else a free one."""
    if requested is None:
        return free_port()
    if not 1 <= requested <= 65535:
        raise PGLimitsError(f"{system}: port {requested} is out of range", "use 1-65535 or omit --port")
    if not port_is_free(requested):
        raise PGLimitsError(
            f"{system}: port {requested} on {LOCALHOST} is already in use",
            "stop what listens there (ss -ltnp) or omit the port to pick a free one",
        )
    return requested


def tail(path: Path, lines: int = 12) -> str:
    """The last lines of a log file, for error messages ('' if there is no log)."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def spawn(argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None,
          cwd: Path | None = None, user: str | None = None) -> subprocess.Popen:
    """Start a server process in its own session, stdout+stderr appended to ``log_path``.

    ``user`` runs it as that OS user (needs root), exec'd directly so the pid is the server's.
    Under a split placement it starts on the server CPU set (``placement.server_argv``).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            server_argv(list(argv)), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=child_env(env), cwd=cwd, start_new_session=True, user=user,
        )
    # recorded before anything uses it, so it is found even if its parent is killed
    record_server(process.pid, Path(argv[0]).name)
    return process


def wait_until(ready: Callable[[], bool], timeout_s: float, what: str, log_path: Path | None = None,
               alive: Callable[[], bool] | None = None, poll_s: float = 0.1) -> None:
    """Poll ``ready`` until true; raise with the log tail if the process died or time ran out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return
        if alive is not None and not alive():
            raise PGLimitsError(f"{what} exited during start-up; last log lines:\n{_tail_of(log_path)}",
                                f"read the full log at {log_path}")
        time.sleep(poll_s)
    raise PGLimitsError(f"{what} did not become ready within {timeout_s:.0f}s; last log lines:\n"
                        f"{_tail_of(log_path)}", f"read the full log at {log_path}")


def _tail_of(log_path: Path | None) -> str:
    return tail(log_path) if log_path else "(no log)"


def process_tree(pid: int) -> list[psutil.Process]:
    """The process and all its descendants that are alive now."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def stop_process_group(pid: int, grace_s: float = 10.0, sig: int = signal.SIGTERM) -> None:
    """Signal a server's process group, wait up to ``grace_s``, then SIGKILL what is left."""
    procs = process_tree(pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(os.getpgid(pid), sig)
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(alive, timeout=5)
    forget_server(pid)


def pid_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` with mode 0700 (server data is nobody else's business).

    An existing directory only loses access for *others*: its group bits are left alone,
    because on a directory with an ACL they are the ACL mask, and resetting the mask would
    revoke the traverse-only grant the Postgres OS user relies on (pg_install.grant_traverse).
    """
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        mode = path.stat().st_mode
        if mode & 0o007:
            path.chmod(mode & 0o7770)
    except OSError as exc:
        raise PGLimitsError(f"cannot create data directory {path}: {exc.strerror}",
                            "point PGLIMITS_STATE_DIR at a writable directory") from exc
    if not os.access(path, os.W_OK):
        raise PGLimitsError(f"data directory {path} is not writable",
                            "fix its permissions or set PGLIMITS_STATE_DIR")
    return path


class ProcessServer(Server):
    """A server that runs as an OS process the project spawned (``self._process``).

    Subclasses ``spawn`` it in ``start()`` and name how it likes to be stopped: the signal that
    asks it for a clean shutdown and the seconds it gets before SIGKILL (the ``stop_grace_s``
    option overrides those). Everything else about stopping is the same for every server.
    """

    #: the signal that asks the server to shut down cleanly
    stop_signal: int = signal.SIGTERM
    #: seconds between that signal and SIGKILL for whatever is left of its process group
    stop_grace_s: float = 10.0

    def __init__(self, data_dir: Path | None = None, port: int | None = None, **options: Any):
        super().__init__(data_dir, port, **options)
        self._process: subprocess.Popen | None = None

    def _wait_ready(self, timeout_s: float, what: str, log_path: Path, poll_s: float = 0.1) -> None:
        """Wait until ``health()`` answers; if it never does (or on Ctrl-C) stop what was spawned."""
        try:
            wait_until(self.health, timeout_s, what, log_path, alive=self._running, poll_s=poll_s)
        except BaseException:
            self.stop()
            raise

    def _running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def exit_status(self) -> int | None:
        """How the server process ended when it ended on its own (``Popen.returncode``: negative
        = the signal that killed it); None while it runs, or after ``stop()``."""
        return self._process.poll() if self._process is not None else None

    def stop(self) -> None:
        """Signal the process group, SIGKILL what outlives the grace time, reap. Idempotent."""
        process, self._process = self._process, None
        self.endpoint = None
        if process is None:
            return
        if process.poll() is None:
            grace_s = float(self.options.get("stop_grace_s", self.stop_grace_s))
            stop_process_group(process.pid, grace_s=grace_s, sig=self.stop_signal)  # forgets its record
        else:
            # it died on its own (a crash, a kill, a failed start) and poll() reaped it: its pid
            # may already be another process's, so that pid is not signalled. Its children may
            # outlive it (Postgres backends hold the shared memory a restart needs): they are still
            # in its process group, whose id no new process can take while the group has members.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            forget_server(process.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)  # reap it, so no zombie outlives the fleet
