"""Where the servers and the load run: two CPU sets on one box, the two-host setup on one machine.

On a 2-core box a load generator that shares the cores with the server it measures takes CPU the
server would have used, and a result then describes the pair, not the server. ``split`` placement
gives every server process (and every child and thread it starts) one CPU set and every load
generator (the harness's worker processes, the systems' own C tools, the study process itself)
the other, so "the server's set was saturated" and "the load's set was saturated" are two
separate readings. ``shared`` is the old placement (everything on every core), kept as an option
so a few points can show what placement changes.

How it is enforced:

* servers: ``servers.process.spawn`` starts each server through ``taskset -c <server cpus>``,
  which sets the affinity and then execs the server (same pid), so every process and thread it
  ever starts inherits the set; servers someone else started (``make lab``'s detached fleet) are
  moved onto the set, every thread of every process, when a study attaches to them;
* load: ``placed()`` moves every thread of the study process onto the load set; the worker
  processes and tool commands it starts inherit it.

The server set travels in ``PGLIMITS_SERVER_CPUS`` (read by ``spawn`` in this process and by any
child that starts a server). Every run record carries ``describe()`` plus the affinity each
side's processes really had (``observed``), so a reader checks placement rather than trusts it.
SQLite is embedded: its engine runs inside the load's worker processes, on the load set.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pglimits_core.errors import PGLimitsError

SERVER_CPUS_ENV = "PGLIMITS_SERVER_CPUS"
ALLOWED_CPUS_ENV = "PGLIMITS_ALLOWED_CPUS"  # what the process was allowed before it was placed
SPLIT, SHARED = "split", "shared"


@dataclass(frozen=True)
class Placement:
    """``server_cpus`` and ``load_cpus`` are the CPU sets (disjoint under ``split``; both every
    allowed CPU under ``shared``)."""

    mode: Literal["split", "shared"]
    server_cpus: tuple[int, ...]
    load_cpus: tuple[int, ...]

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "server_cpus": list(self.server_cpus), "load_cpus": list(self.load_cpus),
                "client_and_server_share_cores": bool(set(self.server_cpus) & set(self.load_cpus))}


def allowed_cpus() -> tuple[int, ...]:
    """The CPUs this process may run on (a container or cgroup may allow fewer than exist): as
    it was before ``placed()`` pinned it to the load set, inside a placed block."""
    inside = os.environ.get(ALLOWED_CPUS_ENV, "").strip()
    return tuple(int(cpu) for cpu in inside.split(",")) if inside else tuple(sorted(os.sched_getaffinity(0)))


def resolve(mode: str = SPLIT, server_cpus: Iterable[int] | None = None,
            load_cpus: Iterable[int] | None = None, allowed: Iterable[int] | None = None) -> Placement:
    """A checked placement. ``split`` without sets: the first half of the allowed CPUs serve, the
    second half load (CPU 0 and CPU 1 on a 2-core box)."""
    allowed = tuple(sorted(allowed if allowed is not None else allowed_cpus()))
    if mode == SHARED:
        return Placement(SHARED, allowed, allowed)
    if mode != SPLIT:
        raise PGLimitsError(f"placement mode {mode!r} is not known", "use 'split' or 'shared'")
    if len(allowed) < 2 and (server_cpus is None or load_cpus is None):
        raise PGLimitsError(f"split placement needs 2 CPUs, this process may use {list(allowed)}",
                            "set placement: {mode: shared} in the profile")
    half = len(allowed) // 2
    server = tuple(sorted(server_cpus)) if server_cpus is not None else allowed[:half]
    load = tuple(sorted(load_cpus)) if load_cpus is not None else allowed[half:]
    _check_sets(server, load, allowed)
    return Placement(SPLIT, server, load)


def _check_sets(server: tuple[int, ...], load: tuple[int, ...], allowed: tuple[int, ...]) -> None:
    if not server or not load:
        raise PGLimitsError("split placement needs a server CPU set and a load CPU set",
                            "give both placement.server_cpus and placement.load_cpus, or neither")
    if set(server) & set(load):
        raise PGLimitsError(f"placement sets overlap: server {list(server)}, load {list(load)}",
                            "give disjoint sets, or use placement: {mode: shared}")
    outside = sorted((set(server) | set(load)) - set(allowed))
    if outside:
        raise PGLimitsError(f"placement names CPUs {outside} this process may not use (allowed {list(allowed)})",
                            "choose CPUs from the allowed set (nproc / taskset -p $$)")


def server_cpus_now() -> tuple[int, ...] | None:
    """The server set in force (None: no placement: servers run where the OS puts them)."""
    value = os.environ.get(SERVER_CPUS_ENV, "").strip()
    return tuple(int(cpu) for cpu in value.split(",")) if value else None


def cpu_list(cpus: Iterable[int]) -> str:
    return ",".join(str(cpu) for cpu in sorted(cpus))


def server_argv(argv: list[str]) -> list[str]:
    """``argv`` started on the server set: ``taskset`` sets the affinity and execs the server, so
    the pid is the server's and everything it starts inherits the set."""
    cpus = server_cpus_now()
    return argv if cpus is None else ["taskset", "-c", cpu_list(cpus), *argv]


