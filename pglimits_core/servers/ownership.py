"""Every process the project starts can be found again, even after its parent was SIGKILLed.

A killed study (an OOM kill, a closed terminal, a CI timeout) runs no cleanup: its notebook
kernel, its servers and its load workers keep running, and their memory and CPU would sit inside
every later measurement. Each run has an *owner* (``run_all.py``, ``pglimits servers up``, a test
session, or a notebook kernel started by hand), named by ``pid:start`` where *start* is the
process's start time in clock ticks since boot (``/proc/<pid>/stat``; with the boot id). Unlike a
wall-clock start time it never moves with NTP, and a pid reused by a new process never matches
it, so a live owner is never taken for a dead one and no stranger is ever stopped.

Two ways to find what a run started, because servers rewrite their own environment (Redis and
Postgres children overwrite it with their process titles) while Python processes keep theirs:

- **servers**: ``spawn`` writes a record under ``<state dir>/procs/`` (pid, start, owner) as soon
  as the process exists, before anything uses it; a clean stop removes it;
- **clients** (a notebook kernel, its load workers): ``PGLIMITS_CHECKOUT`` (this checkout's state
  dir) and ``PGLIMITS_OWNER`` in the environment they were started with (``claim_ownership`` sets
  them before the kernel starts; forked workers inherit them).

An *orphan* is a process of this checkout whose owner is gone. ``stop_orphans`` SIGKILLs the
client side at once (nothing to save, and no client may hold a server up), then stops each
orphaned server's process group (SIGTERM: Postgres shuts down, Redis and Qdrant exit; SIGKILL for
what is left after a grace period). Load workers also die with their parent on their own
(``load.worker.die_with_parent``).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import psutil

CHECKOUT_VAR = "PGLIMITS_CHECKOUT"
OWNER_VAR = "PGLIMITS_OWNER"
STOP_GRACE_S = 15.0


# --- identity -----------------------------------------------------------------------------------
def checkout_id() -> str:
    from pglimits_core.config import state_dir

    return str(state_dir().resolve())


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        return "noboot"


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])  # fields after "(comm) ": state is field 3


def process_id(pid: int) -> str:
    """``boot:pid:start``: names one process for its whole life, never its pid's next owner."""
    return f"{boot_id()}:{pid}:{start_ticks(pid)}"


def owner_alive(owner: str) -> bool:
    parts = owner.split(":")
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    return process_id(int(parts[1])) == owner and not _zombie(int(parts[1]))


def owner_pid(owner: str) -> int | None:
    parts = owner.split(":")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def claim_ownership(take_over: bool = False) -> str:
    """Make this process the owner of what it starts, unless a live owner already is (a notebook
    kernel run by ``run_all.py`` belongs to ``run_all.py``); ``take_over``: own it anyway (the
    top of a run: ``run_all.py``, ``servers up``). Sets the variables in ``os.environ``, so every
    child inherits them; returns the owner id."""
    os.environ[CHECKOUT_VAR] = checkout_id()
    owner = os.environ.get(OWNER_VAR, "")
    if take_over or not owner_alive(owner):
        owner = os.environ[OWNER_VAR] = process_id(os.getpid())
    return owner


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with this checkout's and its owner's marks."""
    owner = claim_ownership()
    return {**(os.environ if env is None else env), CHECKOUT_VAR: checkout_id(), OWNER_VAR: owner}


# --- server records -----------------------------------------------------------------------------
def records_dir() -> Path:
    from pglimits_core.config import state_dir

    return state_dir() / "procs"


def record_server(pid: int, name: str, owner: str | None = None) -> None:
    """Write the record of a server process just started (atomically: complete or absent);
    its owner is this run's unless given."""
    path = records_dir()
    path.mkdir(parents=True, exist_ok=True)
    record = {"pid": pid, "id": process_id(pid), "name": name, "owner": owner or claim_ownership()}
    tmp = path / f".{pid}.tmp"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path / f"{pid}.json")


