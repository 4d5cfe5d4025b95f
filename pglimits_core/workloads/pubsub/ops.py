"""Load operations of the pub/sub study: publishers publish, subscribers receive and count.

Both are ordinary load-driver operations, so both run in the driver's worker processes (their
CPU is the client's). A subscriber listens in ``open()`` — the driver starts no worker's loop
before every worker has opened, so every subscriber listens before the first publish — and
each call receives what has arrived (up to ``batch`` messages, waiting at most ``wait_s``): the
number received is the operation's item count (0 = an idle poll). Its loop runs through the
publishers' warm-up and measured window; at ``close()`` it reads on until the channel is quiet
for ``QUIET_S`` (at most ``DRAIN_LIMIT_S``: a subscriber that far behind is cut off, and says
so), then writes its ``Tally``.

Publishers send ``batch`` messages per call, in one round trip (what that is on each system:
``systems/``). A publisher counts a message as published once the call that sent it returned;
it writes its count when it closes. The system does the verbs; these operations own the
clock: the intended start of each publish, and the receipt time of each message as the
system hands it over.
"""

from __future__ import annotations

import time
from typing import Any

from pglimits_core.load import current_worker, intended_start_ns, run_start_ns
from pglimits_core.workloads.pubsub.ledger import Tally, encode_message, write_json
from pglimits_core.workloads.pubsub.systems.registry import make_system

QUIET_S = 0.5
DRAIN_LIMIT_S = 10.0
NS = 1_000_000_000


def measured_window(warmup_s: float, duration_s: float) -> tuple[int, int] | None:
    start = run_start_ns()
    if start is None:
        return None
    begin = start + round(warmup_s * NS)
    return begin, begin + round(duration_s * NS)


def worker_tag(prefix: str) -> str:
    worker = current_worker()
    return f"{prefix}{worker.index}" if worker else f"{prefix}main"


class PubsubOp:
    """What publishers and subscribers share: the system and its server's URL, the channel, the
    ledger directory and the measured window (warm-up and measured seconds of the run)."""

    def __init__(self, system: str, url: str, channel: str, ledger_dir: str, warmup_s: float,
                 duration_s: float):
        self.system, self.url, self.channel, self.ledger_dir = system, url, channel, ledger_dir
        self.warmup_s, self.duration_s = warmup_s, duration_s

    def connect(self) -> None:
        """The system, opened in this worker (``self.client``)."""
        self.client = make_system(self.system, self.url)
        self.client.open()


