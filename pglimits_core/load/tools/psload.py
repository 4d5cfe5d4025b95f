"""psload (Go, ``tools/psload``, built by ``make setup`` into ``.tools/bin``): the pub/sub
workload's open-loop load in a compiled language, for the fan-outs the Python harness cannot
receive from one load core (50 subscriber processes share it, so its rates are the load's floor).

It runs each system's own verbs — ``SELECT pg_notify(channel, payload)`` autocommitted (one
publish, one transaction) and ``LISTEN`` on a connection per subscriber; ``PUBLISH`` and
``SUBSCRIBE`` — with the harness's contract: publishers publish one message per operation on a
uniform open-loop schedule, each payload carrying its publisher, sequence number and *intended*
publish time; every subscriber is subscribed before the first publish, and keeps reading after
the window until it has every message meant for the window or the drain cutoff passes. psload
accounts message by message (expected, delivered, lost, duplicated, reordered, per subscriber)
and measures delivery = receipt − intended publish over every subscriber's first receipt of every
message meant for the window (exact, nearest-rank percentiles); the record's outcome carries that
in the fan-out study's shape (``delivery``, ``lost``, ``not_received_by_cutoff``,
``delivered_ratio``...), so a capacity reading judges a psload point as it judges the harness's.
Its raw sends and deliveries (``-samples``) become the record's histograms:

- role ``publisher`` (open loop at the offered rate): a publish is in the phase of its intended
  time; ``latency`` = completion − intended, ``schedule_lag``, ``service_time``; a publish that began
  after its phase ended is ``late``;
- role ``subscriber`` (closed loop, one per subscriber): ``delivery`` over the messages meant for the
  window; its items are those deliveries, by the phase they were received in.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from pglimits_core.config import PROJECT_ROOT
from pglimits_core.load.tools.process import (
    ToolCommand,
    ToolLoad,
    ToolProcess,
    end_margin,
    require_binary,
)
from pglimits_core.load.tools.tally import PhaseTally, finished, reported
from pglimits_core.record.results import RoleInfo, RunResult

FIX = "make setup (needs go: it builds tools/psload into .tools/bin)"
SAMPLES = "psload-samples"
#: after the window, how long the subscribers may take to receive what it published
DRAIN_S = 10.0
#: psload's own lead-in before the first intended publish (``main.go``: start = now + 50 ms)
LEAD_IN_S = 0.05
SYSTEMS = ("postgres", "redis")


def psload_binary() -> str:
    return require_binary("psload", str(PROJECT_ROOT / ".tools" / "bin" / "psload"), FIX)


def source_version() -> str:
    """The sources' hash the setup stamped beside the binary (what was built), or "unknown"."""
    stamp = PROJECT_ROOT / ".tools" / "bin" / "psload.stamp"
    return stamp.read_text().strip() if stamp.is_file() else "unknown"


class PsloadLoad(ToolLoad):
    """``rate`` messages/s from ``publishers`` for ``warmup_s + duration_s`` on ``channel``, each
    received by ``subscribers`` connections, against ``target`` (a libpq URL, or host:port for
    Redis); ``rate`` 0: closed loop, each publisher flat out (a ceiling)."""

    tool = "psload"

    def __init__(self, system: str, target: str, channel: str, rate: float, publishers: int, subscribers: int,
                 payload_bytes: int, duration_s: float, warmup_s: float, settings: dict[str, str] | None = None,
                 binary: str | None = None):
        if system not in SYSTEMS:
            raise ValueError(f"psload drives {' and '.join(SYSTEMS)}, not {system!r}")
        self.binary = binary or psload_binary()
        self.version = source_version()
        self.system, self.target, self.channel, self.rate = system, target, channel, float(rate)
        self.publishers, self.subscribers, self.payload_bytes = int(publishers), int(subscribers), int(payload_bytes)
        self.duration_s, self.warmup_s, self.settings = float(duration_s), float(warmup_s), dict(settings or {})
        # a Go program's goroutines run on every core it may use: the load's set when placed
        self.client_cores = len(os.sched_getaffinity(0)) or 1

    def measured_offsets(self) -> tuple[float, float]:
        start = LEAD_IN_S + self.warmup_s
        return start, start + self.duration_s - end_margin(self.duration_s)

    def commands(self) -> list[ToolCommand]:
        settings = ",".join(f"{name}={value}" for name, value in sorted(self.settings.items()))
        argv = [self.binary, "-system", self.system, "-target", self.target, "-channel", self.channel,
                "-rate", f"{self.rate:g}", "-publishers", str(self.publishers), "-subscribers", str(self.subscribers),
                "-payload", str(self.payload_bytes), "-warmup", f"{self.warmup_s:g}s",
                "-duration", f"{self.duration_s:g}s", "-drain", f"{DRAIN_S:g}s", "-samples", SAMPLES,
                *(["-settings", settings] if settings else [])]
        return [ToolCommand("run", argv, timeout_s=self.warmup_s + self.duration_s + DRAIN_S + 60)]

    def describe(self) -> dict[str, Any]:
        loop = (f"open at {self.rate:g}/s (delivery from the intended publish)" if self.rate
                else "closed, flat out (delivery from the publish)")
        return {**super().describe(), "tool_loop": loop,
                "tool_publishers": self.publishers, "tool_subscribers": self.subscribers}

    def run(self, process: ToolProcess) -> RunResult:
        (command,) = self.commands()
        output = process.run(command)
        report, error = reported("psload", output)
        sends, deliveries = read_samples(process.cwd / SAMPLES) if error is None else (_empty(3), _empty(2))
        result = samples_result(sends, deliveries, self.rate, self.publishers, self.subscribers, self.warmup_s,
                                self.duration_s)
        if error is None and report.get("publish_errors"):
            error = f"psload: {report['publish_errors']} failed publishes (its stderr: {output.stderr.strip()[-300:]})"
        return finished(result, error, report, output)


