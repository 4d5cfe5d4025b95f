"""The pooled exact permutation test on synthetic series: spikes inside periodic vacuum spans give
a small p once the repetitions are pooled (one run alone cannot: p ≥ cycles/n); spikes at random
seconds give p roughly uniform; p is k/n with n the combinations; Benjamini–Hochberg on known
p-values; the warm-up seconds never enter the statistic."""

from __future__ import annotations

import numpy as np
import pytest

from pglimits_core.workloads.interference import permutation as perm

SECONDS = 36
WARMUP = 2.0
#: autovacuum every naptime (10 s), each run ~50 ms
SPANS = [(5.3, 5.35), (15.3, 15.36), (25.3, 25.33)]


def series(spikes_at: list[int], seed: int, spike_ms: float = 60.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = 20 + rng.gamma(2.0, 2.0, SECONDS)
    values[spikes_at] += spike_ms
    return perm.kept(list(range(SECONDS)), list(values), WARMUP)


def run_stats(spikes_at: list[int], seed: int) -> np.ndarray:
    seconds, values = series(spikes_at, seed)
    return perm.shift_stats(values, perm.inside_mask(seconds, SPANS))


def test_a_sub_second_span_marks_the_second_it_touches():
    mask = perm.inside_mask([4, 5, 6], [(5.3, 5.35)])
    assert mask.tolist() == [False, True, False]
    assert perm.inside_mask([4, 5, 6], [(5.9, 6.05)]).tolist() == [False, True, True]


def test_one_run_cannot_go_below_its_periodic_floor_but_pooled_runs_can():
    # a 30 s window, vacuum at 5, 15, 25: shifts by 10 and 20 s rebuild the same mask, so p >= 3/30
    values = np.full(30, 20.0)
    values[[5, 15, 25]] += 60
    one = perm.pooled_test([perm.shift_stats(values, perm.inside_mask(np.arange(30), SPANS))])
    assert one.exact and one.n == 30 and one.k == 3 and one.p == pytest.approx(0.1)
    pooled = perm.pooled_test([run_stats([5, 15, 25], seed=s) for s in (1, 2, 3)])
    assert pooled.exact and pooled.n == (SECONDS - 2) ** 3 and pooled.runs == 3
    assert pooled.p == pooled.k / pooled.n and pooled.p < 0.001


def test_spikes_at_random_seconds_give_a_roughly_uniform_p():
    rng = np.random.default_rng(11)
    ps = []
    for trial in range(60):
        stats = [run_stats(sorted(rng.choice(np.arange(2, SECONDS), 3, replace=False).tolist()), seed=100 * trial + r)
                 for r in range(2)]
        ps.append(perm.pooled_test(stats).p)
    ps = np.array(ps)
    assert 0.3 < ps.mean() < 0.7
    assert (ps < 0.05).mean() < 0.15


def test_the_warm_up_never_enters_the_statistic():
    # a huge start-up transient in seconds 0-1, and a vacuum there: nothing inside after the warm-up
    seconds, values = perm.kept(list(range(10)), [900.0, 800.0] + [20.0] * 8, WARMUP)
    assert seconds.min() >= WARMUP and values.max() == 20.0
    assert perm.shift_stats(values, perm.inside_mask(seconds, [(0.37, 0.5)])) is None


def test_a_run_with_no_span_is_not_tested():
    result = perm.pooled_test([None])
    assert result.p is None and result.reason
    assert perm.verdict(None, 0, result.reason).startswith("cannot tell")


def test_benjamini_hochberg_on_known_p_values():
    q = perm.benjamini_hochberg([0.01, 0.04, 0.03, 0.2, None])
    # sorted: 0.01*4/1 = 0.04, 0.03*4/2 = 0.06, 0.04*4/3 = 0.0533 -> monotone: 0.0533, 0.2*4/4 = 0.2
    assert q[0] == pytest.approx(0.04)
    assert q[2] == pytest.approx(0.04 * 4 / 3) and q[1] == pytest.approx(0.04 * 4 / 3)
    assert q[3] == pytest.approx(0.2) and q[4] is None
    assert perm.verdict(0.04, 9) == "aligned (BH q < 0.05)"
    assert perm.verdict(0.06, 9) == "none shown with 9 cycles"
    assert perm.verdict(0.06, 9, None, 12.34) == "none shown (minimum detectable effect ~12.3 ms)"
    # a missing q read back from a table is NaN, not None: still "cannot tell"
    assert perm.verdict(float("nan"), 0, "no run with seconds both inside and outside a span") == (
        "cannot tell (no run with seconds both inside and outside a span)")


def test_an_act_window_is_tested_on_its_seconds_before_the_act_only():
    """A released hold's vacuum runs inside the churn's catch-up: those seconds would credit the
    vacuum with the act's effect, so only the seconds before the act are compared."""
    from pglimits_core.workloads.interference.aligned import run_stats

    seconds = list(range(60))
    p99 = [10.0] * 60
    for s in range(40, 50):  # the catch-up after the act, with a vacuum in it
        p99[s] = 80.0
    outcome = {"series": {"second": seconds, "fts_p99_ms": p99},
               "events": {"act_start_s": 20.0, "act_end_s": 35.0},
               "vacuum": {"spans": [{"table": "jobs", "kind": "vacuum", "start_s": 8.0, "end_s": 9.5},
                                    {"table": "jobs", "kind": "vacuum", "start_s": 40.0, "end_s": 49.5}]}}
    _, vacuums, _, inside = run_stats(outcome, "fts", 2.0)
    assert vacuums == 1 and inside == 2  # the vacuum at 8-9.5 s only: seconds 8 and 9
    plain = {**outcome, "events": {}}
    _, vacuums, _, inside = run_stats(plain, "fts", 2.0)
    assert vacuums == 2 and inside == 12
