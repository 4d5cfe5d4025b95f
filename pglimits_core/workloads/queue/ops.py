"""Load operations for the queue study: adapters do the verbs, the driver owns the clock.

Producers stamp each payload with its *intended* send time (the open-loop schedule's start;
the actual start in a closed loop), so a producer running behind its schedule shows up in the
send → claim latency that consumers compute (claim returned − intended send; recorded under the
kind ``end_to_end``, see ``latency_names``: the ack is not in it) instead of hiding in it;
producers and consumers append every message id they enqueued / acknowledged to a ledger file
right after the call returned — one unbuffered ``write()`` per batch, so the ids survive a
SIGKILL of the worker (the OS is not crashing: no fsync) — and the parent proves exactly-once
accounting (nothing lost, nothing twice). A worker killed between an ack and its write leaves at
most that one batch unrecorded ("in doubt", never "lost").

Ledger lines: ``<wall-clock ns> <id> <id> ...`` — one line per batch; the time stamp lets a
crash drill see when a dead consumer's messages were acknowledged again.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from pglimits_core.datasets.messages import MessageGenerator, decode, stamp_batch
from pglimits_core.load import OpOutcome, current_worker, intended_start_ns
from pglimits_core.workloads.queue.latency_names import RECORDED_KIND
from pglimits_core.workloads.queue.systems.registry import make_adapter


class QueueOp:
    """Shared plumbing: an adapter opened in the worker, ids appended to ``ledger_dir`` per batch."""

    name = "queue"

    def __init__(self, system: str, url: str, options: dict[str, Any], batch: int,
                 ledger_dir: str, seed: int = 0):
        self.system, self.url, self.options = system, url, dict(options)
        self.batch, self.ledger_dir, self.seed = batch, ledger_dir, seed

    def open(self) -> None:
        worker = current_worker()
        self.tag = f"{worker.role}{worker.index}" if worker else "main"
        self.adapter = make_adapter(self.system, self.url, **self.options, worker_id=self.tag)
        self.adapter.open()
        # unbuffered append: each record() is one write() the kernel has before it returns
        path = Path(self.ledger_dir) / f"{self.name}-{self.tag}.ids"
        self.ledger = open(path, "ab", buffering=0)  # noqa: SIM115 - open for the worker's life, closed in close()

    def record(self, ids: list[str]) -> None:
        """Append one batch's ids to the ledger (call only after the system confirmed them)."""
        if ids:
            self.ledger.write(f"{time.time_ns()} {' '.join(ids)}\n".encode())

    def close(self) -> None:
        ledger = Path(self.ledger_dir)
        self.ledger.close()
        # the adapter's own counters (e.g. SQLite busy waits) live in the worker that did the
        # work; the parent sums these files (``read_worker_stats``)
        (ledger / f"{self.name}-{self.tag}.stats.json").write_text(json.dumps(self.adapter.stats()))
        self.adapter.close()


class EnqueueOp(QueueOp):
    name = "enqueue"

    def open(self) -> None:
        super().open()
        self.messages = MessageGenerator(self.seed, producer=self.tag)

    def __call__(self) -> int:
        payloads = stamp_batch(self.messages.templates(self.batch), intended_start_ns())
        self.adapter.enqueue(payloads)
        self.record([decode(p)[0] for p in payloads])  # only after the enqueue committed
        return len(payloads)


class ConsumeOp(QueueOp):
    """Claim up to ``batch`` messages, acknowledge them; report per message the send → claim
    latency (intended send to the claim's return, before the ack; recorded as
    ``latency_names.RECORDED_KIND``) and per call the claim's own round trip ("claim": the
    consumer is closed loop, so this is a service time, the driver's "service_time" being
    claim + ack).

    ``die_after_acks`` (crash drills only): worker ``die_worker`` of the role, after recording
    its ``die_after_acks``-th acknowledged batch, claims one more batch and SIGKILLs itself
    holding it — a deterministic kill of a consumer with claims in flight, and its ledger then
    holds exactly the ids of those acknowledged batches."""

    name = "consume"

    def __init__(self, *args: Any, die_after_acks: int | None = None, die_worker: int = 0,
                 **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.die_after_acks, self.die_worker = die_after_acks, die_worker

    def open(self) -> None:
        super().open()
        worker = current_worker()
        self.acks_left = (self.die_after_acks if worker and worker.index == self.die_worker
                          else None)

    def __call__(self) -> int | OpOutcome:
        started_ns = time.monotonic_ns()
        messages = self.adapter.claim(self.batch)
        if not messages:
            return 0
        claimed_ns = time.monotonic_ns()
        decoded = [decode(m.payload) for m in messages]
        self.adapter.ack([m.id for m in messages])
        self.record([message_id for message_id, _ in decoded])
        if self.acks_left is not None:
            self._count_down()
        return OpOutcome(len(messages), {RECORDED_KIND: [claimed_ns - enq for _, enq in decoded],
                                         "claim": [claimed_ns - started_ns]})

    def _count_down(self) -> None:
        self.acks_left -= 1
        if self.acks_left > 0:
            return
        held = [decode(m.payload)[0] for m in self.adapter.claim(self.batch)]
        # what it dies holding, for the drill's accounting (a SIGKILL runs no cleanup)
        (Path(self.ledger_dir) / f"killed-{self.tag}.json").write_text(
            json.dumps({"held": held, "killed_at_ns": time.time_ns(), "pid": os.getpid()}))
        os.kill(os.getpid(), signal.SIGKILL)


class ReapOp(QueueOp):
    """The design's reaper as its users run it: a periodic job, every ``every_s``, requeueing
    claims older than the visibility timeout (``adapter.reap``). Runs only in crash drills."""

    name = "reap"

    def __init__(self, *args: Any, visibility_timeout_s: float, every_s: float, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.visibility_timeout_s, self.every_s = visibility_timeout_s, every_s

    def open(self) -> None:
        super().open()
        self.next_at = time.monotonic() + self.every_s

    def __call__(self) -> int:
        if time.monotonic() < self.next_at:
            time.sleep(min(0.05, self.every_s))
            return 0  # an idle poll
        self.next_at = time.monotonic() + self.every_s
        return self.adapter.reap(self.visibility_timeout_s)


class SteadyEnqueueOp(EnqueueOp):
    """Enqueue only while the backlog is under ``target_depth``: producers rate-limited by the
    queue itself, so the depth oscillates around the target (the SQLite seed's steady state).

    The depth is re-read every ``check_s`` (a count is not free) and tracked locally between."""

    def __init__(self, *args: Any, target_depth: int, check_s: float = 0.05, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.target_depth, self.check_s = target_depth, check_s

    def open(self) -> None:
        super().open()
        self.known_depth, self.checked_at = 0, float("-inf")

    def __call__(self) -> int:
        now = time.monotonic()
        if now - self.checked_at >= self.check_s:
            self.known_depth, self.checked_at = self.adapter.depth(), now
        if self.known_depth >= self.target_depth:
            return 0  # an idle poll: the driver backs off and does not count it as work
        enqueued = super().__call__()
        self.known_depth += enqueued
        return enqueued