def _empty(columns: int) -> np.ndarray:
    return np.zeros((0, columns), dtype=np.int64)


def read_samples(directory: Path) -> tuple[np.ndarray, np.ndarray]:
    """(sends as rows of intended, began, done ns since psload's start; deliveries as rows of
    intended ms since the start, delivery µs)."""
    sends = np.fromfile(directory / "sends.bin", dtype="<i8").reshape(-1, 3)
    deliveries = np.fromfile(directory / "deliveries.bin", dtype="<i4").reshape(-1, 2).astype(np.int64)
    return sends, deliveries


def outcome_of(reported: dict[str, Any], subscribers: int) -> dict[str, Any]:
    """The fan-out study's outcome shape (``pubsub.points.judge``) from psload's own report."""
    accounting = dict(reported.get("accounting") or {})
    delivery = reported.get("delivery") or {}
    ms = {f"{key[:-3]}_ms": (None if value is None else value / 1000) for key, value in delivery.items()
          if key.endswith("_us")}
    return {**accounting, "subscribers": subscribers, "published": reported.get("published"),
            "published_in_window": reported.get("published_in_window"),
            "published_per_s": reported.get("published_per_s"), "deliveries_per_s": reported.get("deliveries_per_s"),
            "delivery": {"count": delivery.get("count", 0), **ms},
            "subscriber_errors": {s["subscriber"]: s["error"] for s in accounting.get("per_subscriber", [])
                                  if s.get("error")}}


class _Tally(PhaseTally):
    """psload's events on the shared tally (``samples_result``)."""

    def __init__(self, warmup_s: float, duration_s: float):
        super().__init__(warmup_s, duration_s, (("publisher", "publish"), ("subscriber", "receive")))

    def publish_all(self, sends: np.ndarray) -> None:
        """Every publish (rows of intended, began, done ns): open loop, by its intended time."""
        self.open_loop_sends("publisher", "publish", sends[:, 0], sends[:, 1], sends[:, 2])

    def deliver_all(self, intended_ms: np.ndarray, delivery_us: np.ndarray) -> None:
        """Every first receipt of a message meant for the window (psload logs no other): its
        delivery latency into the window's histogram, counted in the phase (and second) it arrived in."""
        self.record_many_us("subscriber", "receive", "delivery", "measure", delivery_us.astype(np.float64))
        received_ns = intended_ms * 1e6 + delivery_us * 1e3
        for phase, inside in self.phase_masks(received_ns).items():
            count = self.counts[("subscriber", "receive", phase)]
            count["ops"] += int(np.count_nonzero(inside))
            count["items"] += int(np.count_nonzero(inside))
            self.count_per_second("subscriber", "receive", phase, "items", received_ns[inside])


def samples_result(sends: np.ndarray, deliveries: np.ndarray, rate: float, publishers: int, subscribers: int,
                   warmup_s: float, duration_s: float) -> RunResult:
    """The run's summary material from every publish and every delivery (the module docstring)."""
    tally = _Tally(warmup_s, duration_s)
    tally.publish_all(sends.astype(np.int64).reshape(-1, 3))
    tally.deliver_all(*deliveries.astype(np.int64).reshape(-1, 2).T)
    names = tuple(p.name for p in tally.phases)
    roles = [RoleInfo("publisher", "publish", "open" if rate else "closed", publishers, offered_rate=rate or None,
                      active_phases=names),
             RoleInfo("subscriber", "receive", "closed", subscribers, active_phases=names)]
    return RunResult(phases=tally.phases, roles=roles, workers=[], histograms=tally.histograms,
                     counts=tally.counts, timeseries=tally.frame(), status="complete", error=None, params={})
