"""The load under the backup drill's hot backup: one producer and ``CONSUMERS`` consumers, every
event in a ledger.

They run in a ``load.BackgroundLoad`` (the driver's workers, open loops: the timing is the
driver's) from before the backup until after it. Every ledger line is one event, ``<kind>
<monotonic ns> <id> ...``: ``enq`` once the system confirmed an enqueue, ``claim`` once a claim
returned, ``ack`` once the acknowledgement returned — stamped after the system answered, so a
stamp before the backup's start means the event had happened by then, on the clock the drill
reads its backup times from (``time.monotonic_ns``, system-wide on Linux). A line cut by a
kill was never confirmed. A consumer holds each claim ``work_s`` before acknowledging it, as a
job takes time, so some claims are in flight at the backup.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pglimits_core.datasets.messages import decode
from pglimits_core.load import BackgroundLoad, OpenLoop, Role
from pglimits_core.workloads.queue.ops import EnqueueOp, QueueOp

CONSUMERS = 4  # they share the rate: one holding claims 5 ms takes ~170 msg/s at most
STOP_LIMIT_S = 10.0  # a worker finishes its current claim/ack within this
READY_LIMIT_S = 30.0  # every worker must have connected before the load clock starts

Event = tuple[str, int, list[str]]


class EventLedger:
    """Ledger lines ``<kind> <monotonic ns> <ids>`` instead of the sweeps' wall-clock batches."""

    def event(self, kind: str, ids: list[str]) -> None:
        self.ledger.write(f"{kind} {time.monotonic_ns()} {' '.join(ids)}\n".encode())


class LedgeredEnqueueOp(EventLedger, EnqueueOp):
    """Enqueue one message per call; ``enq`` once the system confirmed it."""

    def record(self, ids: list[str]) -> None:
        self.event("enq", ids)


class HoldingConsumeOp(EventLedger, QueueOp):
    """Claim the variant's batch, hold it ``work_s`` (the job), acknowledge it."""

    name = "consume"

    def __init__(self, *args: Any, work_s: float, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.work_s = work_s

    def __call__(self) -> int:
        claimed = self.adapter.claim(self.batch)
        if not claimed:
            return 0  # an idle poll (never, in practice: the queue is prefilled to its size)
        ids = [decode(m.payload)[0] for m in claimed]
        self.event("claim", ids)
        time.sleep(self.work_s)
        self.adapter.ack([m.id for m in claimed])
        self.event("ack", ids)
        return len(claimed)


def backup_load(v: Any, url: str, ledger_dir: Path, rate: float, seed: int, work_s: float,
                max_s: float) -> BackgroundLoad:
    """``rate`` msg/s each side: the producer one message per enqueue, the consumers' claims
    of the variant's batch at ``rate / batch`` claims/s between them (the queue holds its size).
    The caller starts and stops it; ``max_s`` bounds it if it never does."""
    ledger = str(ledger_dir)
    producer = LedgeredEnqueueOp(v.system, url, v.options, 1, ledger, seed)
    consumer = HoldingConsumeOp(v.system, url, v.options, v.batch, ledger, seed, work_s=work_s)
    roles = [Role("backup-producer", producer, loop=OpenLoop(rate=rate, drain_s=0.0)),
             Role("backup-consumer", consumer, workers=CONSUMERS,
                  loop=OpenLoop(rate=rate / v.batch, drain_s=0.0))]
    return BackgroundLoad(roles, seed=seed, max_s=max_s, open_timeout_s=READY_LIMIT_S,
                          stop_timeout_s=STOP_LIMIT_S)


def read_events(ledger_dir: Path) -> list[Event]:
    """``(kind, monotonic ns, ids)`` per whole line of every worker's ledger."""
    events = []
    for path in sorted(ledger_dir.glob("*.ids")):
        for line in path.read_text().split("\n")[:-1]:  # the text after the last newline is cut
            kind, stamp, *ids = line.split(" ")
            events.append((kind, int(stamp), ids))
    return events
