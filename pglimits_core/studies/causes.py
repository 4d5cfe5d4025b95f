"""Why a point could not be measured, in words a user can act on — and whether that fails the run.

Three kinds of cause:

- ``environment``: the machine or a server failed the study (a server died, a disk filled, a
  connection was refused, a server never came up). The study still finishes its other points,
  but ``run_all.py`` exits non-zero: these records are not the study the profile asked for.
- ``by_design``: the study itself declined the point (a system without the feature, a variant
  whose answers failed the study's own correctness check). Listed, never a failed run.
- ``error``: anything else (a bug, a bad parameter). Also a failed run.

A full disk is named as such, with the path and its free space, before the raw error: a client
library's "connection refused" after Postgres stopped on a full WAL disk explains nothing.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from pglimits_core.errors import PGLimitsError

ENVIRONMENT, BY_DESIGN, ERROR = "environment", "by_design", "error"
FAILING_CAUSES = (ENVIRONMENT, ERROR)

# What the servers and client libraries say when a write found no space (Postgres DiskFull,
# SQLite "database or disk is full", OSError ENOSPC, Java's IOException, Qdrant's Rust io::Error)
DISK_FULL_WORDS = ("no space left on device", "disk full", "diskfull", "database or disk is full",
                   "could not extend file", "could not write to file")
CONNECTION_WORDS = ("connection refused", "server closed the connection", "connection reset",
                    "statuscode.unavailable", "socket closed", "connection aborted", "broken pipe",
                    "connectionerror", "remote end closed connection", "terminating connection")
LOW_FREE_BYTES = 16 << 20  # under 16 MiB free, a failed write is most likely the full disk


class NotMeasured(PGLimitsError):
    """A point the study declines on purpose: the system lacks the feature, or its answers
    failed the study's own validity check. Listed with its reason; never fails the run."""


def free_bytes(path: Path) -> int | None:
    """Free bytes on the filesystem holding ``path`` (its nearest existing ancestor)."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def looks_like_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(word in text for word in DISK_FULL_WORDS)


def full_disk(paths: list[Path], exc: BaseException | None = None) -> str | None:
    """"disk full under PATH (12 kB free)" when a write error says so or a watched path's
    filesystem has (almost) nothing left; None otherwise."""
    readings = [(path, free) for path in paths if (free := free_bytes(path)) is not None]
    low = [(path, free) for path, free in readings if free < LOW_FREE_BYTES]
    if low:
        path, free = min(low, key=lambda reading: reading[1])
    elif exc is not None and looks_like_disk_full(exc) and readings:
        path, free = min(readings, key=lambda reading: reading[1])
    else:
        return None
    return f"disk full under {path} ({human_bytes(free)} free)"


def human_bytes(count: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:,.0f} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count /= 1024
    return f"{count} B"


def cause_of(reason: str, exc: BaseException | None = None) -> str:
    """The cause class of a failure, from the exception when there is one, else its words."""
    if isinstance(exc, NotMeasured):
        return BY_DESIGN
    text = reason.lower()
    if any(word in text for word in ("died (", "disk full under", " unavailable", "could not start")):
        return ENVIRONMENT
    if any(word in text for word in (*CONNECTION_WORDS, *DISK_FULL_WORDS)):
        return ENVIRONMENT
    return ERROR
