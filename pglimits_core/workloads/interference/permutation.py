"""Does a tenant's per-second p99 rise while autovacuum (or auto-ANALYZE) runs? A pooled, exact
circular-shift permutation test, and the Benjamini–Hochberg correction across every test a
table reports.

Why pooled: autovacuum fires once per naptime (10 s), so in one 30–50 s window a circular shift
by a multiple of the period rebuilds the same mask; one run's p cannot go below cycles/n (3/30 =
0.10), whatever happened. The repetitions of a level are pooled instead: the statistic is the
sum over runs of (mean p99 inside the spans − mean outside), and under the null each run's mask
is shifted independently, so the floor is the product of the runs' floors.

Exact: every combination of shifts is enumerated (n = the product of the runs' second counts)
and p = k/n, k counting the combinations at least as large as the observed one (the observed
included, so p ≥ 1/n). Only beyond ``EXACT_LIMIT`` combinations is it sampled (``exact`` False,
p = (k + 1)/(draws + 1)). Seconds before the warm-up and seconds without a value are left out
before shifting (the mask is rotated over the kept seconds).

Power: the null distribution's spread (the sum of the runs' independent shift statistics) gives
the minimum detectable effect, the mean inside − outside per run a one-sided test at ``ALPHA``
would find with ``POWER`` (normal approximation). A span of tens of ms occupies a few % of the
second it marks, so "none shown" is read against it: no event that short can lift a second's
p99 by that much.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: enumerate every combination of shifts up to this many (3 runs × 50 s = 125,000)
EXACT_LIMIT = 4_000_000
#: draws when the combinations are more than that
DRAWS = 200_000
#: the false-discovery rate a table's "aligned" claim must hold at
FDR = 0.05
#: z for a one-sided test at 0.05 and for 80 % power: the minimum detectable effect
Z_ALPHA, Z_POWER = 1.6449, 0.8416


def inside_mask(seconds: Sequence[float], spans: Sequence[Sequence[float]], lag_s: float = 0.0) -> np.ndarray:
    """Second s is inside when [s, s + 1) overlaps a span [start, end + lag_s] (sub-second spans
    mark the one or two seconds they touch)."""
    starts = np.asarray(seconds, dtype=float)
    mask = np.zeros(len(starts), dtype=bool)
    for start, end in spans:
        mask |= (starts < float(end) + lag_s) & (starts + 1 > float(start))
    return mask


def kept(seconds: Sequence[float], values: Sequence[float | None], warmup_s: float) -> tuple[np.ndarray, np.ndarray]:
    """The (seconds, values) at or after the warm-up that have a value (a second past the end of
    ``values`` has none)."""
    s = np.asarray(seconds, dtype=float)
    v = np.full(len(s), np.nan)
    given = np.asarray([np.nan if x is None else x for x in list(values)[:len(s)]], dtype=float)
    v[:len(given)] = given
    keep = (s >= warmup_s) & ~np.isnan(v)
    return s[keep], v[keep]


def shift_stats(values: np.ndarray, mask: np.ndarray) -> np.ndarray | None:
    """mean(inside) − mean(outside) for every circular shift of the mask (shift 0 first); None
    when the mask is empty or full (nothing to compare)."""
    inside = int(mask.sum())
    if inside == 0 or inside == len(mask):
        return None
    total = values.sum()
    # the inside sum for every shift at once: circular correlation of values with the mask
    sums = np.array([values[np.roll(mask, k)].sum() for k in range(len(mask))])
    return sums / inside - (total - sums) / (len(mask) - inside)


@dataclass(frozen=True)
class Pooled:
    observed: float | None  # the pooled statistic (sum over runs), ms
    k: int | None
    n: int | None  # combinations enumerated (or draws)
    p: float | None
    exact: bool
    runs: int  # runs that entered the statistic
    reason: str | None = None
    null_sd: float | None = None  # the pooled statistic's standard deviation under the null, ms

    @property
    def min_detectable_ms(self) -> float | None:
        """The mean inside − outside per run a one-sided 0.05 test finds with 80 % power."""
        if self.null_sd is None or not self.runs:
            return None
        return (Z_ALPHA + Z_POWER) * self.null_sd / self.runs


def pooled_test(per_run: Sequence[np.ndarray], seed: int = 0) -> Pooled:
    """The pooled test over runs' ``shift_stats`` (each a vector, shift 0 = observed)."""
    runs = [np.asarray(s, dtype=float) for s in per_run if s is not None and len(s)]
    if not runs:
        return Pooled(None, None, None, None, True, 0, "no run with seconds both inside and outside a span")
    observed = float(sum(s[0] for s in runs))
    null_sd = float(np.sqrt(sum(float(np.var(s)) for s in runs)))
    combos = int(np.prod([len(s) for s in runs], dtype=float))
    if combos <= EXACT_LIMIT:
        sums = runs[0]
        for s in runs[1:]:
            sums = np.add.outer(sums, s).ravel()
        k = int((sums >= observed - 1e-9).sum())
        return Pooled(observed, k, combos, k / combos, True, len(runs), null_sd=null_sd)
    rng = np.random.default_rng(seed)
    draws = sum(s[rng.integers(0, len(s), DRAWS)] for s in runs)
    k = int((draws >= observed - 1e-9).sum())
    return Pooled(observed, k, DRAWS, (k + 1) / (DRAWS + 1), False, len(runs), null_sd=null_sd)


def benjamini_hochberg(pvalues: Sequence[float | None]) -> list[float | None]:
    """BH-adjusted q-values in the input's order (None stays None and is not counted)."""
    present = [(i, float(p)) for i, p in enumerate(pvalues) if p is not None and not np.isnan(p)]
    q: list[float | None] = [None] * len(pvalues)
    m, running = len(present), 1.0
    for rank, (i, p) in reversed(list(enumerate(sorted(present, key=lambda x: x[1]), start=1))):
        running = min(running, p * m / rank)
        q[i] = min(1.0, running)
    return q


def _absent(value: object) -> bool:
    """None or NaN (a table column turns a missing q into NaN)."""
    try:
        return value is None or bool(np.isnan(value))  # type: ignore[arg-type]
    except TypeError:
        return False


def verdict(q: float | None, cycles: int, reason: str | None = None, min_detectable_ms: float | None = None) -> str:
    """What a row may say: aligned only when BH holds; "none shown" with the effect the test could
    have found (``cycles``: the runs' autovacuum spans, said when the effect is not known)."""
    if _absent(q):
        return f"cannot tell ({reason})" if reason and not _absent(reason) else "cannot tell"
    if q < FDR:  # type: ignore[operator]
        return f"aligned (BH q < {FDR:g})"
    if not _absent(min_detectable_ms):
        return f"none shown (minimum detectable effect ~{min_detectable_ms:.1f} ms)"
    return f"none shown with {cycles} cycle{'' if cycles == 1 else 's'}"
