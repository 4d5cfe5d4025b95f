"""qload (Go, ``tools/qload``, built by ``make setup`` into ``.tools/bin``): the queue workload's
open-loop load in a compiled language, for the rates the Python harness cannot offer from one core.

It runs a queue design's own verbs — the adapter's very SQL for a Postgres design (enqueue, claim,
ack, each autocommitted as the adapter runs it, with the variant's session settings), LPUSH /
LMOVE / LREM for the Redis reliable queue (``pipeline`` commands a round trip) — with the
harness's contract: producers send one message per operation on a uniform open-loop schedule,
each payload carrying its *intended* send time (the harness's payload format), and consumers claim
closed loop, an empty claim sleeping 1 ms. Every send and every claimed message is logged
(``-samples``), so the record holds exact histograms built here, in the harness's shape:

- role ``producer`` (open loop at the offered rate): a send is in the phase of its intended time;
  ``latency`` = completion − intended send, ``schedule_lag`` and ``service_time``; a send that
  began after its phase ended is ``late`` (not achieved);
- role ``consumer`` (closed loop): ``end_to_end`` = claim returned − intended send, for every
  message whose intended send lies in the phase — claimed in it or after it, up to the drain
  cutoff (so a consumer falling behind cannot leave its slowest messages out); its items are the
  messages claimed inside the phase (their rate, against the producers', is the backlog growth);
  a message of the window never claimed by the cutoff is ``missed``; the per-second rows carry its
  p50 / p99 / max by the second each message was meant to be sent (a long window's time line).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
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

FIX = "make setup (needs go: it builds tools/qload into .tools/bin)"
SAMPLES = "samples.csv"
#: after the window, how long the consumers may take to claim what it sent (then: missed)
DRAIN_S = 10.0
#: qload's own lead-in before the first intended send (``main.go``: start = now + 50 ms)
LEAD_IN_S = 0.05


def qload_binary() -> str:
    return require_binary("qload", str(PROJECT_ROOT / ".tools" / "bin" / "qload"), FIX)


def source_version() -> str:
    """The sources' hash the setup stamped beside the binary (what was built), or "unknown"."""
    stamp = PROJECT_ROOT / ".tools" / "bin" / "qload.stamp"
    return stamp.read_text().strip() if stamp.is_file() else "unknown"


def dollar_params(statement: str) -> str:
    """An adapter's ``%s`` placeholders as ``$1, $2, ...`` (the extended protocol qload uses)."""
    parts = statement.split("%s")
    return "".join(part + (f"${i}" if i < len(parts) else "") for i, part in enumerate(parts, start=1))


@dataclass(frozen=True)
class QueueVerbs:
    """What qload runs: ``system`` "postgres" (``enqueue_sql`` with ``$1`` the payload,
    ``claim_sql`` returning (id, payload) with ``claim_params`` in order — "consumer", "batch" —
    ``ack_sql`` with ``$1`` the ids, "" when the claim removed them, ``settings`` for every
    session), "redis" (``key``, ``pipeline``) or "sqlite" (the adapter's ``?`` statements with
    their parameters named in order — ``enqueue_params``, ``claim_params``, ``ack_params`` of
    payload, now, consumer, batch, id — and its PRAGMAs as ``settings``)."""

    system: str
    enqueue_sql: str = ""
    claim_sql: str = ""
    claim_params: tuple[str, ...] = ("batch",)
    ack_sql: str = ""
    settings: dict[str, str] = field(default_factory=dict)
    key: str = ""
    pipeline: int = 1
    enqueue_params: tuple[str, ...] = ("payload",)
    ack_params: tuple[str, ...] = ("id", "consumer")

    def argv(self) -> list[str]:
        if self.system == "redis":
            return ["-system", "redis", "-key", self.key, "-pipeline", str(self.pipeline)]
        settings = ",".join(f"{name}={value}" for name, value in sorted(self.settings.items()))
        sqlite = (["-enqueue-params", ",".join(self.enqueue_params), "-ack-params", ",".join(self.ack_params)]
                  if self.system == "sqlite" else [])
        return ["-system", self.system, "-enqueue-sql", self.enqueue_sql, "-claim-sql", self.claim_sql,
                "-claim-params", ",".join(self.claim_params), "-ack-sql", self.ack_sql, *sqlite,
                *(["-settings", settings] if settings else [])]


