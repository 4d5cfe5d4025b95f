"""Time for the loops, injectable so schedule logic is tested without real time.

``MonotonicClock`` reads ``time.monotonic_ns()`` (CLOCK_MONOTONIC: system-wide on Linux, so
every worker process on the host shares one time line; never ``time.time()``, which jumps).
The unit tests pass a fake clock of their own (``tests/unit/fake_clock.py``).
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ns(self) -> int: ...

    def sleep_until(self, deadline_ns: int) -> None: ...


class MonotonicClock:
    """Real time. ``sleep_until`` oversleeps by the kernel's timer slack (~50-100 µs); that
    shows up as schedule lag (and so as open-loop latency), which is recorded, not hidden."""

    def now_ns(self) -> int:
        return time.monotonic_ns()

    def sleep_until(self, deadline_ns: int) -> None:
        remaining_ns = deadline_ns - time.monotonic_ns()
        if remaining_ns > 0:
            time.sleep(remaining_ns / 1e9)
