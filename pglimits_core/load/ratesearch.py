"""Find the highest sustainable offered rate: geometric step-up, then bisection.

Pure logic around a caller's ``measure_at(rate) -> PointResult`` (which runs an open-loop
measurement at that offered rate), so it is tested against a synthetic system with a known
knee. A point is sustainable when the SLO holds: achieved ≥ ``min_achieved_fraction`` of
offered, p99 ≤ ``p99_bound_us`` (a p99 that could not be measured counts as a failure — give
the probe a long enough window), and backlog growth ≤ ``max_backlog_growth`` items/s.
Rates are ops/s; the search never probes more than ``max_probes`` rates.

Two guards keep one lucky measurement from making a cliff. Near the edge (the bisection, and
the answer itself before it is returned) a rate counts as sustainable only when ``repeats``
measurements at it all pass (the first failure stops its repeats); the step-up that finds the
bracket measures once per rate. And the verdict is *monotone-safe*: a rate that passed above a
rate that failed is not sustainable (``sustainable_rate``), so a noisy pass beyond a failure
never becomes the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PointResult:
    """One measured point. Latencies in µs (None: too few samples); backlog growth items/s."""

    offered: float
    achieved: float
    p50_us: float | None
    p99_us: float | None
    backlog_growth: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Slo:
    p99_bound_us: float
    min_achieved_fraction: float = 0.95
    max_backlog_growth: float = 0.0

    def failure(self, point: PointResult) -> str | None:
        """Why ``point`` is not sustainable, or None when it is."""
        if point.achieved < self.min_achieved_fraction * point.offered:
            return f"achieved {point.achieved:.1f}/s < {self.min_achieved_fraction:.0%} of offered"
        if point.p99_us is None:
            return "p99 not measurable (too few samples)"
        if point.p99_us > self.p99_bound_us:
            return f"p99 {point.p99_us:.0f} µs > bound {self.p99_bound_us:.0f} µs"
        if point.backlog_growth > self.max_backlog_growth:
            return f"backlog grows {point.backlog_growth:.1f} items/s"
        return None


@dataclass(frozen=True)
class Probe:
    point: PointResult
    failed: str | None  # None: sustainable


@dataclass
class RateSearchResult:
    """The whole curve (in probe order), the best sustainable rate (None: none was), why it ended."""

    curve: list[Probe]
    sustainable_rate: float | None
    ended: str


def sustainable_rate(verdicts: list[tuple[float, bool]]) -> float | None:
    """The highest rate that passed every measurement at it and lies below every rate that
    failed any (``(rate, passed)`` per measurement); None when no rate qualifies."""
    failed = [rate for rate, passed in verdicts if not passed]
    lowest_failure = min(failed, default=float("inf"))
    clean = {rate for rate, _ in verdicts if rate < lowest_failure}
    return max(clean, default=None)


class _Search:
    def __init__(self, measure_at: Callable[[float], PointResult], slo: Slo, max_probes: int,
                 repeats: int = 1):
        self.measure_at, self.slo, self.max_probes, self.repeats = measure_at, slo, max_probes, repeats
        self.curve: list[Probe] = []
        self.rates_probed = 0
        self.best: float | None = None  # highest sustainable rate (monotone-safe) so far
        self.worst: float | None = None  # lowest rate that failed a measurement

    def probe(self, rate: float, repeats: int = 1) -> bool:
        """Up to ``repeats`` measurements at a new ``rate``; True only if all of them passed."""
        self.rates_probed += 1
        return self._measure(rate, repeats)

    def confirm(self, rate: float) -> bool:
        """Measure an already probed ``rate`` until it has ``repeats`` passes; False at a failure."""
        passes = sum(1 for p in self.curve if p.point.offered == rate and p.failed is None)
        return self._measure(rate, self.repeats - passes)

    def _measure(self, rate: float, times: int) -> bool:
        ok = all(self._measure_once(rate) for _ in range(times))  # all() stops at a failure
        verdicts = [(probe.point.offered, probe.failed is None) for probe in self.curve]
        self.best = sustainable_rate(verdicts)
        self.worst = min((offered for offered, passed in verdicts if not passed), default=None)
        return ok

    def _measure_once(self, rate: float) -> bool:
        point = self.measure_at(rate)
        failed = self.slo.failure(point)
        self.curve.append(Probe(point, failed))
        return failed is None

    def budget_left(self) -> bool:
        return self.rates_probed < self.max_probes


def _next_rate(rate: float, ok: bool, factor: float, max_rate: float | None) -> float:
    if not ok:
        return rate / factor
    return rate * factor if max_rate is None else min(rate * factor, max_rate)


def _bracket(search: _Search, start: float, factor: float, max_rate: float | None) -> str | None:
    """Step up (or down after an initial failure) until the knee is bracketed."""
    rate = start
    while search.budget_left():
        ok = search.probe(rate)
        if ok and max_rate is not None and rate >= max_rate:
            return "reached max_rate"
        if search.best is not None and search.worst is not None:
            return None
        rate = _next_rate(rate, ok, factor, max_rate)
    return "probe budget spent while bracketing"


def search_rate(measure_at: Callable[[float], PointResult], slo: Slo, start_rate: float,
                factor: float = 2.0, tolerance: float = 0.05, max_probes: int = 12,
                max_rate: float | None = None, repeats: int = 1) -> RateSearchResult:
    """Highest rate meeting ``slo`` to within ``tolerance`` (relative width of the bracket);
    each probed rate is measured up to ``repeats`` times and must pass every time."""
    if start_rate <= 0 or factor <= 1 or tolerance <= 0 or max_probes < 1 or repeats < 1:
        raise ValueError("need start_rate > 0, factor > 1, tolerance > 0, max_probes >= 1, repeats >= 1")
    search = _Search(measure_at, slo, max_probes, repeats)
    ended = _bracket(search, start_rate, factor, max_rate)
    while ended is None:
        if search.best is None:  # a failure below every pass: bracket again, downwards
            ended = _bracket(search, search.worst / factor, factor, max_rate)
        elif (search.worst - search.best) <= tolerance * search.best:
            ended = "converged" if search.confirm(search.best) else None
        elif not search.budget_left():
            ended = "probe budget spent while bisecting"
        else:
            search.probe((search.best + search.worst) / 2, repeats)
    while search.best is not None and not search.confirm(search.best):
        pass  # out of budget: a failed confirmation lowers best to the next clean rate
    return RateSearchResult(search.curve, search.best, ended)