def thread_ids(pid: int) -> list[int]:
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def pin_process(pid: int, cpus: Iterable[int]) -> None:
    """Every thread of ``pid`` onto ``cpus`` (``sched_setaffinity`` sets one thread at a time)."""
    for tid in thread_ids(pid) or [pid]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.sched_setaffinity(tid, set(cpus))


def pin_tree(root_pids: Iterable[int], cpus: Iterable[int]) -> None:
    """A running server onto ``cpus``: every thread of every process of its tree (children it
    forks later inherit the set from their parent)."""
    import psutil

    for root in root_pids:
        try:
            tree = [root, *(child.pid for child in psutil.Process(root).children(recursive=True))]
        except psutil.Error:
            continue
        for pid in tree:
            pin_process(pid, cpus)


def affinity(pid: int) -> list[int] | None:
    try:
        return sorted(os.sched_getaffinity(pid))
    except OSError:
        return None


def observed(server_pids: Iterable[int], load_pids: Iterable[int]) -> dict[str, Any]:
    """The CPU sets the processes of each side really run on (each distinct set, as lists): the
    evidence that placement held, read while they ran."""
    def sets(pids: Iterable[int]) -> list[list[int]]:
        found = {tuple(cpus) for pid in pids if (cpus := affinity(pid)) is not None}
        return [list(cpus) for cpus in sorted(found)]

    return {"server_affinity": sets(server_pids), "load_affinity": sets(load_pids)}


def held(placement: dict[str, Any], seen: dict[str, Any]) -> bool | None:
    """Whether every observed process ran inside its side's set (None: nothing observed)."""
    server_ok = [set(s) <= set(placement["server_cpus"]) for s in seen.get("server_affinity", [])]
    load_ok = [set(s) <= set(placement["load_cpus"]) for s in seen.get("load_affinity", [])]
    checks = server_ok + load_ok
    return all(checks) if checks else None


@contextlib.contextmanager
def placed(placement: Placement | None) -> Iterator[Placement | None]:
    """Inside: servers spawned here start on the server set; this process (every thread) and
    what it starts run on the load set. Affinity and environment are restored on exit, also on
    an error (a notebook kernel must not stay pinned)."""
    if placement is None:
        yield None
        return
    before_env = {name: os.environ.get(name) for name in (SERVER_CPUS_ENV, ALLOWED_CPUS_ENV)}
    before_cpus = tuple(sorted(os.sched_getaffinity(0)))
    os.environ[ALLOWED_CPUS_ENV] = cpu_list(allowed_cpus())
    os.environ[SERVER_CPUS_ENV] = cpu_list(placement.server_cpus)
    pin_process(os.getpid(), placement.load_cpus)
    try:
        yield placement
    finally:
        pin_process(os.getpid(), before_cpus)
        for name, value in before_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def in_force() -> Placement:
    """The placement this process is under now: the server set from the environment (none: the
    servers run on every CPU) and the load set this process may use."""
    here, server = tuple(sorted(os.sched_getaffinity(0))), server_cpus_now()
    if server is None:
        return Placement(SHARED, here, here)
    return Placement(SHARED if set(server) & set(here) else SPLIT, server, here)


def share_cores_now() -> bool:
    """Whether the servers and this process's load may run on a common CPU now."""
    placement = in_force()
    return bool(set(placement.server_cpus) & set(placement.load_cpus))


@contextlib.contextmanager
def repinned(server_roots: Iterable[int], placement: Placement) -> Iterator[Placement]:
    """A block under another placement with the servers already running: their process trees
    (every thread) and this process move onto the block's sets, and back afterwards (also on an
    error). What placement changes is then measured on the same servers, data and warm caches."""
    roots = list(server_roots)
    before, before_env = in_force(), os.environ.get(SERVER_CPUS_ENV)
    pin_tree(roots, placement.server_cpus)
    pin_process(os.getpid(), placement.load_cpus)
    os.environ[SERVER_CPUS_ENV] = cpu_list(placement.server_cpus)  # a server restarted inside follows
    try:
        yield placement
    finally:
        pin_tree(roots, before.server_cpus)
        pin_process(os.getpid(), before.load_cpus)
        if before_env is None:
            os.environ.pop(SERVER_CPUS_ENV, None)
        else:
            os.environ[SERVER_CPUS_ENV] = before_env
