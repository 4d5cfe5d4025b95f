"""The one rule by which a ratio measured here is set beside a source document's: "agree" inside
the seed's range widened by ``AGREEMENT_SLACK`` each way, otherwise the same direction or not.
Every workload's seed comparison judges its ratios with these functions."""

from __future__ import annotations

from typing import Any

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


def bounded_ratio(ratio: float | None, a: Any, b: Any) -> float | str | None:
    """Our A/B as the table prints it: the number where both sides are figures, "≥ x×" / "≤ x×"
    where a bound lets the true ratio move only one way (``judge_sides``), None where both ways."""
    if ratio is None or a is None or b is None:
        return None if ratio is None else round(ratio, 2)
    up, down = a.floor or b.below, b.floor or a.below
    if up and down:
        return None
    return f"{'≥' if up else '≤'} {ratio:.2f}×" if (up or down) else round(ratio, 2)


def judge_sides(a: Any, b: Any, low: float, high: float) -> tuple[float | None, str, str]:
    """Our A/B from two ``analysis.verdict.Side`` (a capacity table's ceilings or capacities)
    against the seed's range: the ratio, the verdict and the comparison's class (``decide``'s: a
    class under which the ratio measures no system leaves the row not decided).

    A bound moves the true ratio one way: a floor on A (or an upper bound on B: held nowhere,
    ``Side.below``) only up, a floor on B (or A held nowhere) only down. Where the way it may move
    reaches the seed's range, or leaves it from inside (a bound never shows agreement), or it may
    move both ways, the row is inconclusive; otherwise the one rule judges it and says which side
    is a bound."""
    from pglimits_core.analysis.verdict import decide

    if a is None or b is None or not a.value or not b.value:
        return None, "not measured here", "—"
    found, ratio = decide(a, b), a.value / b.value
    up, down = a.floor or b.below, b.floor or a.below
    bounds = [f"{name} {'below its figure' if side.below else 'a lower bound'}"
              for name, side in (("A", a), ("B", b)) if side.floor or side.below]
    if (up and down) or floor_could_move_it(ratio, low, high, up, down):
        return ratio, f"inconclusive: ours {' and '.join(bounds)}, the true ratio may reach the seed's", found.klass
    judged = verdict(ratio, low, high)
    if bounds and judged == "agree":  # inside the range, but free to leave it the way the bound moves
        return ratio, f"inconclusive: ours {' and '.join(bounds)}, the true ratio may leave the seed's range", \
            found.klass
    judged = "differ" if judged.startswith("differ") and low == high else judged
    spread = f" (ratio over the runs {found.spread[0]:.2f}–{found.spread[1]:.2f})" if found.spread else ""
    return ratio, judged + (f" (ours {' and '.join(bounds)})" if bounds else "") + spread, found.klass
