"""Find the highest sustainable offered rate: geometric step-up, then bisection.

Pure logic around a caller's ``measure_at(rate) -> PointResult`` (which runs an open-loop
measurement at that offered rate), so it is tested against a synthetic system with a known
knee. A point is sustainable when the SLO holds: achieved ≥ ``min_achieved_fraction`` of
offered, p99 ≤ ``p99_bound_us`` (a p99 that could not be measured counts as a failure — give
the probe a long enough window), and backlog growth ≤ ``max_backlog_growth`` items/s.
Rates are ops/s; the search never runs more than ``max_probes`` measurements.
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


class _Search:
    def __init__(self, measure_at: Callable[[float], PointResult], slo: Slo, max_probes: int):
        self.measure_at, self.slo, self.max_probes = measure_at, slo, max_probes
        self.curve: list[Probe] = []
        self.best: float | None = None  # highest sustainable rate seen
        self.worst: float | None = None  # lowest unsustainable rate seen

    def probe(self, rate: float) -> bool:
        point = self.measure_at(rate)
        failed = self.slo.failure(point)
        self.curve.append(Probe(point, failed))
        if failed is None:
            self.best = rate if self.best is None else max(self.best, rate)
        else:
            self.worst = rate if self.worst is None else min(self.worst, rate)
        return failed is None

    def budget_left(self) -> bool:
        return len(self.curve) < self.max_probes


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
                max_rate: float | None = None) -> RateSearchResult:
    """Highest rate meeting ``slo`` to within ``tolerance`` (relative width of the bracket)."""
    if start_rate <= 0 or factor <= 1 or tolerance <= 0 or max_probes < 1:
        raise ValueError("need start_rate > 0, factor > 1, tolerance > 0, max_probes >= 1")
    search = _Search(measure_at, slo, max_probes)
    ended = _bracket(search, start_rate, factor, max_rate)
    while ended is None:
        if (search.worst - search.best) <= tolerance * search.best:
            ended = "converged"
        elif not search.budget_left():
            ended = "probe budget spent while bisecting"
        else:
            search.probe((search.best + search.worst) / 2)
    return RateSearchResult(search.curve, search.best, ended)
