"""The unit of work: an operation that workload adapters fill in and the driver times.

Contract (YCSB's DBWrapper idea: timing lives in one place, no adapter can get it wrong)::

    class Operation(Protocol):
        name: str                      # "enqueue", "claim", "query" — names the histograms
        def open(self) -> None: ...    # runs inside the worker process: connect, prepare
        def __call__(self) -> OpOutcome | int | None: ...   # one operation, no timing
        def close(self) -> None: ...

The object put in a ``Role`` is a *template*: it is pickled to every worker process (so its
``__init__`` only stores configuration such as a DSN) and ``open()`` runs there, so each worker
owns its own connection. Inside ``open()`` an operation may call ``current_worker()`` for its
role name, worker index and seed (e.g. to seed its payload generator).

What ``__call__`` returns: ``None`` = one item done; an ``int`` n = n items done, 0 meaning
"nothing to do" (empty queue — an *idle poll*, counted apart from throughput, never timed);
an ``OpOutcome`` adds latencies the operation computed itself, in nanoseconds, e.g.
``{"end_to_end": [claim_done_ns - enqueued_ns, ...]}`` from ``time.monotonic_ns()`` stamps
carried in payloads (CLOCK_MONOTONIC is system-wide on Linux, so stamps taken in different
processes on one host compare). The driver records each key as its own latency kind.
An exception from ``__call__`` is an error: counted per phase; the worker fails once it has
more than its role's ``max_errors``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass
class OpOutcome:
    """Result of one operation: ``items`` done (0 = idle poll) and self-measured latencies (ns)."""

    items: int = 1
    extra_latencies_ns: dict[str, list[int]] = field(default_factory=dict)


@runtime_checkable
class Operation(Protocol):
    name: str

    def open(self) -> None: ...

    def __call__(self) -> OpOutcome | int | None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class WorkerContext:
    """Who this worker is: role name, index within the role, role's worker count, seed."""

    role: str
    index: int
    workers: int
    seed: int


_current: WorkerContext | None = None
_intended_start_ns: int | None = None
_run_start_ns: int | None = None


def current_worker() -> WorkerContext | None:
    """The context of the worker process this code runs in (None outside a worker)."""
    return _current


def set_current_worker(context: WorkerContext | None) -> None:
    global _current
    _current = context


def intended_start_ns() -> int | None:
    """When the operation now running was *meant* to start (``time.monotonic_ns()`` clock).

    Set by the driver's executor around each call: the open loop's scheduled start, or the
    actual start in a closed loop. An operation that stamps a message crossing processes (an
    enqueue whose claim is timed end to end) stamps this, not "now": a producer running behind
    its schedule must show up in the end-to-end latency, not hide in it."""
    return _intended_start_ns


def set_intended_start(when_ns: int | None) -> None:
    global _intended_start_ns
    _intended_start_ns = when_ns


def run_start_ns() -> int | None:
    """When the run's first phase starts (``time.monotonic_ns()`` clock; the common start every
    worker waited for), None before it. An operation that classes what it *receives* by the
    phase the sender meant it for (a subscriber: by each message's intended publish time, not by
    when it arrived) computes the phase windows from this."""
    return _run_start_ns


def set_run_start(when_ns: int | None) -> None:
    global _run_start_ns
    _run_start_ns = when_ns


def normalize_outcome(outcome: OpOutcome | int | None) -> OpOutcome:
    """Turn whatever an operation returned into an ``OpOutcome``."""
    if outcome is None:
        return OpOutcome()
    if isinstance(outcome, OpOutcome):
        return outcome
    if isinstance(outcome, bool) or not isinstance(outcome, int) or outcome < 0:
        raise TypeError(f"operation returned {outcome!r}; expected None, an int >= 0 or OpOutcome")
    return OpOutcome(items=outcome)
