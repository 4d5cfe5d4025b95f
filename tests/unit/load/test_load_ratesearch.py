"""Rate search on a synthetic system with a known knee."""

import pytest

from pglimits_core.load.ratesearch import PointResult, Slo, search_rate

SLO = Slo(p99_bound_us=5_000)


def synthetic_system(knee, calls):
    """Achieves any offered rate up to ``knee``; above it saturates and p99 explodes."""

    def measure_at(rate):
        calls.append(rate)
        if rate <= knee:
            return PointResult(rate, rate, 300, 1_000 + 3_000 * rate / knee)
        return PointResult(rate, knee, 50_000, 900_000, backlog_growth=rate - knee)

    return measure_at


@pytest.mark.parametrize("knee", [730.0, 1_000.0, 12_345.0, 99.0])
def test_finds_the_knee_within_tolerance(knee):
    calls = []
    result = search_rate(synthetic_system(knee, calls), SLO, start_rate=100, tolerance=0.02,
                         max_probes=30)
    assert result.ended == "converged"
    assert knee * 0.98 <= result.sustainable_rate <= knee
    assert len(result.curve) == len(calls) <= 30
    for probe in result.curve:
        assert (probe.failed is None) == (probe.point.offered <= knee)


def test_every_unsustainable_point_says_why():
    result = search_rate(synthetic_system(500, []), SLO, start_rate=100, max_probes=10)
    reasons = [p.failed for p in result.curve if p.failed]
    assert reasons and all("achieved" in r or "p99" in r for r in reasons)
    p99_only = Slo(p99_bound_us=5_000).failure(PointResult(100, 100, 10, 9_000))
    assert "p99" in p99_only
    assert "too few" in SLO.failure(PointResult(100, 100, None, None))
    assert "backlog" in SLO.failure(PointResult(100, 100, 10, 10, backlog_growth=3))


def test_probe_budget_is_a_hard_bound():
    calls = []
    result = search_rate(synthetic_system(10**9, calls), SLO, start_rate=1, max_probes=5)
    assert len(calls) == 5 and result.ended.startswith("probe budget")
    assert result.sustainable_rate == 16  # the best rate actually shown to hold


def test_when_the_start_rate_fails_it_steps_down():
    result = search_rate(synthetic_system(60, []), SLO, start_rate=1000, tolerance=0.05)
    assert 57 <= result.sustainable_rate <= 60


def test_nothing_sustainable_is_reported_as_none():
    never_ok = lambda rate: PointResult(rate, 0, None, None)  # noqa: E731
    result = search_rate(never_ok, SLO, start_rate=100, max_probes=4)
    assert result.sustainable_rate is None and len(result.curve) == 4


def test_max_rate_caps_the_search():
    result = search_rate(synthetic_system(10**9, []), SLO, start_rate=100, max_rate=1000)
    assert result.sustainable_rate == 1000 and result.ended == "reached max_rate"


def test_near_the_edge_each_rate_needs_every_repeat_to_pass():
    calls = []
    result = search_rate(synthetic_system(1_000, calls), SLO, start_rate=100, tolerance=0.05,
                         max_probes=30, repeats=3)
    best = result.sustainable_rate
    assert 950 <= best <= 1_000
    passes_at_best = [p for p in result.curve if p.point.offered == best and p.failed is None]
    assert len(passes_at_best) == 3  # the answer itself was measured three times


def test_a_lucky_pass_above_the_knee_is_not_the_cliff():
    """Knee at 2,500/s, but the very first probe at 3,000/s passes by luck."""
    lucky = iter([True])

    def measure_at(rate):
        ok = next(lucky, False) if rate == 3_000 else rate <= 2_500
        return PointResult(rate, rate, 10, 1_000 if ok else 900_000)

    result = search_rate(measure_at, SLO, start_rate=3_000, factor=1.5, tolerance=0.05,
                         max_probes=20, repeats=2)
    assert 2_375 <= result.sustainable_rate <= 2_500
    assert result.ended == "converged"


def test_sustainable_rate_is_monotone_safe():
    from pglimits_core.load.ratesearch import sustainable_rate

    assert sustainable_rate([(1_000, True), (2_000, False), (3_000, True)]) == 1_000
    assert sustainable_rate([(1_000, True), (1_000, False)]) is None
    assert sustainable_rate([]) is None
