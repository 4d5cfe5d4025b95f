"""Which side set the limit of a point: the server's CPU set, the load's CPU set, or neither.

Read from a window's exact CPU figures (``exact_cpu.window_figures``) and the placement:

- ``server`` — the server's set was saturated (busy ≥ ``SATURATED`` of it, and the server's own
  processes used most of that), or the server used ≥ ``SATURATED`` of what it can use at all (a
  single-threaded server, Redis, is full at one core even on a larger set). The figure is a
  ceiling: the server could not have done more on this set.
- ``load`` — the load's set was saturated by the load (the harness's workers, a C tool, the study
  process): the load could not offer more, so the figure is a floor (≥ x), never the server's
  ceiling.
- ``neither`` — both sets had idle CPU: the offered rate, a latency target, locks or the disk set
  the figure (an open-loop point below capacity is such a point).
- None — it cannot be told: the placement shares the cores between the sides (then the old
  per-second classification is all there is), the window was not read, the engine runs inside
  the load's processes (SQLite: the load set *is* the system), or a saturated set was busy with
  someone else's work (a neighbour on a shared machine: the sets pin our processes, not theirs).

``SATURATED`` is 0.85: on a pinned core, Postgres at its ceiling under pgbench kept its core
85-90 % busy (the rest is wake-up gaps between round trips), so a stricter bar would call a
saturated server idle.
"""

from __future__ import annotations

from typing import Any

SATURATED = 0.85
#: the server's own processes must account for at least this share of its set's busy time before
#: a saturated set is called the server's limit (otherwise something else ran there)
OWN_SHARE = 0.7


def limit_side(exact: dict[str, Any], placement: dict[str, Any], server_ceiling_cores: int | None = None,
               engine_in_client: bool = False) -> dict[str, Any]:
    """``{"side": "server" | "load" | "neither" | None, "reason": ...}`` for one window."""
    if engine_in_client:
        return _side(None, "not applicable: the engine runs inside the load's processes (on the load set)")
    if placement.get("client_and_server_share_cores", True):
        return _side(None, "cannot tell from the sets: the placement shares the cores between server and load")
    if exact.get("error") or exact.get("server_set_busy") is None or exact.get("load_set_busy") is None:
        return _side(None, f"cannot tell: {exact.get('error') or 'the window CPU was not read'}")
    return _split_side(exact, server_ceiling_cores)


def _split_side(exact: dict[str, Any], server_ceiling_cores: int | None) -> dict[str, Any]:
    server_busy, load_busy = exact["server_set_busy"], exact["load_set_busy"]
    set_cores = exact["server_set_cores"]
    used = exact.get("server_cores_used") or 0.0
    can_use = min(server_ceiling_cores or set_cores, set_cores)
    figures = (f"server set {server_busy:.0%} busy ({used:.2f} of {set_cores} cores by the server, "
               f"which can use {can_use}), load set {load_busy:.0%} busy")
    if used >= SATURATED * can_use:
        return _side("server", f"server-limited: the server used what it can; {figures}")
    if server_busy >= SATURATED and used >= OWN_SHARE * server_busy * set_cores:
        return _side("server", f"server-limited: its set saturated; {figures}")
    if server_busy >= SATURATED:
        return _side(None, f"cannot tell: the server's set was saturated by other processes; {figures}")
    load_used = (exact.get("load_cores_used") or 0.0) + (exact.get("harness_cores_used") or 0.0)
    if load_busy >= SATURATED and load_used >= OWN_SHARE * load_busy * exact["load_set_cores"]:
        return _side("load", f"load-limited (a floor): the load's set saturated; {figures}")
    if load_busy >= SATURATED:
        return _side(None, f"cannot tell: the load's set was saturated by other processes "
                           f"(the load and the study used {load_used:.2f} cores of it); {figures}")
    return _side("neither", f"neither set saturated; {figures}")


def _side(side: str | None, reason: str) -> dict[str, Any]:
    return {"side": side, "reason": reason, "saturated_at": SATURATED}
