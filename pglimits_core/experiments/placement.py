"""What placement changes: a point measured again under another placement, on the same servers.

A study runs under its profile's placement (``split``: servers on one CPU set, load on the other).
``under(run, mode, measure)`` runs one measurement with the running servers and this process moved
to ``mode``'s sets (``placement.repinned``) and its record saying so; the same point under the
study's own placement is the other half of the pair. A workload names the points (``placement``
experiment in its profile) and its table sets the two side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pglimits_core.placement import repinned, resolve

EXPERIMENT = "placement"


def under(run: Any, mode: str, server: str, measure: Callable[[], Any]) -> Any:
    """``measure()`` with ``server``'s processes and this process on ``mode``'s CPU sets; the
    context's placement (what each record says) follows for the block."""
    placement = resolve(mode)
    ctx = run.ctx
    saved = ctx.placement
    with repinned(ctx.endpoints[server].pids, placement):
        ctx.placement = placement.describe()
        try:
            return measure()
        finally:
            ctx.placement = saved
