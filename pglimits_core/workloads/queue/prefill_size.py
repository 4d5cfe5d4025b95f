"""How big a closed-loop point's prefill must be: what the design can consume in warm-up +
window, with a safety factor, learned from the study's own earlier points.

A burn-down (or a C tool's run) must not run out of backlog inside its window: then its rate
is only a floor (the throughput table says "≥ x (backlog ran out)"; a ceiling run fails). A
backlog far larger than needed costs the prefill and the untimed drain after the window (most
of a point's wall time before this sizing). So each point of a variant prefills

    min(cap, max(floor, safety × best rate seen × (warm-up + window)))

where "best rate seen" is the highest consumption rate any earlier point of the same variant
and experiment measured (any consumer count, any repetition; a run that ran dry counts with its
floor, so the next point gets more); before a variant's first point, either ``cap`` (the C-tool
ceiling) or a 1-s unrecorded probe (one consumer claiming and acknowledging in the study
process: the burn-down) stands in for them. Points run in
ascending consumer counts within a round, so the next count is the one to cover: the committed
full run's largest step between neighbouring counts was 2.9× (SQLite 8 shards, 1 → 4
consumers, slowest run to fastest), hence ``SAFETY`` 4. A size is decided only when a point is
measured, so a resumed study reuses its records whatever their size (the params say "sized",
the outcome's ``prefilled`` the count) and learns their rates as if it had measured them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: the next point's rate over the best seen so far that a prefill must still cover
SAFETY = 4.0
#: what stands in for the earlier points before a variant's first one (``first``)
AT_CAP = "a variant's first point: cap"
PROBED = ("before a variant's first point, a 1-s unrecorded probe (one consumer claiming and "
          "acknowledging in the study process) stands in for the earlier points")
#: the least a sized prefill holds (a small backlog is cheap; a slow design's first seconds vary)
FLOOR = 10_000


@dataclass
class PrefillSizer:
    """One per plan: the best consumption rate (jobs/s) each (experiment, variant) has shown."""

    safety: float = SAFETY
    floor: int = FLOOR
    first: str = AT_CAP
    best: dict[tuple[str, str], float] = field(default_factory=dict)

    def size(self, experiment: str, label: str, cap: int, seconds: float) -> int:
        """Messages to prefill for a point of ``seconds`` (warm-up + window) under load."""
        rate = self.best.get((experiment, label))
        if rate is None:
            return cap
        return min(cap, max(self.floor, math.ceil(self.safety * rate * seconds)))

    def knows(self, experiment: str, label: str) -> bool:
        return (experiment, label) in self.best

    def learn(self, experiment: str, label: str, rate: float | None) -> None:
        if rate is not None and rate > 0:
            key = (experiment, label)
            self.best[key] = max(rate, self.best.get(key, 0.0))

    def rule(self) -> str:
        """The rule as the run record states it."""
        return (f"min(cap, max({self.floor}, {self.safety:g} × best jobs/s of this variant's earlier points "
                f"× (warm-up + window))); {self.first}")


def consumed_per_s(run: Any, role: str | None = "consumer") -> float | None:
    """The measured window's rate of ``role`` (None: any role, e.g. a C tool's) in a recorded
    run (None without a summary)."""
    summary = getattr(run, "summary", None)
    entries = [e for e in (summary.entries if summary else [])
               if e.phase == "measure" and role in (None, e.role)]
    rates = [e.items_per_s for e in entries if e.items_per_s]
    return max(rates) if rates else None
