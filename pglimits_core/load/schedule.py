"""Open-loop schedules: the intended start time of every operation, decided in advance.

Pure functions of (rate, worker, seed, window) — no clock — so they are tested exactly.
The role's rate is split across its workers: each worker offers ``rate / workers``.
Uniform: worker ``i`` of ``n`` is offset by ``i/n`` of its interval, so the role's combined
arrivals are evenly spaced. Poisson: exponential gaps from a ``random.Random`` seeded by
(seed, role, worker, window), so a rerun offers exactly the same arrivals.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class Window:
    """A stretch ``[start_ns, end_ns)`` of one phase in which a role is active."""

    phase: str
    start_ns: int
    end_ns: int


def phase_windows(phases, active_phases: tuple[str, ...], run_start_ns: int) -> list[Window]:
    """Absolute windows of the phases a role runs in (``active_phases`` empty: all)."""
    windows, start_ns = [], run_start_ns
    for phase in phases:
        end_ns = start_ns + round(phase.duration_s * NS_PER_S)
        if not active_phases or phase.name in active_phases:
            windows.append(Window(phase.name, start_ns, end_ns))
        start_ns = end_ns
    return windows


def uniform_starts(window: Window, rate: float, worker: int, workers: int) -> Iterator[int]:
    """Evenly spaced intended starts (ns) for one worker inside the window."""
    interval_ns = workers * NS_PER_S / rate
    k = 0
    while True:
        intended_ns = window.start_ns + round((k + worker / workers) * interval_ns)
        if intended_ns >= window.end_ns:
            return
        yield intended_ns
        k += 1


def poisson_starts(window: Window, rate: float, worker: int, workers: int,
                   seed_key: str) -> Iterator[int]:
    """Poisson arrivals (ns) at ``rate / workers`` for one worker, reproducible by seed."""
    rng = random.Random(seed_key)
    per_worker_rate = rate / workers
    offset_s = rng.expovariate(per_worker_rate)
    while (intended_ns := window.start_ns + round(offset_s * NS_PER_S)) < window.end_ns:
        yield intended_ns
        offset_s += rng.expovariate(per_worker_rate)


def intended_starts(window: Window, rate: float, arrival: str, worker: int, workers: int,
                    seed: int, role: str) -> Iterator[int]:
    """The schedule of one worker of an open-loop role in one window."""
    if arrival == "poisson":
        return poisson_starts(window, rate, worker, workers, f"{seed}/{role}/{worker}/{window.phase}")
    return uniform_starts(window, rate, worker, workers)
