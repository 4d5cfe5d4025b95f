"""Which side set the limit of a point: the server's CPU set, the load's CPU set, or neither.

Read from a window's exact CPU figures (``exact_cpu.window_figures``) and the placement:

- ``server`` — the server's set was saturated (busy ≥ ``SATURATED`` of it, and the server's own
  processes used most of that), or the server used ≥ ``SATURATED`` of what it can use at all (a
  single-threaded server, Redis, is full at one core even on a larger set). The figure is a
  ceiling: the server could not have done more on this set.
- ``load`` — the load's set was saturated by the load (the harness's workers, a C tool, the study
  process): the load could not offer more, so the figure is a floor (≥ x), never the server's
  ceiling — also when the server's set was saturated as well (both sides out of CPU).
- ``neither`` — both sets had idle CPU: the offered rate, a latency target, locks or the disk set
  the figure (an open-loop point below capacity is such a point).
- None — it cannot be told: the placement shares the cores between the sides (then the old
  per-second classification is all there is), the window was not read, or a saturated set was
  busy with someone else's work (a neighbour on a shared machine: the sets pin our processes,
  not theirs).

An engine inside the load's processes (SQLite) has no server set: engine and harness share the
load set and their CPU cannot be told apart, so a saturated load set is a floor (``load``: the
harness took part of the core), idle CPU ``neither`` (``embedded_side``).

``SATURATED`` is 0.85: on a pinned core, Postgres at its ceiling under pgbench kept its core
85-90 % busy (the rest is wake-up gaps between round trips), so a stricter bar would call a
saturated server idle.
"""

from __future__ import annotations

from typing import Any

SATURATED = 0.85
#: the reason records written before ``embedded_side`` carry for an embedded engine's window
#: (their exact figures are there: the analysis reads the side from them, ``side_of_record``)
EMBEDDED_NOT_READ = "not applicable: the engine runs inside the load's processes (on the load set)"
#: the server's own processes must account for at least this share of its set's busy time before
#: a saturated set is called the server's limit (otherwise something else ran there)
OWN_SHARE = 0.7
#: an embedded engine in a compiled program is read as the engine's limit only when that program
#: alone kept its set this busy (the study process, idle during a tool's window, must stay out)
COMPILED_OWN_SHARE = 0.9


def limit_side(exact: dict[str, Any], placement: dict[str, Any], server_ceiling_cores: int | None = None,
               engine_in_client: bool = False, compiled_load: bool = False) -> dict[str, Any]:
    """``{"side": "server" | "load" | "neither" | None, "reason": ...}`` for one window
    (``compiled_load``: the load is a compiled tool, not the Python harness)."""
    if placement.get("client_and_server_share_cores", True):
        return _side(None, "cannot tell from the sets: the placement shares the cores between server and load")
    if exact.get("error") or exact.get("server_set_busy") is None or exact.get("load_set_busy") is None:
        return _side(None, f"cannot tell: {exact.get('error') or 'the window CPU was not read'}")
    if engine_in_client:
        return embedded_side(exact, compiled_load)
    return _split_side(exact, server_ceiling_cores)


def embedded_side(exact: dict[str, Any], compiled_load: bool = False) -> dict[str, Any]:
    """An engine that runs inside the load's processes (SQLite): engine and harness share the load
    set, and their CPU cannot be told apart. Saturated by them: a floor (``load``) — the harness's
    own work (Python, per operation) took part of the core the engine would have had, so the
    figure is at least what SQLite does here, never its ceiling; idle CPU left: the offered rate,
    the write lock or the disk set it (``neither``).

    In a compiled load (qload) the engine runs in a compiled program, as the SQLite source study's
    Go program did: that program is the system, so its set saturated is the engine's ceiling on
    those cores (``server``) — the program's own loop stays in the figure, as an application's
    would, and the study process must have stayed out of the set's busy time."""
    load_busy, cores = exact["load_set_busy"], exact["load_set_cores"]
    if compiled_load:
        return _compiled_embedded_side(exact)
    used = (exact.get("load_cores_used") or 0.0) + (exact.get("harness_cores_used") or 0.0)
    figures = (f"embedded engine: the load set (engine and harness in the same processes) {load_busy:.0%} busy, "
               f"{used:.2f} of {cores} cores by them")
    if load_busy >= SATURATED and used >= OWN_SHARE * load_busy * cores:
        return _side("load", f"load-limited (a floor): engine and harness saturated their shared set; {figures}")
    if load_busy >= SATURATED:
        return _side(None, f"cannot tell: the set was saturated by other processes; {figures}")
    return _side("neither", f"its set not saturated; {figures}")