def forget_server(pid: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        (records_dir() / f"{pid}.json").unlink()


def recorded_servers() -> list[dict]:
    """Records whose process is still the one recorded; stale ones (gone, or a reused pid) are
    deleted on the way."""
    live = []
    for path in sorted(records_dir().glob("*.json")) if records_dir().is_dir() else []:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if owner_alive(record.get("id", "")):
            live.append(record)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return live


# --- orphans ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tracked:
    """A live process of this checkout: what it is, who owns it, whether it is a server."""

    pid: int
    name: str
    owner: str
    orphan: bool
    server: bool = False


def checkout_processes(checkout: str | None = None) -> list[Tracked]:
    """Every live process of this checkout: recorded servers, and processes carrying its marks
    (this process and its ancestors aside)."""
    checkout = checkout or checkout_id()
    servers = {r["pid"]: Tracked(r["pid"], r["name"], r["owner"], not owner_alive(r["owner"]), True)
               for r in recorded_servers()} if checkout == checkout_id() else {}
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    clients = []
    for process in psutil.process_iter(["pid", "name", "status"]):
        if process.pid in mine or process.pid in servers or process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        marks = _marks(process)
        if marks.get(CHECKOUT_VAR) == checkout:
            owner = marks.get(OWNER_VAR, "")
            clients.append(Tracked(process.pid, process.info["name"] or "?", owner, not owner_alive(owner)))
    return [*servers.values(), *clients]


def _marks(process: psutil.Process) -> dict[str, str]:
    try:
        environ = process.environ()
    except (psutil.Error, OSError):
        return {}  # gone, or another user's process we may not read (then we did not start it)
    return {key: environ[key] for key in (CHECKOUT_VAR, OWNER_VAR) if key in environ}


def orphans(checkout: str | None = None) -> list[Tracked]:
    """Processes of this checkout whose owner is gone — except servers handed over to the
    state file by ``servers up --detach`` (their owner exits on purpose; ``servers down`` ends them)."""
    handed_over = detached_pids()
    return [t for t in checkout_processes(checkout) if t.orphan and t.pid not in handed_over]


def detached_pids() -> set[int]:
    from pglimits_core.servers.fleet import read_state

    return {pid for endpoint in read_state().values() for pid in endpoint.pids}


def stop_orphans(checkout: str | None = None, grace_s: float = STOP_GRACE_S) -> list[Tracked]:
    """SIGKILL the client side of every orphan of this checkout, then stop each orphaned server's
    process group (SIGTERM, SIGKILL after ``grace_s``); returns what was found."""
    from pglimits_core.servers.process import stop_process_group

    found = orphans(checkout)
    clients = [p for p in (_process(t.pid) for t in found if not t.server) if p is not None]
    for process in clients:
        with contextlib.suppress(psutil.Error):  # already gone
            process.kill()
    psutil.wait_procs(clients, timeout=5)
    for server in (t for t in found if t.server):
        stop_process_group(server.pid, grace_s=grace_s)  # also forgets its record
    return found


def stop_owned(owner: str, grace_s: float = STOP_GRACE_S) -> list[Tracked]:
    """Stop what ``owner`` (a live process about to exit, e.g. an interrupted ``run_all.py``)
    still has running — its kernel may have been killed while it was stopping its servers —
    except servers handed over by ``servers up --detach``; returns what was found."""
    from pglimits_core.servers.process import stop_process_group

    handed_over = detached_pids()
    found = [t for t in checkout_processes() if t.owner == owner and t.pid not in handed_over]
    clients = [p for p in (_process(t.pid) for t in found if not t.server) if p is not None]
    for process in clients:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(clients, timeout=5)
    for server in (t for t in found if t.server):
        stop_process_group(server.pid, grace_s=grace_s)
    return found


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def summary(found: list[Tracked]) -> str:
    """One line for a person: how many orphans of which kinds were stopped."""
    names = sorted({t.name for t in found})
    return f"stopped {len(found)} orphaned process(es) of this checkout left by a killed run: {', '.join(names)}"


def main() -> None:
    """``python -m pglimits_core.servers.ownership``: stop this checkout's orphans (``make test``
    runs it first), saying so in one line when there were any."""
    found = stop_orphans()
    if found:
        print(summary(found), flush=True)


if __name__ == "__main__":
    main()
