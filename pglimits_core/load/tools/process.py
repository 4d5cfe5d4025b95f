"""Running a load tool's commands one after another, with their pids visible to the samplers.

``ToolProcess.pids()`` is the client side of the run while a command runs: the tool's process
and its children (pgbench and redis-benchmark use threads, but a tool that forks is counted
too). A command that outlives its timeout is killed (it is our own child) and its output kept.
"""

from __future__ import annotations

import abc
import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pglimits_core.errors import PGLimitsError


@dataclass(frozen=True)
class ToolCommand:
    """One invocation: ``step`` names it in the record, ``argv`` is exactly what runs. ``env``
    is added to the environment and never recorded (a password goes there, not in argv)."""

    step: str
    argv: list[str]
    timeout_s: float
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolOutput:
    command: ToolCommand
    returncode: int | None  # None: killed at its timeout
    stdout: str
    stderr: str
    started_epoch_s: float
    elapsed_s: float

    def failure(self) -> str | None:
        """Why the command failed (its last stderr/stdout lines), or None when it exited 0."""
        if self.returncode == 0:
            return None
        tail = (self.stderr.strip() or self.stdout.strip())[-300:]
        how = "timed out" if self.returncode is None else f"exited {self.returncode}"
        return f"{self.command.argv[0].rsplit('/', 1)[-1]} {how}: {tail}"


class ToolProcess:
    """Runs commands in ``cwd``; thread-safe ``pids()`` for the host sampler's client side."""

    def __init__(self, cwd: Path):
        self.cwd = Path(cwd)
        self._lock = threading.Lock()
        self._running: subprocess.Popen | None = None

    def pids(self) -> list[int]:
        with self._lock:
            running = self._running
        if running is None or running.poll() is not None:
            return []
        return [running.pid, *_children(running.pid)]

    def run(self, command: ToolCommand) -> ToolOutput:
        started, clock = time.time(), time.monotonic()
        proc = subprocess.Popen(command.argv, cwd=self.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, **command.env})
        with self._lock:
            self._running = proc
        try:
            stdout, stderr = proc.communicate(timeout=command.timeout_s)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            code = None
        finally:
            with self._lock:
                self._running = None
        return ToolOutput(command, code, stdout, stderr, started, time.monotonic() - clock)


def _children(pid: int) -> list[int]:
    import psutil

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


#: how much earlier than a tool's own end its exact CPU window closes: the tool's clock starts a few
#: ms after the command does, and a closing read that finds the tool gone cannot count its CPU
TOOL_END_MARGIN_S = 0.25


def end_margin(duration_s: float) -> float:
    """The margin for a measured phase of ``duration_s`` (a tenth of a short one)."""
    return min(TOOL_END_MARGIN_S, duration_s / 10)


def require_binary(name: str, path: str | None, fix: str) -> str:
    """``path`` if it is an executable file, else a one-line error naming where it was looked for."""
    if not path or not os.access(path, os.X_OK) or not Path(path).is_file():
        raise PGLimitsError(f"{name} not found at {path or 'PATH'}", fix)
    return path


def tool_version(binary: str, flag: str = "--version") -> str:
    """The tool's version (``16.2`` from "pgbench (PostgreSQL) 16.2"), or its first line."""
    out = subprocess.run([binary, flag], capture_output=True, text=True, timeout=30)
    text = (out.stdout or out.stderr).strip()
    match = re.search(r"(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else text.splitlines()[0] if text else "unknown"


class ToolLoad(abc.ABC):
    """One tool point's load: its commands, how to read their output, what the record says."""

    tool: str = ""
    #: cores the tool's client can keep busy (its threads): the client-bound verdict's ceiling
    client_cores: int = 1

    def __init__(self, binary: str):
        self.binary = binary
        self.version = tool_version(binary)

    @abc.abstractmethod
    def commands(self) -> list[ToolCommand]: ...

    @abc.abstractmethod
    def run(self, process: ToolProcess) -> Any:
        """Run every command; the merged ``record.results.RunResult``."""

    def measured_offsets(self) -> tuple[float, float] | None:
        """The measured window as seconds after the first command starts, when the tool runs one
        window (the exact CPU counters are read at its bounds); None for a tool that runs several
        commands in a row (each its own phase)."""
        return None

    def describe(self) -> dict[str, Any]:
        """What the run record says: tool, version, every command line exactly as run."""
        return {"tool": self.tool, "tool_version": self.version,
                "tool_commands": [{"step": c.step, "argv": list(c.argv)} for c in self.commands()]}
