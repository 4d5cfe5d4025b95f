"""What may face what in a queue comparison, and whether a latency point measured the queue at all.

One like-for-like test (``same_terms``) serves the decision cells and the per-row verdict
columns alike; one producers-short test (``offered_only``) says where the harness's own
producers never offered the rate a latency point names, so the point is no verdict on a queue.
"""

from __future__ import annotations

import re

import pandas as pd

from pglimits_core.errors import PGLimitsError
from pglimits_core.record.summary import SUSTAINED_FRACTION
from pglimits_core.workloads.queue.systems.registry import REGISTRY, SERVER_FOR

PRODUCERS_SHORT = "producers short"
CONSUMERS_SHORT = "consumers short"


def server_of(variant: str) -> str:
    """The server a variant's system runs on ("pg_delete batch=50" -> "postgres")."""
    return SERVER_FOR.get(str(variant).split()[0], "")


def delivery_of(variant: str) -> str:
    """The system's delivery guarantee ("at-least-once" / "at-most-once"), from its class."""
    return REGISTRY.system_class(str(variant).split()[0]).delivery_guarantee


def promise_of(variant: str) -> str | None:
    """A design's delivery guarantee (None: not a queue system the registry knows)."""
    try:
        return delivery_of(variant)
    except PGLimitsError:
        return None


def one_promise(a: str, b: str) -> bool:
    """Both designs make the same delivery promise (or one's is not known: nothing to refuse on)."""
    return None in (promise_of(a), promise_of(b)) or promise_of(a) == promise_of(b)


def batch_of(variant: str) -> str:
    found = re.search(r"\bbatch=(\d+)", str(variant))
    return found.group(1) if found else ""


def same_terms(postgres: str, dedicated: str) -> bool:
    """The one like-for-like test of every queue comparison: the same delivery guarantee and,
    where both designs name one, the same batch size (claiming more per statement decides more
    than the engine). The durability class is the caller's grouping."""
    if delivery_of(postgres) != delivery_of(dedicated):
        return False
    return not batch_of(dedicated) or batch_of(postgres) in (batch_of(dedicated), "")


def alike(one: str, other: str) -> bool:
    """``same_terms`` with the Postgres design (if either is one) in its place."""
    postgres, dedicated = (other, one) if server_of(other) == "postgres" else (one, other)
    return same_terms(postgres, dedicated)


def _numbers(runs: pd.DataFrame, column: str) -> pd.Series:
    if column not in runs:
        return pd.Series(float("nan"), index=runs.index)
    return pd.to_numeric(runs[column], errors="coerce")


def offered_only(runs: pd.DataFrame) -> str:
    """"the producers offered only 3,620 of 5,000 msg/s" when the median run's producers stayed
    below ``SUSTAINED_FRACTION`` of the offered rate (the harness, not the queue, fell short: no
    verdict on the queue at that rate); "" when they reached it or the records do not say."""
    achieved, offered = _numbers(runs, "achieved_per_s").median(), _numbers(runs, "offered_per_s").median()
    if pd.isna(achieved) or pd.isna(offered) or achieved >= SUSTAINED_FRACTION * offered:
        return ""
    return offered_text(achieved, achieved, offered)


def offered_text(low: float, high: float, offered: float) -> str:
    """The one wording of a rate the harness's producers fell short of (``low``–``high``: the
    designs' achieved rates, one figure when they agree)."""
    achieved = f"{low:,.0f}" if round(low) == round(high) else f"{low:,.0f}–{high:,.0f}"
    return f"the producers offered only {achieved} of {offered:,.0f} msg/s"


def short_side(run) -> str:
    """Which side of a run that was not sustained fell short: its producers (below
    ``SUSTAINED_FRACTION`` of the offered rate), else its consumers; "" when not recorded."""
    achieved, offered = getattr(run, "achieved_per_s", None), getattr(run, "offered_per_s", None)
    if achieved is None or offered is None or pd.isna(achieved) or pd.isna(offered):
        return ""
    return PRODUCERS_SHORT if achieved < SUSTAINED_FRACTION * offered else CONSUMERS_SHORT
