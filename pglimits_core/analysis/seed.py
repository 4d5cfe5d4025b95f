"""The one rule by which a ratio measured here is set beside a source document's: "agree" inside
the seed's range widened by ``AGREEMENT_SLACK`` each way, otherwise the same direction or not.
Every workload's seed comparison judges its ratios with these functions."""

from __future__ import annotations

# A ratio "agrees" when it falls inside the seed's range widened by this factor each way:
# quick profiles have short windows and one repetition, so a tighter band would flag noise.
AGREEMENT_SLACK = 1.25


def verdict(ratio: float | None, low: float, high: float) -> str:
    """agree / same direction, different size / differ (opposite direction) / not measured."""
    if ratio is None:
        return "not measured here"
    if low / AGREEMENT_SLACK <= ratio <= high * AGREEMENT_SLACK:
        return "agree"
    seed_side = (low + high) / 2 >= 1
    return "same direction, different size" if (ratio >= 1) == seed_side else "differ (opposite direction)"


def floor_could_move_it(ratio: float, low: float, high: float, a_floor: bool, b_floor: bool) -> bool:
    """A floor on A means the true A/B is at least ours; on B, at most ours. Either can hide an
    agreement when ours lies on the side of the seed's range the floor may move it towards."""
    return (a_floor and ratio < low / AGREEMENT_SLACK) or (b_floor and ratio > high * AGREEMENT_SLACK)


def range_text(low: float, high: float) -> str:
    return f"{low:.2f}×" if abs(high - low) < 0.005 else f"{low:.2f}–{high:.2f}×"


def verdict_short(ours: float, seed: float) -> str:
    """``verdict`` against a seed that states one ratio, in the short words of the pub/sub and
    vector tables ("differ" for an opposite direction)."""
    found = verdict(ours, seed, seed)
    return "differ" if found.startswith("differ") else found
