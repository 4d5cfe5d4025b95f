"""The contract every server obeys, whether the project starts it or the user points at it.

A ``Server`` is obtained (installed/located), started on 127.0.0.1 on a free port with its data
under ``.pglimits/``, checked, described for the run manifest, measured for storage, and stopped.
Studies only ever see the ``Endpoint`` that ``start()`` returns.
"""

from __future__ import annotations

import abc
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Endpoint:
    """How to reach a running server.

    ``url`` is what a client library takes (a libpq DSN, ``redis://``, ``http://`` or a file path
    for SQLite). ``pids`` are the server's OS processes (empty for external endpoints); samplers
    use them to separate server CPU from client CPU.
    """

    system: str
    url: str
    host: str = "127.0.0.1"
    port: int | None = None
    pids: tuple[int, ...] = ()
    external: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["pids"] = list(self.pids)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Endpoint:
        return cls(**{**data, "pids": tuple(data.get("pids", ()))})


class Server(abc.ABC):
    """Lifecycle of one real server. Subclasses fill in the five verbs; nothing else."""

    #: registry name, e.g. "postgres"
    name: str = ""
    #: cores the server can keep busy at most; None = every core of the box. The client-bound
    #: verdict judges server saturation against it (a single-threaded server is full at 1 core).
    cpu_ceiling_cores: int | None = None
    #: True when the engine runs inside the client processes (an embedded database): there is
    #: no server CPU to weigh against the client's, so no client-bound verdict is given.
    engine_in_client: bool = False
    #: which side of the study's question the server is on: "postgres" (what one Postgres can
    #: carry) or "dedicated" (the system one would add beside it); tables and verdicts read it here,
    #: never from a label's first word
    side: str = "dedicated"
    #: "module:Class" of the no-op operation the harness ceiling runs against it (``calibration``)
    noop_op: str | None = None
    #: what a crash drill SIGKILLs: "server" (its whole process tree) or, for an embedded engine,
    #: "producer" (the process holding the database is the engine)
    crash_kill_target: str = "server"
    #: regex of the log lines that say what a restart spent its time on (crash recovery, WAL
    #: replay), kept in a crash drill's record as the evidence behind its recovery time
    recovery_log_pattern: str | None = None

    def __init__(self, data_dir: Path | None = None, port: int | None = None, **options: Any):
        from pglimits_core.config import state_dir

        self.data_dir = (Path(data_dir) if data_dir else state_dir() / self.name).resolve()
        self.requested_port = port
        self.options = options
        self.endpoint: Endpoint | None = None

    @abc.abstractmethod
    def start(self) -> Endpoint:
        """Start (or attach to) the server and return once it answers queries."""

    @abc.abstractmethod
    def health(self) -> bool:
        """True when the server answers a trivial request right now."""

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """``{"version": str, "settings": {...}}`` — the effective settings that matter."""

    @abc.abstractmethod
    def storage_bytes(self) -> int:
        """Bytes the server's data occupies on disk (or reports, for external servers)."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the server and every process it started. Idempotent."""

    @classmethod
    def install(cls) -> None:
        """Obtain the server's binaries if they are not there yet (idempotent, pinned, verified)."""
        return None  # servers that come with the system (SQLite) or from apt need nothing here

    @classmethod
    def missing(cls) -> list[tuple[str, str]]:
        """What is missing to run this server: ``[(what, command that installs it)]``."""
        return []

    def smoke(self) -> str:
        """Run one real operation and say what it returned (for `pglimits smoke`)."""
        return "answers" if self.health() else "does not answer"

    def exit_status(self) -> int | None:
        """How the server's process ended, if it ended without ``stop()``; None while it runs.
        Servers with no process of ours (SQLite's file, an external URL) never end."""
        return None

    def pids(self) -> list[int]:
        """OS processes of this server that are alive now (for CPU sampling and leak checks)."""
        return list(self.endpoint.pids) if self.endpoint else []

    def pin_runtime_settings(self) -> dict[str, str]:
        """Make the next ``start()`` keep the settings a client changed at runtime (a variant's
        CONFIG SET), so a restart after a crash runs as the crashed server ran; returns them.
        Servers whose variants change nothing server-wide at runtime have nothing to pin."""
        return {}

    @classmethod
    def sampler(cls, endpoint: Endpoint, tables: list[str] | None = None) -> Any:
        """Its own per-second sampler beside the host sampler (None: the host's is all there is)."""
        return None

    @classmethod
    def before_crash_load(cls, url: str) -> dict[str, Any]:
        """Bring it to a known state before a crash drill's load (Postgres: CHECKPOINT); what was done."""
        return {}

    @classmethod
    def state_at_crash(cls, url: str) -> dict[str, Any]:
        """What the coming crash will cost it, read just before the kill (Postgres: WAL to replay)."""
        return {}

    def __enter__(self) -> Endpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
