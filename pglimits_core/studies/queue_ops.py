"""Load operations for the queue study: adapters do the verbs, the driver owns the clock.

Producers stamp each payload with its *intended* send time (the open-loop schedule's start;
the actual start in a closed loop), so a producer running behind its schedule shows up in the
end-to-end latency that consumers compute (claimed − intended send) instead of hiding in it;
consumers and keep every message id they
acknowledged so the parent can prove exactly-once accounting (nothing lost, nothing twice).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pglimits_core.datasets.messages import MessageGenerator, decode, stamp_batch
from pglimits_core.load import OpOutcome, current_worker, intended_start_ns
from pglimits_core.workloads.queue.registry import make_adapter


class QueueOp:
    """Shared plumbing: an adapter opened in the worker, ids written to ``ledger_dir`` at close."""

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
        self.ids: list[str] = []

    def close(self) -> None:
        ledger = Path(self.ledger_dir)
        (ledger / f"{self.name}-{self.tag}.ids").write_text("\n".join(self.ids))
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
        self.ids.extend(decode(p)[0] for p in payloads)  # only after the enqueue committed
        return len(payloads)


class ConsumeOp(QueueOp):
    """Claim up to ``batch`` messages, acknowledge them; report per message the end-to-end
    latency (intended send to claimed) and per call the claim's own round trip ("claim": the
    consumer is closed loop, so this is a service time, the driver's "service_time" being
    claim + ack)."""

    name = "consume"

    def __call__(self) -> int | OpOutcome:
        started_ns = time.monotonic_ns()
        messages = self.adapter.claim(self.batch)
        if not messages:
            return 0
        claimed_ns = time.monotonic_ns()
        decoded = [decode(m.payload) for m in messages]
        self.adapter.ack([m.id for m in messages])
        self.ids.extend(message_id for message_id, _ in decoded)
        return OpOutcome(len(messages), {"end_to_end": [claimed_ns - enq for _, enq in decoded],
                                         "claim": [claimed_ns - started_ns]})


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
