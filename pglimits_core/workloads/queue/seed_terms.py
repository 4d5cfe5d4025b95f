"""The terms on which a seed claim's pair of our designs is judged (``seed.judge``): both sides'
delivery promise against the source's own pairing, runs that show no direction where the seed
claims one, and the one rule's class for the row (a sweep's short windows only indicate)."""

from __future__ import annotations

from typing import Any

from pglimits_core.analysis.seed import AGREEMENT_SLACK
from pglimits_core.analysis.verdict import BY_RATE, INSIDE_BAND, OVERLAP, decide, sweep_class
from pglimits_core.workloads.queue.like_for_like import one_promise

# ``Any`` below: a ``seed.Measured`` and a ``seed_claims.SeedClaim`` (seed imports this module)


def promises_as_the_source(claim: Any, a: Any, b: Any) -> bool:
    """Our pair makes one delivery promise on both sides, or the source's own pairing did not
    (its delete-mode Postgres, at-most-once, against Redis's reliable queue: its claim, kept)."""
    return one_promise(a.variant, b.variant) or not one_promise(claim.a_designs[0], claim.b_designs[0])


def runs_overlap(a: Any, b: Any, low: float, high: float) -> str:
    """Where our runs show no direction — the one rule finds no winner beyond the tie band — the
    ratio of the medians is no direction either: the row is "not decided here". Only a tie the rule
    finds (ranges that overlap, inside the band either way) against a seed that claims parity (its
    range takes in 1) is the same finding, "agree" — one side ahead in every run inside the band,
    or ranges too wide to tell, agree with nothing. "" where the rule finds a winner, or a side
    has no runs to judge."""
    if a.side is None or b.side is None:
        return ""
    found = decide(a.side, b.side)
    if found.winner is not None or found.klass not in (BY_RATE, INSIDE_BAND, OVERLAP):
        return ""
    if found.tie and low / AGREEMENT_SLACK <= 1 <= high * AGREEMENT_SLACK:
        return f"agree: our runs show no measurable difference either ({found.why})"
    return f"not decided here: our runs show no direction ({found.why})"


def judged_by(durability_class: str | None, a: Any, b: Any) -> str:
    """The rule's class for a pair of one durability class on the source's terms ("—" otherwise); a
    pair read from the sweep's short windows is only indicative (``sweep_class``)."""
    if not (durability_class and a and b and a.side and b.side):  # the caller kept only the source's terms
        return "—"
    klass = decide(a.side, b.side).klass
    return sweep_class(klass) if a.sweep or b.sweep else klass