def _compiled_embedded_side(exact: dict[str, Any]) -> dict[str, Any]:
    load_busy, cores = exact["load_set_busy"], exact["load_set_cores"]
    program, study = exact.get("load_cores_used") or 0.0, exact.get("harness_cores_used") or 0.0
    figures = (f"embedded engine in a compiled program: its set {load_busy:.0%} busy, {program:.2f} of {cores} "
               f"cores by the program, {study:.2f} by the study process")
    if load_busy >= SATURATED and program >= COMPILED_OWN_SHARE * load_busy * cores:
        return _side("server", f"engine-limited: the program the engine runs in (engine and its client loop, one "
                               f"program) saturated its set; {figures}")
    if load_busy >= SATURATED:
        return _side(None, f"cannot tell: the set was saturated by other processes; {figures}")
    return _side("neither", f"its set not saturated; {figures}")


def _split_side(exact: dict[str, Any], server_ceiling_cores: int | None) -> dict[str, Any]:
    server_busy, load_busy = exact["server_set_busy"], exact["load_set_busy"]
    set_cores = exact["server_set_cores"]
    used = exact.get("server_cores_used") or 0.0
    can_use = min(server_ceiling_cores or set_cores, set_cores)
    figures = (f"server set {server_busy:.0%} busy ({used:.2f} of {set_cores} cores by the server, "
               f"which can use {can_use}), load set {load_busy:.0%} busy")
    load_saturated = _load_saturated(exact)
    if load_saturated and (used >= SATURATED * can_use or server_busy >= SATURATED):
        # both sides out of CPU: the load could not have offered more, so the server's figure is
        # at least this, not shown to be its ceiling (Redis at 86 % of its core, the load at 99 %)
        return _side("load", f"both sets saturated (a floor: the load could offer no more); {figures}")
    if used >= SATURATED * can_use:
        return _side("server", f"server-limited: the server used what it can; {figures}")
    if server_busy >= SATURATED and used >= OWN_SHARE * server_busy * set_cores:
        return _side("server", f"server-limited: its set saturated; {figures}")
    if server_busy >= SATURATED:
        return _side(None, f"cannot tell: the server's set was saturated by other processes; {figures}")
    load_used = (exact.get("load_cores_used") or 0.0) + (exact.get("harness_cores_used") or 0.0)
    if load_saturated:
        return _side("load", f"load-limited (a floor): the load's set saturated; {figures}")
    if load_busy >= SATURATED:
        return _side(None, f"cannot tell: the load's set was saturated by other processes "
                           f"(the load and the study used {load_used:.2f} cores of it); {figures}")
    return _side("neither", f"neither set saturated; {figures}")


def _load_saturated(exact: dict[str, Any]) -> bool:
    """The load's set saturated by the load itself (its tool or workers and the study process)."""
    load_busy, load_used = exact["load_set_busy"], (exact.get("load_cores_used") or 0.0) + (
        exact.get("harness_cores_used") or 0.0)
    return load_busy >= SATURATED and load_used >= OWN_SHARE * load_busy * exact["load_set_cores"]


def _side(side: str | None, reason: str) -> dict[str, Any]:
    return {"side": side, "reason": reason, "saturated_at": SATURATED}


def side_of_record(limit: dict[str, Any], exact: dict[str, Any] | None) -> str | None:
    """The side a record's ``limit`` names; for an embedded engine's record written before
    ``embedded_side``, the side its own exact figures give; a "server" read while the load's set
    was saturated too is a floor (``load``), as ``_split_side`` now reads it."""
    side = limit.get("side")
    if side is None and limit.get("reason") == EMBEDDED_NOT_READ and exact and exact.get("load_set_busy") is not None:
        return embedded_side(exact)["side"]
    if side == "server" and _split_figures(exact) and _load_saturated(exact):
        return "load"  # read before both-saturated became a floor (``_split_side``)
    return side


def _split_figures(exact: dict[str, Any] | None) -> bool:
    """Exact figures of a split placement with a server set in use (not an embedded engine's)."""
    return bool(exact) and all(exact.get(key) is not None for key in
                               ("server_set_busy", "load_set_busy", "load_set_cores")) and (
        exact["server_set_busy"] >= SATURATED)
