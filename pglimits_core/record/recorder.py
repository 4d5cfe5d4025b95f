"""What one worker records while it runs, and the picklable result it sends home.

A worker owns one ``Recorder``. Per latency kind ("latency", "service_time", "schedule_lag",
or an operation's own kinds such as "end_to_end") and per phase it keeps one 3-digit HDR
histogram; per kind, phase and second-since-run-start one 2-digit histogram for the time
series; and per phase and second the counts (ops, items, idle polls, errors). Only encoded
histograms cross the process boundary (see ``histograms``); values are in microseconds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

from pglimits_core.record import histograms as hist

NS_PER_S = 1_000_000_000
#: Index of each count in ``WorkerResult.second_counts`` values.
COUNT_FIELDS = ("ops", "items", "idle_polls", "errors")


@dataclass
class WorkerResult:
    """Everything one worker measured. ``status`` is "ok" or "failed" (``error`` says why)."""

    role: str
    worker: int
    op: str
    status: str = "ok"
    error: str | None = None
    phase_histograms: dict[tuple[str, str], bytes] = field(default_factory=dict)
    second_histograms: dict[tuple[str, str, int], bytes] = field(default_factory=dict)
    second_counts: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    missed: dict[str, int] = field(default_factory=dict)
    late: dict[str, int] = field(default_factory=dict)
    clamped: int = 0
    error_samples: dict[str, str] = field(default_factory=dict)
    ended_by: str = ""  # "duration" | "max_ops" | "stop" (see load.loops)


class Recorder:
    """Per-worker histograms and counters; ``run_start_ns`` anchors the 1-s buckets."""

    def __init__(self, role: str, worker: int, op: str, run_start_ns: int):
        self.role, self.worker, self.op = role, worker, op
        self.run_start_ns = run_start_ns
        self.phase_hists: dict[tuple[str, str], HdrHistogram] = {}
        self.second_hists: dict[tuple[str, str, int], HdrHistogram] = {}
        self.counts: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        self.missed: dict[str, int] = defaultdict(int)
        self.late: dict[str, int] = defaultdict(int)
        self.clamped = 0
        self.error_samples: dict[str, str] = {}

    def second_of(self, when_ns: int) -> int:
        """Whole seconds since the run's common start (negative never happens in practice)."""
        return (when_ns - self.run_start_ns) // NS_PER_S

    def record_op(self, phase: str, done_ns: int, items: int, latencies_ns: dict[str, int]) -> None:
        """One completed operation that did work; ``latencies_ns`` maps kind -> duration (ns)."""
        second = self.second_of(done_ns)
        counts = self.counts[(phase, second)]
        counts[0] += 1
        counts[1] += items
        for kind, duration_ns in latencies_ns.items():
            self._record_value(kind, phase, second, hist.ns_to_us(duration_ns))

    def record_extra(self, phase: str, done_ns: int, extra_ns: dict[str, list[int]]) -> None:
        """Latencies an operation computed itself (e.g. end-to-end from payload timestamps)."""
        second = self.second_of(done_ns)
        for kind, durations in extra_ns.items():
            for duration_ns in durations:
                self._record_value(kind, phase, second, hist.ns_to_us(duration_ns))

    def record_idle(self, phase: str, done_ns: int) -> None:
        """An operation that found nothing to do (empty queue): not throughput, not latency."""
        self.counts[(phase, self.second_of(done_ns))][2] += 1

    def record_error(self, phase: str, done_ns: int, error: BaseException) -> None:
        self.counts[(phase, self.second_of(done_ns))][3] += 1
        self.error_samples.setdefault(type(error).__name__, str(error)[:500])

    def record_missed(self, phase: str, count: int) -> None:
        """Open-loop operations whose intended start passed but which were never started."""
        self.missed[phase] += count

    def record_late(self, phase: str) -> None:
        """An open-loop operation of ``phase`` that actually started after the phase ended."""
        self.late[phase] += 1

    def _record_value(self, kind: str, phase: str, second: int, value_us: int) -> None:
        phase_hist = self.phase_hists.get((kind, phase))
        if phase_hist is None:
            phase_hist = self.phase_hists[(kind, phase)] = hist.new_histogram()
        second_hist = self.second_hists.get((kind, phase, second))
        if second_hist is None:
            second_hist = hist.new_histogram(hist.SECOND_DIGITS)
            self.second_hists[(kind, phase, second)] = second_hist
        self.clamped += hist.record_us(phase_hist, value_us)
        hist.record_us(second_hist, value_us)

    def result(self, status: str = "ok", error: str | None = None) -> WorkerResult:
        """The encoded, picklable record of this worker."""
        return WorkerResult(
            role=self.role, worker=self.worker, op=self.op, status=status, error=error,
            phase_histograms={key: hist.encode(h) for key, h in self.phase_hists.items()},
            second_histograms={key: hist.encode(h) for key, h in self.second_hists.items()},
            second_counts={key: list(value) for key, value in self.counts.items()},
            missed=dict(self.missed), late=dict(self.late), clamped=self.clamped, error_samples=dict(self.error_samples),
        )