class QloadLoad(ToolLoad):
    """``rate`` messages/s from ``producers`` for ``warmup_s + duration_s``, ``consumers``
    claiming ``batch`` at a time, against ``target`` (a libpq URL, or host:port for Redis)."""

    tool = "qload"

    def __init__(self, verbs: QueueVerbs, target: str, rate: float, producers: int, consumers: int, batch: int,
                 duration_s: float, warmup_s: float, seed: int = 42, binary: str | None = None):
        self.binary = binary or qload_binary()
        self.version = source_version()
        self.verbs, self.target, self.rate = verbs, target, float(rate)
        self.producers, self.consumers, self.batch = int(producers), int(consumers), int(batch)
        self.duration_s, self.warmup_s, self.seed = float(duration_s), float(warmup_s), int(seed)
        # a Go program's goroutines run on every core it may use: the load's set when placed
        self.client_cores = len(os.sched_getaffinity(0)) or 1

    def measured_offsets(self) -> tuple[float, float]:
        start = LEAD_IN_S + self.warmup_s
        return start, start + self.duration_s - end_margin(self.duration_s)

    def commands(self) -> list[ToolCommand]:
        argv = [self.binary, *self.verbs.argv(), "-target", self.target, "-rate", f"{self.rate:g}",
                "-producers", str(self.producers), "-consumers", str(self.consumers), "-batch", str(self.batch),
                "-warmup", _go_seconds(self.warmup_s), "-duration", _go_seconds(self.duration_s),
                "-drain", _go_seconds(DRAIN_S), "-seed", str(self.seed), "-samples", SAMPLES]
        return [ToolCommand("run", argv, timeout_s=self.warmup_s + self.duration_s + DRAIN_S + 60)]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "tool_loop": f"open at {self.rate:g}/s (latency from the intended send)",
                "tool_producers": self.producers, "tool_consumers": self.consumers, "tool_batch": self.batch}

    def run(self, process: ToolProcess) -> RunResult:
        (command,) = self.commands()
        output = process.run(command)
        report, error = reported("qload", output)
        sends, claims = read_samples(process.cwd / SAMPLES) if error is None else ([], [])
        result = samples_result(sends, claims, self.rate, self.producers, self.consumers, self.warmup_s,
                                self.duration_s)
        if error is None and report.get("errors"):
            error = f"qload: {report['errors']} failed operations (its stderr: {output.stderr.strip()[-300:]})"
        return finished(result, error, report, output)


class QloadBurnDown(QloadLoad):
    """The ceiling: ``consumers`` claiming ``batch`` at a time flat out from a backlog the caller
    prefilled (``-rate 0``, no producers) for ``warmup_s + duration_s``; its figure is the messages
    claimed inside the window. Empty claims inside it (the backlog ran out) are the record's
    ``idle_polls``: its rate is then the prefill's, a floor (``ran_dry``)."""

    def __init__(self, verbs: QueueVerbs, target: str, consumers: int, batch: int, duration_s: float,
                 warmup_s: float, seed: int = 42, binary: str | None = None):
        super().__init__(verbs, target, 0, 0, consumers, batch, duration_s, warmup_s, seed, binary)

    def commands(self) -> list[ToolCommand]:
        argv = [self.binary, *self.verbs.argv(), "-target", self.target, "-rate", "0", "-producers", "0",
                "-consumers", str(self.consumers), "-batch", str(self.batch), "-warmup", _go_seconds(self.warmup_s),
                "-duration", _go_seconds(self.duration_s), "-seed", str(self.seed), "-samples", SAMPLES]
        return [ToolCommand("run", argv, timeout_s=self.warmup_s + self.duration_s + 60)]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "tool_loop": "closed: burn-down of a prefilled queue"}

    def run(self, process: ToolProcess) -> RunResult:
        (command,) = self.commands()
        output = process.run(command)
        report, error = reported("qload", output)
        _, claims = read_samples(process.cwd / SAMPLES) if error is None else ([], [])
        result = burn_down_result(claims, self.consumers, self.warmup_s, self.duration_s,
                                  int(report.get("idle_polls_in_window") or 0))
        if error is None and report.get("errors"):
            error = f"qload: {report['errors']} failed operations (its stderr: {output.stderr.strip()[-300:]})"
        return finished(result, error, report, output)


