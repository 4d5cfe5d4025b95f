"""Which notebooks of a profile's study are complete: ``data/executed/<profile>/status.json``.

``run_all.py`` writes a notebook as ``running`` (with the owner of the run) *before* executing
it, and as ``complete`` or ``failed`` after. A notebook still ``running`` whose owner is gone was
interrupted (the run was killed with no chance to write anything): it reads as ``interrupted``,
``--resume`` reruns it, and nothing presents that profile as complete. A fresh run first marks
every notebook it will run as ``pending``, so records it moves aside can never stay described
by an earlier "complete".
"""

from __future__ import annotations

import json
from pathlib import Path

from pglimits_core.config import data_dir
from pglimits_core.errors import PGLimitsError

COMPLETE, RUNNING, PENDING, INTERRUPTED = "complete", "running", "pending", "interrupted"
# the notebook ran to its end, but points failed because the environment did (or an error):
# its records are a partial study; ``--resume`` measures exactly the failed points again
FAILED_POINTS = "failed points"


def executed_dir(profile: str) -> Path:
    return data_dir() / "executed" / profile


def status_path(profile: str) -> Path:
    return executed_dir(profile) / "status.json"


def read_status(profile: str) -> dict[str, dict]:
    """Every notebook's entry; ``running`` without a live owner reads as ``interrupted``."""
    from pglimits_core.servers.ownership import owner_alive

    try:
        status = json.loads(status_path(profile).read_text())
    except (OSError, ValueError):
        return {}
    for entry in status.values():
        if entry.get("status") == RUNNING and not owner_alive(entry.get("owner", "")):
            entry["status"] = INTERRUPTED
    return status


def write_status(profile: str, status: dict[str, dict]) -> None:
    path = status_path(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(status, indent=2))
    tmp.replace(path)


def set_status(profile: str, name: str, **entry) -> dict[str, dict]:
    """Write one notebook's entry (the others kept as read) and return the whole status."""
    status = read_status(profile)
    status[name] = entry
    write_status(profile, status)
    return status


def this_machine() -> str:
    from pglimits_core.samplers.host_facts import host_id

    return host_id()


def other_machine(status: dict[str, dict]) -> str | None:
    """The machine an earlier run's entries were written on, when it is not this one: resuming
    there would set one machine's records beside another's in one study, so it starts over."""
    here = this_machine()
    hosts = {entry["host"] for entry in status.values() if entry.get("host")}
    return next((host for host in sorted(hosts) if host != here), None)


def require_complete(profile: str) -> None:
    """Refuse to present a profile whose study did not finish: a one-line error naming the
    notebooks that are not complete and the command that finishes them. The notebook running
    this check (the report, run by a live ``run_all.py``) is not held against itself; a profile
    never run by ``run_all.py`` (notebooks executed by hand) has no status and is not refused."""
    # a notebook with failed points finished: the report renders and lists what is missing
    unfinished = {name: entry.get("status") for name, entry in read_status(profile).items()
                  if entry.get("status") not in (COMPLETE, RUNNING, FAILED_POINTS)}
    if unfinished:
        which = ", ".join(f"{name} is {state}" for name, state in unfinished.items())
        raise PGLimitsError(f"profile {profile} is not complete ({which}): its tables would describe "
                            "a partial study", f"finish it: python run_all.py --profile {profile} --resume")