class PublishOp(PubsubOp):
    """Publish ``batch`` unique messages of ``payload_bytes`` per call (see the module doc)."""

    name = "publish"

    def __init__(self, *args: Any, batch: int = 1, payload_bytes: int = 64, with_write: bool = False,
                 **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.batch, self.payload_bytes = batch, payload_bytes
        #: transactional systems only: a row written in the same transaction before the
        #: publishes (the commit-serialization rows' "insert + notify in one transaction")
        self.with_write = with_write

    def open(self) -> None:
        self.publisher = worker_tag("p")
        self.connect()
        self.seq, self.in_window, self.first_start_ns = 0, 0, None
        self.window: tuple[int, int] | None = None

    def __call__(self) -> int:
        intended = intended_start_ns() or time.monotonic_ns()
        if self.first_start_ns is None:
            self.first_start_ns, self.window = time.monotonic_ns(), measured_window(self.warmup_s, self.duration_s)
        payloads = [encode_message(self.publisher, self.seq + i, intended, self.payload_bytes)
                    for i in range(self.batch)]
        self.send(payloads)
        self.seq += len(payloads)  # confirmed: the call returned
        if self.window and self.window[0] <= intended < self.window[1]:
            self.in_window += len(payloads)
        return len(payloads)

    def send(self, payloads: list[str]) -> None:
        if self.with_write:
            self.client.publish_after_write(self.channel, payloads)
        else:
            self.client.publish(self.channel, payloads)

    def close(self) -> None:
        write_json(self.ledger_dir, f"publisher-{self.publisher}",
                   {"publisher": self.publisher, "published": self.seq, "published_in_window": self.in_window,
                    "first_start_ns": self.first_start_ns})
        self.client.close()


class SubscribeOp(PubsubOp):
    """Receive what has arrived on the channel; count it in the subscriber's ``Tally``.

    ``stall_s`` > 0 (the stuck-subscriber drill): subscriber 0 stops reading for ``stall_s``
    seconds once the measured window starts (how a system stops reading: its ``stall``)."""

    name = "receive"

    def __init__(self, *args: Any, batch: int = 500, wait_s: float = 0.05, stall_s: float = 0.0,
                 tag: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.batch, self.wait_s, self.stall_s = batch, wait_s, stall_s
        self.tag = tag  # the subscriber's name outside the load driver (the ceiling's listeners)

    def open(self) -> None:
        self.subscriber = self.tag or worker_tag("s")
        worker = current_worker()
        self.stall_left = self.stall_s if (worker is None or worker.index == 0) else 0.0
        self.drain_error: str | None = None
        self.connect()
        self.client.listen(self.channel)
        self.tally = Tally(self.subscriber, time.monotonic_ns())

    def __call__(self) -> int:
        if self.tally.window is None:
            self.tally.window = measured_window(self.warmup_s, self.duration_s)
        if self.stall_left and self.tally.window and time.monotonic_ns() >= self.tally.window[0]:
            stall_s, self.stall_left = self.stall_left, 0.0
            self.client.stall(stall_s)
        return self.receive(self.batch, self.wait_s)

    def receive(self, batch: int, wait_s: float, after_run: bool = False) -> int:
        """Count what the system hands over, each message timed as it is handed over."""
        add, count = self.tally.add, 0
        for payload in self.client.receive(batch, wait_s):
            add(time.monotonic_ns(), payload, after_run)
            count += 1
        return count

    def close(self) -> None:
        quiet = self.drain()
        write_json(self.ledger_dir, f"subscriber-{self.subscriber}",
                   {**self.tally.to_json(), "error": self.drain_error or self.client.error,
                    "disconnects": self.client.disconnects, "reconnects": self.client.reconnects,
                    "drain_complete": quiet})
        self.client.close()

    def drain(self) -> bool:
        """Read on until the channel is quiet for ``QUIET_S`` (at most ``DRAIN_LIMIT_S``);
        whether it was. Cut off while messages were still arriving, what it misses was not
        received in time, which the accounting keeps apart from a loss."""
        deadline, quiet_since = time.monotonic() + DRAIN_LIMIT_S, time.monotonic()
        try:
            while time.monotonic() < deadline and time.monotonic() - quiet_since < QUIET_S:
                if self.receive(self.batch, 0.05, after_run=True):
                    quiet_since = time.monotonic()
        except Exception as error:  # a disconnected subscriber (Redis output-buffer limit) still reports
            self.drain_error = f"{type(error).__name__}: {error}"
        return time.monotonic() - quiet_since >= QUIET_S


class WriteOp(PubsubOp):
    """An unrelated small write in autocommit, one transaction per call (the commit-serialization
    rows' writers; transactional systems only). ``control_select``: the transaction is explicit
    and selects a message-sized payload after the insert — the round trips of insert + publish
    in one transaction, without the publish (the control)."""

    name = "write"

    def __init__(self, *args: Any, control_select: bool = False, payload_bytes: int = 64, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.control_select, self.payload_bytes = control_select, payload_bytes

    def open(self) -> None:
        self.connect()
        self.writer, self.seq = worker_tag("w"), 0

    def __call__(self) -> None:
        if not self.control_select:
            self.client.write()
            return
        payload = encode_message(self.writer, self.seq, time.monotonic_ns(), self.payload_bytes)
        self.seq += 1
        self.client.write_then_select(payload)

    def close(self) -> None:
        self.client.close()
