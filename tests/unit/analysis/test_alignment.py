"""The alignment test on synthetic series: spikes inside the windows are found, spikes elsewhere
or at random are not, and degenerate inputs say "cannot tell" instead of crashing."""

import numpy as np
import pandas as pd
import pytest

from pglimits_core.analysis.alignment import (
    p99_inside_outside,
    permutation_alignment,
    second_grid,
    window_mask,
)
from pglimits_core.samplers.vacuum_log import Window

SECONDS = 300
TRIALS = 2000


def windows_every(period, length, first=17, table="jobs"):
    return [Window(table, s + 0.3, s + 0.3 + length) for s in range(first, SECONDS - length, period)]


def baseline(seed=1):
    return 2.0 + np.random.default_rng(seed).gamma(2.0, 0.5, SECONDS)


def with_spikes_at(seconds, seed=1, height=25.0):
    values = baseline(seed)
    values[list(seconds)] += height
    return pd.Series(values, index=np.arange(SECONDS, dtype=float))


def covered_seconds(windows):
    return np.flatnonzero(window_mask(0, SECONDS, windows))


def test_spikes_inside_the_windows_give_a_small_p():
    windows = windows_every(period=37, length=4)
    result = permutation_alignment(with_spikes_at(covered_seconds(windows)), windows, TRIALS, seed=3)
    assert result.can_tell and result.observed_stat > 20
    assert result.p_value < 0.05
    assert result.trials == TRIALS and result.inside_seconds + result.outside_seconds == SECONDS


def test_spikes_placed_elsewhere_give_no_small_p():
    windows = windows_every(period=37, length=4)
    covered = set(covered_seconds(windows))
    elsewhere = [s + 15 for s in covered_seconds(windows) if s + 15 < SECONDS and s + 15 not in covered]
    result = permutation_alignment(with_spikes_at(elsewhere), windows, TRIALS, seed=3)
    assert result.observed_stat < 0
    assert result.p_value > 0.5


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_spikes_at_random_seconds_give_no_small_p(seed):
    windows = windows_every(period=37, length=4)
    spikes = np.random.default_rng(seed).choice(SECONDS, size=30, replace=False)
    result = permutation_alignment(with_spikes_at(spikes, seed=seed), windows, TRIALS, seed=seed)
    assert result.p_value > 0.05


def test_p_value_follows_the_formula_and_the_seed():
    windows = windows_every(period=50, length=3)
    series = with_spikes_at(covered_seconds(windows))
    first = permutation_alignment(series, windows, trials=99, seed=5)
    assert first == permutation_alignment(series, windows, trials=99, seed=5)
    assert round(first.p_value * 100) == first.p_value * 100  # (1 + k) / (99 + 1)
    assert 1 / 100 <= first.p_value <= 1


def test_no_window_cannot_tell():
    result = permutation_alignment(baseline().tolist(), [], TRIALS, seed=1)
    assert not result.can_tell and result.p_value is None and result.observed_stat is None
    assert result.reason.startswith("cannot tell") and "no vacuum window" in result.reason


def test_windows_outside_the_series_cannot_tell():
    result = permutation_alignment(baseline().tolist(), [Window("jobs", 900, 910)], TRIALS, seed=1)
    assert not result.can_tell and "no vacuum window" in result.reason


def test_window_covering_everything_cannot_tell():
    result = permutation_alignment(baseline().tolist(), [Window("jobs", -5, SECONDS + 5)], TRIALS, seed=1)
    assert not result.can_tell and "nothing is outside" in result.reason


def test_empty_and_all_nan_series_cannot_tell():
    assert "no value" in permutation_alignment([], [Window("t", 0, 1)]).reason
    assert "no value" in permutation_alignment([np.nan] * 5, [Window("t", 0, 1)]).reason


def test_inside_outside_split_uses_overlapping_seconds_and_drops_nan():
    series = pd.Series([1.0, 2.0, np.nan, 4.0, 5.0, 6.0], index=[10, 11, 12, 13, 14, 15])
    inside, outside = p99_inside_outside(series, [Window("jobs", 11.5, 13.2)])
    assert inside == [2.0, 4.0]  # seconds 11, (12 is NaN), 13
    assert outside == [1.0, 5.0, 6.0]


def test_a_zero_length_window_marks_its_second():
    inside, outside = p99_inside_outside([1.0, 9.0, 1.0], [Window("jobs", 1.4, 1.4)])
    assert inside == [9.0] and outside == [1.0, 1.0]


def test_grid_fills_gaps_and_keeps_the_worse_value_of_a_repeated_second():
    start, grid = second_grid({3.2: 1.0, 3.7: 5.0, 6.0: 2.0})
    assert start == 3
    assert grid[0] == 5.0 and np.isnan(grid[1]) and np.isnan(grid[2]) and grid[3] == 2.0


def test_p99_statistic_is_available():
    windows = windows_every(period=37, length=4)
    result = permutation_alignment(with_spikes_at(covered_seconds(windows)), windows, 500, seed=2,
                                   statistic="p99")
    assert result.statistic == "p99" and result.p_value < 0.05
