"""A set of running servers that is always stopped: normal exit, exception, SIGINT, SIGTERM.

``Fleet`` is the only way the package starts servers for a study. ``servers up --detach``
records the fleet in ``.pglimits/fleet.json`` so ``servers status`` / ``servers down`` and
notebooks in other processes can find it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from pglimits_core.config import state_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.base import Endpoint, Server
from pglimits_core.servers.external import ExternalServer
from pglimits_core.servers.process import pid_alive, stop_process_group
from pglimits_core.servers.registry import server_class, validate_names


def state_file() -> Path:
    return state_dir() / "fleet.json"


class Fleet:
    """Start ``names`` (in order); ``external={name: url}`` attaches instead of starting.

    ``strict``: one server failing stops the others and raises; otherwise the failure is kept
    in ``unavailable`` (name -> reason) and the rest run — a study reports it, never skips it.
    """

    def __init__(self, names: list[str], external: dict[str, str] | None = None,
                 options: dict[str, dict[str, Any]] | None = None, strict: bool = True,
                 record_state: bool = False, data_root: Path | None = None):
        self.names = validate_names(list(dict.fromkeys([*names, *(external or {})])))
        self.external = dict(external or {})
        self.options = dict(options or {})
        self.strict = strict
        self.record_state = record_state
        self.data_root = data_root
        self.servers: dict[str, Server] = {}
        self.endpoints: dict[str, Endpoint] = {}
        self.unavailable: dict[str, str] = {}
        self._previous_handlers: dict = {}

    def make_server(self, name: str) -> Server:
        if name in self.external:
            return ExternalServer(name, self.external[name])
        data_dir = self.data_root / name if self.data_root else None
        return server_class(name)(data_dir=data_dir, **self.options.get(name, {}))

    def start(self) -> Fleet:
        self._install_sigterm_handler()
        atexit.register(self.stop)
        for name in self.names:
            self._start_one(name)
        if self.record_state:
            write_state(self.endpoints)
        return self

    def _start_one(self, name: str) -> None:
        server = self.make_server(name)
        try:
            self.endpoints[name] = server.start()
            self.servers[name] = server
        except PGLimitsError as exc:
            if self.strict:
                self.stop()
                raise
            self.unavailable[name] = str(exc)

    def describe(self) -> dict[str, dict[str, Any]]:
        return {name: server.describe() for name, server in self.servers.items()}

    def stop(self) -> None:
        """Stop every server this fleet started, last started first. Safe to call twice."""
        for name in reversed(list(self.servers)):
            with contextlib.suppress(Exception):
                self.servers.pop(name).stop()
        if self.record_state:
            clear_state()
        self._restore_sigterm_handler()
        atexit.unregister(self.stop)

    def __enter__(self) -> Fleet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # SIGTERM and SIGHUP normally kill Python without running finally blocks; turn them into
    # SystemExit so __exit__ runs and the servers are stopped. SIGINT is set explicitly because a
    # process started in the background of a script inherits it as ignored.
    def _install_sigterm_handler(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._previous_handlers = {
                signal.SIGTERM: signal.signal(signal.SIGTERM, _raise_system_exit),
                signal.SIGHUP: signal.signal(signal.SIGHUP, _raise_system_exit),
                signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
            }

    def _restore_sigterm_handler(self) -> None:
        if self._previous_handlers and threading.current_thread() is threading.main_thread():
            for signum, handler in self._previous_handlers.items():
                signal.signal(signum, handler)
            self._previous_handlers = {}

    def wait_while_running(self, poll_s: float = 1.0) -> None:
        """Block until a signal arrives or every started server has died."""
        while any(pid_alive(pid) for ep in self.endpoints.values() for pid in ep.pids) or \
                not any(ep.pids for ep in self.endpoints.values()):
            time.sleep(poll_s)


def _raise_system_exit(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


# --- the detached fleet's state file ----------------------------------------------------------
def write_state(endpoints: dict[str, Endpoint]) -> None:
    state = {name: ep.to_dict() for name, ep in endpoints.items()}
    path = state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"owner_pid": os.getpid(), "servers": state}, indent=2))
    os.replace(tmp, path)


def read_state() -> dict[str, Endpoint]:
    try:
        state = json.loads(state_file().read_text())
    except (OSError, ValueError):
        return {}
    return {name: Endpoint.from_dict(ep) for name, ep in state.get("servers", {}).items()}


def clear_state() -> None:
    with contextlib.suppress(FileNotFoundError):
        state_file().unlink()


def stop_recorded() -> list[str]:
    """Stop the servers recorded by a detached ``servers up``; returns the names stopped."""
    stopped = []
    for name, endpoint in read_state().items():
        for pid in endpoint.pids:
            if pid_alive(pid):
                stop_process_group(pid, grace_s=30, sig=endpoint.extra.get("stop_signal", signal.SIGTERM))
        stopped.append(name)
    clear_state()
    return stopped


def running_endpoints() -> dict[str, Endpoint]:
    """Recorded endpoints whose server answers now (for notebooks attaching to `servers up`)."""
    return {name: ep for name, ep in read_state().items() if _answers(name, ep)}


def _answers(name: str, endpoint: Endpoint) -> bool:
    if endpoint.pids and not all(pid_alive(pid) for pid in endpoint.pids):
        return False
    return bool(server_class(name).probe(endpoint.url))
