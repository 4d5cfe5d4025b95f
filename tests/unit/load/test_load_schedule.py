"""Open-loop schedules (pure, no clock) and spec validation."""

import statistics

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.schedule import Window, intended_starts, phase_windows
from pglimits_core.load.spec import ClosedLoop, OpenLoop, Phase, Role, RunSpec, validate_spec

NS = 1_000_000_000
WINDOW = Window("measure", 5 * NS, 15 * NS)  # 10 s


class Noop:
    name = "noop"

    def open(self): ...

    def __call__(self): ...

    def close(self): ...


def test_uniform_schedule_count_spacing_and_bounds():
    starts = list(intended_starts(WINDOW, 100.0, "uniform", 0, 1, seed=1, role="r"))
    assert len(starts) == 1000
    assert starts[0] == WINDOW.start_ns and starts[-1] < WINDOW.end_ns
    assert {b - a for a, b in zip(starts, starts[1:], strict=False)} == {10_000_000}


def test_uniform_workers_interleave_into_an_even_role_rate():
    merged = sorted(s for w in range(4)
                    for s in intended_starts(WINDOW, 400.0, "uniform", w, 4, seed=1, role="r"))
    assert len(merged) == 4000
    gaps = {b - a for a, b in zip(merged, merged[1:], strict=False)}
    assert gaps == {2_500_000}  # 400/s role-wide = one start every 2.5 ms


def test_poisson_schedule_is_seeded_and_has_the_offered_mean():
    starts = list(intended_starts(WINDOW, 2000.0, "poisson", 0, 2, seed=7, role="r"))
    again = list(intended_starts(WINDOW, 2000.0, "poisson", 0, 2, seed=7, role="r"))
    other = list(intended_starts(WINDOW, 2000.0, "poisson", 0, 2, seed=8, role="r"))
    assert starts == again and starts != other
    assert 10_000 * 0.95 < len(starts) < 10_000 * 1.05  # 1000/s per worker for 10 s
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert statistics.mean(gaps) == pytest.approx(1_000_000, rel=0.05)
    assert statistics.pstdev(gaps) == pytest.approx(1_000_000, rel=0.1)  # exponential: sd = mean
    assert all(WINDOW.start_ns <= s < WINDOW.end_ns for s in starts)


def test_poisson_workers_get_different_streams():
    first = list(intended_starts(WINDOW, 100.0, "poisson", 0, 2, seed=7, role="r"))
    second = list(intended_starts(WINDOW, 100.0, "poisson", 1, 2, seed=7, role="r"))
    assert first != second


def test_phase_windows_follow_the_phases_and_active_filter():
    phases = [Phase("warmup", 1, warmup=True), Phase("measure", 2), Phase("churn", 0.5)]
    windows = phase_windows(phases, (), 100)
    assert [(w.phase, w.start_ns, w.end_ns) for w in windows] == [
        ("warmup", 100, 100 + NS), ("measure", 100 + NS, 100 + 3 * NS),
        ("churn", 100 + 3 * NS, 100 + 3 * NS + NS // 2)]
    assert [w.phase for w in phase_windows(phases, ("churn",), 0)] == ["churn"]


def spec_with(role=None, phases=None):
    return RunSpec(phases=phases or [Phase("measure", 1)], roles=[role or Role("r", Noop())])


@pytest.mark.parametrize("loop", [OpenLoop(rate=0), OpenLoop(rate=-5),
                                  OpenLoop(rate=float("nan")), OpenLoop(rate=2_000_001)])
def test_rates_the_schedule_cannot_represent_are_rejected(loop):
    with pytest.raises(PGLimitsError, match="fix:"):
        validate_spec(spec_with(Role("r", Noop(), workers=2, loop=loop)))


def test_a_million_per_worker_is_still_representable():
    validate_spec(spec_with(Role("r", Noop(), workers=2, loop=OpenLoop(rate=2_000_000))))


@pytest.mark.parametrize("bad", [
    {"phases": [Phase("measure", 0)]}, {"phases": [Phase("measure", -1)]},
    {"role": Role("r", Noop(), workers=0)}, {"role": Role("r", Noop(), max_ops=0)},
    {"role": Role("r", Noop(), loop=ClosedLoop(idle_sleep_s=-1))},
    {"role": Role("r", Noop(), active_phases=("nope",))},
    {"role": Role("r", lambda: None)},  # not picklable: cannot reach a worker
])
def test_invalid_specs_raise_one_line_errors(bad):
    with pytest.raises(PGLimitsError) as error:
        validate_spec(spec_with(**bad))
    assert "\n" not in str(error.value) and "fix:" in str(error.value)


def test_max_ops_shares_add_up():
    role = Role("r", Noop(), workers=3, max_ops=10)
    assert [role.ops_share(i) for i in range(3)] == [4, 3, 3]
