"""Do a bystander's latency spikes line up with vacuum windows? A circular-shift permutation test.

Usage::

    from pglimits_core.analysis.alignment import p99_inside_outside, permutation_alignment

    # per_second_p99: a pandas Series indexed by second (or a list: second = position), on the
    # same time axis as the windows (``Window(table, start_s, end_s)`` from samplers.vacuum)
    inside, outside = p99_inside_outside(per_second_p99, windows)   # the per-second values
    result = permutation_alignment(per_second_p99, windows, trials=10_000, seed=7)
    result.observed_stat, result.p_value      # None and ``result.reason`` when it cannot tell

The statistic is ``mean(per-second p99 inside windows) - mean(outside)`` (``statistic="p99"``
or ``"median"`` summarise each side differently). The null moves the same windows by one
uniform random circular offset (whole seconds): their lengths, spacing and count stay, only
their place in time changes, so a series that is slow for reasons unrelated to the windows'
timing is not called aligned. p = (1 + #null >= observed) / (trials + 1). A series of n
seconds has only n distinct shifts, so p cannot drop much below 1/n.

A second ``s`` (covering ``[s, s+1)``) is inside when it overlaps a window; a second with no
value (NaN: no sample) is in neither group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

STATISTICS: dict[str, Callable[[np.ndarray], float]] = {
    "mean": lambda values: float(np.mean(values)),
    "median": lambda values: float(np.median(values)),
    "p99": lambda values: float(np.percentile(values, 99)),
}
#: relative tolerance for a null statistic to count as reaching the observed one (float noise)
TIE_TOLERANCE = 1e-9


class Split(NamedTuple):
    """The per-second values inside vacuum windows and outside them (NaN seconds dropped)."""

    inside: list[float]
    outside: list[float]


@dataclass(frozen=True)
class Result:
    """The test's answer; ``p_value`` None (with ``reason``) when the data cannot tell."""

    observed_stat: float | None
    p_value: float | None
    trials: int
    reason: str | None = None
    statistic: str = "mean"
    inside_seconds: int = 0
    outside_seconds: int = 0
    seconds: int = 0  # the series' length: also the number of distinct shifts

    @property
    def can_tell(self) -> bool:
        return self.p_value is not None


def second_grid(series: Any) -> tuple[int, np.ndarray]:
    """``(first second, values per second)``: a Series's index (or a mapping's keys, or a
    list's positions) floored to whole seconds; missing seconds NaN; a repeated second keeps
    its largest value (the worse p99)."""
    if isinstance(series, Mapping):
        index, values = list(series.keys()), list(series.values())
    elif hasattr(series, "to_numpy") and hasattr(series, "index"):  # a pandas Series
        index, values = list(series.index), list(series.to_numpy())
    else:
        values = list(series)
        index = list(range(len(values)))
    if not values:
        return 0, np.array([], dtype=float)
    seconds = np.floor(np.asarray(index, dtype=float)).astype(int)
    start = int(seconds.min())
    grid = np.full(int(seconds.max()) - start + 1, np.nan)
    for second, value in zip(seconds - start, np.asarray(values, dtype=float), strict=True):
        grid[second] = value if np.isnan(grid[second]) else np.fmax(grid[second], value)
    return start, grid


def window_mask(start: int, length: int, windows: Iterable[Any]) -> np.ndarray:
    """True for each second ``[s, s+1)`` that overlaps a window (a zero-length window marks the
    second it falls in)."""
    seconds = np.arange(start, start + length, dtype=float)
    mask = np.zeros(length, dtype=bool)
    for window in windows:
        end = max(float(window.end_s), float(window.start_s) + 1e-9)
        mask |= (seconds < end) & (seconds + 1 > float(window.start_s))
    return mask


def p99_inside_outside(per_second_p99: Any, windows: Iterable[Any]) -> Split:
    """The per-second p99 values of seconds inside the windows, and of the others."""
    start, values = second_grid(per_second_p99)
    mask = window_mask(start, len(values), windows)
    valid = ~np.isnan(values)
    return Split(values[mask & valid].tolist(), values[~mask & valid].tolist())


def cannot_tell(values: np.ndarray, mask: np.ndarray) -> str | None:
    """Why no comparison is possible, or None."""
    valid = ~np.isnan(values)
    if not valid.any():
        return "cannot tell: the latency series has no value"
    if not (mask & valid).any():
        return "cannot tell: no vacuum window overlaps a second with a latency value"
    if not (~mask & valid).any():
        return "cannot tell: vacuum windows cover every second with a value, so nothing is outside"
    return None


def shift_statistics(values: np.ndarray, mask: np.ndarray, summarise: Callable[[np.ndarray], float]) -> np.ndarray:
    """The statistic for the mask rolled by every whole-second offset 0..n-1 (NaN where a shift
    leaves one side without values). Index 0 is the observed placement."""
    valid = ~np.isnan(values)
    result = np.full(len(values), np.nan)
    for offset in range(len(values)):
        rolled = np.roll(mask, offset)
        inside, outside = values[rolled & valid], values[~rolled & valid]
        if inside.size and outside.size:
            result[offset] = summarise(inside) - summarise(outside)
    return result


def permutation_alignment(series: Any, windows: Iterable[Any], trials: int = 10_000, seed: int = 0,
                          statistic: str = "mean") -> Result:
    """Is latency higher inside the windows than their random circular shifts make it?
    ``trials`` offsets are drawn uniformly from the n shifts (with replacement); a shift that
    leaves one side empty counts as reaching the observed statistic (conservative)."""
    summarise = STATISTICS[statistic]
    start, values = second_grid(series)
    mask = window_mask(start, len(values), list(windows))
    valid = ~np.isnan(values)
    counts = {"statistic": statistic, "inside_seconds": int((mask & valid).sum()),
              "outside_seconds": int((~mask & valid).sum()), "seconds": len(values)}
    problem = cannot_tell(values, mask)
    if problem is not None:
        return Result(None, None, 0, problem, **counts)
    by_shift = shift_statistics(values, mask, summarise)
    observed = float(by_shift[0])
    null = by_shift[np.random.default_rng(seed).integers(0, len(values), size=trials)]
    reach = np.isnan(null) | (null >= observed - TIE_TOLERANCE * max(1.0, abs(observed)))
    return Result(observed, (1 + int(reach.sum())) / (trials + 1), trials, None, **counts)
