"""qload's churn mode (``-churn``): the co-location study's queue churn on a queue the Postgres
churn's pgbench cannot drive (the Redis reliable queue), from the same load CPU set.

Each of ``workers`` runs whole jobs — enqueue one message, claim one, ack it — on an open-loop
Poisson schedule, the workers together offering ``rate`` jobs/s (as pgbench ``-R`` schedules its
clients), so a queue with a backlog keeps its depth as the Postgres churn's one-transaction
script does. A job's latency runs from its intended start to its ack's return, pgbench's latency
under ``-R`` alike. Compiled, so the churn's load costs the load core what pgbench's does, not
what eight Python workers did (43-90 % of it, which left the bystanders' clients waiting).

``run`` gives every job as (ack returned, latency µs) with the return on CLOCK_MONOTONIC in
seconds (qload reports the monotonic instant its sample offsets count from; Python's
``time.monotonic`` reads the same clock), so the caller puts the jobs on its window's axis.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pglimits_core.load.tools.process import ToolCommand, ToolProcess
from pglimits_core.load.tools.qload import SAMPLES, QloadLoad, QueueVerbs, _go_seconds, read_samples
from pglimits_core.load.tools.tally import reported

#: qload's slack past the run before the harness kills it
TIMEOUT_MARGIN_S = 60.0


@dataclass
class ChurnJobs:
    """What a churn run did: every completed job as (ack returned, monotonic s; latency µs)."""

    jobs: list[tuple[float, int]] = field(default_factory=list)
    error: str | None = None
    reported: dict[str, Any] = field(default_factory=dict)


class QloadChurn(QloadLoad):
    """``workers`` running whole jobs at ``rate`` jobs/s together for ``duration_s`` against
    ``target`` (host:port for Redis, a libpq URL for a Postgres design). ``payload_bytes`` > 0 sizes
    every job alike (the Postgres churn's fixed size, so both sides move the same bytes per job);
    0 draws each from qload's size mix."""

    def __init__(self, verbs: QueueVerbs, target: str, rate: float, workers: int, duration_s: float,
                 seed: int = 42, binary: str | None = None, payload_bytes: int = 0):
        super().__init__(verbs, target, rate, 0, workers, 1, duration_s, 0.0, seed, binary)
        self.payload_bytes = int(payload_bytes)

    def commands(self) -> list[ToolCommand]:
        argv = [self.binary, *self.verbs.argv(), "-churn", "-target", self.target, "-rate", f"{self.rate:g}",
                "-producers", "0", "-consumers", str(self.consumers), "-batch", "1", "-warmup", "0s",
                "-duration", _go_seconds(self.duration_s), "-seed", str(self.seed), "-samples", SAMPLES,
                "-payload-bytes", str(self.payload_bytes)]
        return [ToolCommand("run", argv, timeout_s=self.duration_s + TIMEOUT_MARGIN_S)]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "tool_loop": f"open (Poisson) at {self.rate:g} jobs/s, "
                "a job = enqueue + claim + ack, latency from its intended start",
                "payload_bytes": self.payload_bytes or "qload's size mix"}

    def run(self, process: ToolProcess) -> ChurnJobs:  # type: ignore[override]
        (command,) = self.commands()
        output = process.run(command)
        report, error = reported("qload", output)
        if error is None and report.get("errors"):
            error = f"qload: {report['errors']} failed jobs (its stderr: {output.stderr.strip()[-300:]})"
        start_ns = report.get("start_monotonic_ns")
        if start_ns is None:
            return ChurnJobs([], error or "qload reported no start instant (rebuild it: make setup)", report)
        return ChurnJobs(job_samples(read_jobs(process.cwd / SAMPLES), int(start_ns)), error, report)


def read_jobs(path: Path) -> np.ndarray:
    """The churn's jobs as rows of (intended, began, done) ns from qload's start (kind ``job``)."""
    if not path.exists():
        return np.zeros((0, 3), dtype=np.int64)
    (jobs,) = read_samples(path, ("job",))
    return jobs


def job_samples(jobs: np.ndarray, start_ns: int) -> list[tuple[float, int]]:
    """(ack returned on the monotonic clock in s, intended start -> ack returned in µs), by return."""
    done = (start_ns + jobs[:, 2]) / 1e9
    latency = (jobs[:, 2] - jobs[:, 0]) // 1000
    order = np.argsort(done, kind="stable")
    return [(float(done[i]), int(latency[i])) for i in order]