def burn_down_result(claims: Any, consumers: int, warmup_s: float,
                     duration_s: float, idle_polls_in_window: int = 0) -> RunResult:
    """A burn-down's record material: the consumers' claims by the phase they returned in (items:
    messages; ops: claims), and each claim's round trip as its closed-loop ``service_time`` — role
    ``tool``, as a C tool's ceiling (pgbench's) is recorded."""
    tally = PhaseTally(warmup_s, duration_s, (("tool", "claim"),))
    claims = as_rows(claims)
    # a claim of a batch logs each of its messages: one round trip per distinct (began, returned)
    trips = np.unique(claims[:, 1:], axis=0)
    for phase, inside in tally.phase_masks(trips[:, 1]).items():
        tally.counts[("tool", "claim", phase)]["ops"] += int(np.count_nonzero(inside))
        tally.record_many_us("tool", "claim", "service_time", phase, (trips[inside, 1] - trips[inside, 0]) / 1000)
    returned = claims[:, 2]
    for phase, inside in tally.phase_masks(returned).items():
        tally.counts[("tool", "claim", phase)]["items"] += int(np.count_nonzero(inside))
        tally.count_per_second("tool", "claim", phase, "items", returned[inside])
    # empty claims inside the window: the backlog ran out, so the rate is the prefill's (a floor)
    tally.counts[("tool", "claim", "measure")]["idle_polls"] = idle_polls_in_window
    names = tuple(p.name for p in tally.phases)
    roles = [RoleInfo("tool", "claim", "closed", consumers, active_phases=names)]
    return RunResult(phases=tally.phases, roles=roles, workers=[], histograms=tally.histograms,
                     counts=tally.counts, timeseries=tally.frame(), status="complete", error=None, params={})


def _go_seconds(seconds: float) -> str:
    return f"{seconds:g}s"


def read_samples(path, kinds: tuple[str, ...] = ("send", "claim")) -> tuple[np.ndarray, ...]:
    """(sends, claims) — or the ``kinds`` asked for — as rows of (intended, began, done) ns since
    qload's start (its CSV: kind,intended_ns,began_ns,done_ns)."""
    import pandas as pd

    if path.stat().st_size == 0:  # nothing sent or claimed
        return tuple(np.zeros((0, 3), dtype=np.int64) for _ in kinds)
    rows = pd.read_csv(path, header=None, names=["kind", "intended", "began", "done"],
                       dtype={"kind": str, "intended": np.int64, "began": np.int64, "done": np.int64})
    return tuple(rows.loc[rows.kind == kind, ["intended", "began", "done"]].to_numpy(np.int64)
                 for kind in kinds)


def as_rows(events: Any) -> np.ndarray:
    """Events as an (n, 3) int64 array (a list of tuples, or already an array)."""
    return np.asarray(events, dtype=np.int64).reshape(-1, 3)


class _Tally(PhaseTally):
    """qload's events on the shared tally (``samples_result``)."""

    def __init__(self, warmup_s: float, duration_s: float):
        super().__init__(warmup_s, duration_s, (("producer", "enqueue"), ("consumer", "claim")))

    def claims(self, intended: np.ndarray, returned: np.ndarray) -> int:
        """Every claimed message: send → claim by the phase of its intended send, counted by the
        phase (and second) it was claimed in; returns how many were sent in the measured window."""
        for phase, inside in self.phase_masks(intended).items():
            waited_us = (returned[inside] - intended[inside]) / 1000
            self.record_many_us("consumer", "claim", "end_to_end", phase, waited_us)
            # over time, by the second each message was meant to be sent (a soak's p99 by minute)
            self.latency_per_second("consumer", "claim", phase, "end_to_end", intended[inside], waited_us)
        for phase, inside in self.phase_masks(returned).items():
            count = self.counts[("consumer", "claim", phase)]
            count["ops"] += int(np.count_nonzero(inside))
            count["items"] += int(np.count_nonzero(inside))
            self.count_per_second("consumer", "claim", phase, "items", returned[inside])
        return int(np.count_nonzero(self.phase_masks(intended)["measure"]))


def samples_result(sends: Any, claims: Any, rate: float,
                   producers: int, consumers: int, warmup_s: float, duration_s: float) -> RunResult:
    """The run's summary material from every send and claim (see the module docstring)."""
    tally = _Tally(warmup_s, duration_s)
    sends, claims = as_rows(sends), as_rows(claims)
    tally.open_loop_sends("producer", "enqueue", sends[:, 0], sends[:, 1], sends[:, 2])
    measured_sent = int(np.count_nonzero(tally.phase_masks(sends[:, 0])["measure"]))
    claimed_of_window = tally.claims(claims[:, 0], claims[:, 2])
    tally.counts[("consumer", "claim", "measure")]["missed"] = max(0, measured_sent - claimed_of_window)
    names = tuple(p.name for p in tally.phases)
    roles = [RoleInfo("producer", "enqueue", "open", producers, offered_rate=rate, active_phases=names),
             RoleInfo("consumer", "claim", "closed", consumers, active_phases=names)]
    return RunResult(phases=tally.phases, roles=roles, workers=[], histograms=tally.histograms,
                     counts=tally.counts, timeseries=tally.frame(), status="complete", error=None, params={})
