"""One study at a time per state directory.

A study that starts its own servers clears ``<state dir>/study`` first (it never inherits queue
tables or dead tuples) and starts them there. A second study on the same state directory would
clear the first one's data directories under its running servers and start servers of its own on
them: the first study's records would then come from a server whose files were deleted. So
starting a study's servers takes an exclusive lock on the state directory, held until they stop;
a second study gets a one-line error naming the first one's process and the fix (wait, or give it
its own ``PGLIMITS_STATE_DIR``). The lock is the kernel's (``flock``): it goes with the process
that held it, so a killed study leaves nothing to clean up.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from pglimits_core.config import state_dir
from pglimits_core.errors import PGLimitsError

#: this process's depth of held study locks, by lock path (a study may open servers twice, nested)
_HELD: dict[Path, int] = {}


def lock_path() -> Path:
    return state_dir() / "locks" / "study.lock"


@contextlib.contextmanager
def one_study_at_a_time() -> Iterator[None]:
    """Hold the state directory's study lock (re-entrant within this process)."""
    path = lock_path()
    if _HELD.get(path):
        _HELD[path] += 1
        try:
            yield
        finally:
            _HELD[path] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "unknown"
            raise PGLimitsError(f"another study is running on {state_dir()} (pid {holder}): starting servers "
                                "here would delete its data directories under its running servers",
                                "wait for it to finish, or give this one its own state directory: "
                                "PGLIMITS_STATE_DIR=/some/other/dir") from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        _HELD[path] = 1
        try:
            yield
        finally:
            _HELD.pop(path, None)
            fcntl.flock(lock, fcntl.LOCK_UN)
