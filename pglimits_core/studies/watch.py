"""Servers that die while a study runs: noticed, recorded once, restarted once, or given up on.

Before each point the study asks the watch about the point's server. A server process that
exited although nobody stopped it (an OOM kill, a crash, a full disk) is recorded once — how it
ended (its signal or exit status), when, and the last lines of its log — then restarted on its
own data directory (the workload's ``after_restart`` step brings back state that died with it).
If the restart fails, or the server dies again, the remaining points of that server are not run,
each with the reason ("qdrant died (SIGKILL) at 12:03:41; restart failed: ..."), never with a
client library's exception text as the only explanation.

Crash drills kill servers on purpose and restart them themselves before their point returns, so
the watch sees them alive again; it only acts on deaths nobody planned.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pglimits_core.servers.process import tail
from pglimits_core.studies.causes import full_disk

RESTARTS_PER_SERVER = 1  # a server that dies twice in one study is not coming back by itself


@dataclass(frozen=True)
class Death:
    """One unplanned end of a server process."""

    server: str
    how: str  # "SIGKILL", "exit status 1"
    at: str  # local wall-clock time the watch noticed it, HH:MM:SS
    log_tail: str
    restarted: bool = False
    restart_error: str = ""

    def text(self) -> str:
        return f"{self.server} died ({self.how}) at {self.at}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def how_it_ended(returncode: int) -> str:
    """``Popen.returncode`` in words: a negative code is the signal that killed the process."""
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


class ServerWatch:
    """The study's eye on its servers (``servers``: name -> started ``Server``; attached and
    external servers are not ours to watch or restart)."""

    def __init__(self, servers: dict[str, Any], on_restart: Callable[[str, Any], None],
                 disk_paths: list[Path]):
        self.servers = servers
        self.on_restart = on_restart  # (name, server) -> None: new endpoint, workload's state
        self.disk_paths = disk_paths
        self.deaths: list[Death] = []
        self.given_up: dict[str, str] = {}  # server -> why its remaining points are not run
        self._restarts: dict[str, int] = {}

    def ready(self, name: str) -> str | None:
        """None when ``name`` can take the next point (restarting it if it died); otherwise why
        it cannot."""
        if name in self.given_up:
            return self.given_up[name]
        death = self._notice(name)
        if death is None:
            return None
        return self._restart(name, death)

    def unavailable(self, name: str, fleet: Any) -> str:
        """Why a planned server never came up: a full disk first, then its own start error."""
        why = getattr(fleet, "unavailable", {}).get(name, "")
        disk = full_disk(self.disk_paths)
        return "; ".join(part for part in (f"server {name} unavailable", disk, why.splitlines()[0] if why else "")
                         if part)

    def explain(self, name: str, exc: BaseException) -> str:
        """A failed point's reason: the server's death or the full disk first, then the error."""
        raw = f"{type(exc).__name__}: {exc}"
        known = self.what_happened(name, exc)
        return f"{known} — {raw}" if known else raw

    def what_happened(self, name: str, exc: BaseException | None = None) -> str | None:
        """The server's death (or that it was given up on) and a full disk, in words; None when
        neither happened, and the error speaks for itself."""
        death = self._notice(name)
        if death is None and name in self.given_up:
            return self.given_up[name]
        words = [part for part in (full_disk(self.disk_paths, exc), death.text() if death else None) if part]
        return "; ".join(words) or None

    def _notice(self, name: str) -> Death | None:
        """A death not yet recorded, recorded now (once per death)."""
        server = self.servers.get(name)
        returncode = server.exit_status() if server is not None else None
        if returncode is None:
            return None
        recorded = [d for d in self.deaths if d.server == name and not d.restarted and not d.restart_error]
        if recorded:
            return recorded[-1]
        log = getattr(server, "log_path", None)
        death = Death(name, how_it_ended(returncode), time.strftime("%H:%M:%S"), tail(log) if log else "")
        self.deaths.append(death)
        return death

    def _restart(self, name: str, death: Death) -> str | None:
        index = self.deaths.index(death)
        if self._restarts.get(name, 0) >= RESTARTS_PER_SERVER:
            self.given_up[name] = f"{death.text()} again after a restart; not restarted"
            self.deaths[index] = _replace(death, restart_error="not restarted: died before")
            return self.given_up[name]
        self._restarts[name] = self._restarts.get(name, 0) + 1
        server = self.servers[name]
        try:
            server.stop()  # what is left of it (children, its ownership record)
            server.start()
            self.on_restart(name, server)
        except Exception as exc:  # noqa: BLE001 — any failure to come back is the reason given
            disk = full_disk(self.disk_paths, exc)
            error = f"{disk}: " if disk else ""
            self.given_up[name] = f"{death.text()}; restart failed: {error}{type(exc).__name__}: {exc}"[:600]
            self.deaths[index] = _replace(death, restart_error=self.given_up[name])
            return self.given_up[name]
        self.deaths[index] = _replace(death, restarted=True)
        return None


def _replace(death: Death, **changes: Any) -> Death:
    return Death(**{**death.to_dict(), **changes})
