"""A clock that only moves when told to: schedule logic tested without real time."""

from __future__ import annotations


class ManualClock:
    """A fake clock: ``sleep_until`` jumps forward; ``advance`` simulates work taking time."""

    def __init__(self, start_ns: int = 0):
        self.now = start_ns

    def now_ns(self) -> int:
        return self.now

    def sleep_until(self, deadline_ns: int) -> None:
        self.now = max(self.now, deadline_ns)

    def advance(self, duration_ns: int) -> None:
        self.now += duration_ns
