"""Load operations of the pub/sub study: publishers publish, subscribers receive and count.

Both are ordinary load-driver operations, so both run in the driver's worker processes (their
CPU is the client's). A subscriber listens in ``open()`` — the driver starts no worker's loop
before every worker has opened, so every subscriber listens before the first publish — and
each call receives what has arrived (up to ``batch`` messages, waiting at most ``wait_s``): the
number received is the operation's item count (0 = an idle poll). Its loop runs through the
publishers' warm-up and measured window; at ``close()`` it reads on until the channel is quiet
for ``QUIET_S`` (at most ``DRAIN_LIMIT_S``: a subscriber that far behind is cut off, and says
so), then writes its ``Tally``.

Publishers: Postgres ``SELECT pg_notify(channel, payload)`` in autocommit — one publish = one
transaction — or, batched, one statement ``SELECT pg_notify(channel, p) FROM unnest(array)``:
``batch`` notifications in one transaction, one round trip. Redis ``PUBLISH``, or ``batch``
PUBLISHes in one pipeline (one round trip, not a transaction). A publisher counts a message as
published once the call that sent it returned; it writes its count when it closes.
"""

from __future__ import annotations

import time
from typing import Any

from redis.exceptions import ConnectionError as ConnectionError_

from pglimits_core.load import current_worker, intended_start_ns, run_start_ns
from pglimits_core.workloads.pubsub.ledger import Tally, encode_message, write_json

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
    """What publishers and subscribers share: the server URL, the channel, the ledger directory
    and the measured window (warm-up and measured seconds of the run)."""

    def __init__(self, system: str, url: str, channel: str, ledger_dir: str, warmup_s: float,
                 duration_s: float):
        self.system, self.url, self.channel, self.ledger_dir = system, url, channel, ledger_dir
        self.warmup_s, self.duration_s = warmup_s, duration_s

    @property
    def postgres(self) -> bool:
        return self.system.startswith("pg")

    def connect_postgres(self):
        import psycopg

        return psycopg.connect(self.url, autocommit=True)

    def connect_redis(self):
        import redis

        return redis.Redis.from_url(self.url)


class PublishOp(PubsubOp):
    """Publish ``batch`` unique messages of ``payload_bytes`` per call (see the module doc)."""

    name = "publish"

    def __init__(self, *args: Any, batch: int = 1, payload_bytes: int = 64, statement: str = "", **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.batch, self.payload_bytes = batch, payload_bytes
        #: Postgres only: extra SQL run in the same transaction before the notifications
        #: (the commit-serialization rows' "insert + notify in one transaction")
        self.statement = statement

    def open(self) -> None:
        self.publisher = worker_tag("p")
        self.conn = self.connect_postgres() if self.postgres else self.connect_redis()
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
        if not self.postgres:
            if len(payloads) == 1:
                self.conn.publish(self.channel, payloads[0])
                return
            pipe = self.conn.pipeline(transaction=False)
            for payload in payloads:
                pipe.publish(self.channel, payload)
            pipe.execute()
            return
        if self.statement:
            with self.conn.transaction():
                self.conn.execute(self.statement, prepare=True)
                self._notify(payloads)
            return
        self._notify(payloads)

    def _notify(self, payloads: list[str]) -> None:
        if len(payloads) == 1:
            self.conn.execute("SELECT pg_notify(%s, %s)", (self.channel, payloads[0]), prepare=True)
        else:
            self.conn.execute("SELECT pg_notify(%s, p) FROM unnest(%s::text[]) AS p", (self.channel, payloads),
                              prepare=True)

    def close(self) -> None:
        write_json(self.ledger_dir, f"publisher-{self.publisher}",
                   {"publisher": self.publisher, "published": self.seq, "published_in_window": self.in_window,
                    "first_start_ns": self.first_start_ns})
        self.conn.close()


class SubscribeOp(PubsubOp):
    """Receive what has arrived on the channel; count it in the subscriber's ``Tally``.

    ``stall_s`` > 0 (the stuck-subscriber drill): subscriber 0 stops reading for ``stall_s``
    seconds once the measured window starts — on Postgres inside an open transaction (a listener
    in a transaction reads no notification until it ends), on Redis simply not reading its
    socket, so its output buffer grows on the server."""

    name = "receive"

    def __init__(self, *args: Any, batch: int = 500, wait_s: float = 0.05, stall_s: float = 0.0,
                 **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.batch, self.wait_s, self.stall_s = batch, wait_s, stall_s

    def open(self) -> None:
        self.subscriber = worker_tag("s")
        worker = current_worker()
        self.stall_left = self.stall_s if (worker is None or worker.index == 0) else 0.0
        self.error: str | None = None
        self.disconnects = 0
        if self.postgres:
            self.conn = self.connect_postgres()
            self.conn.execute(f'LISTEN "{self.channel}"')  # confirmed once execute returns
        else:
            self.client = self.connect_redis()
            self.subscribe()
        self.tally = Tally(self.subscriber, time.monotonic_ns())

    def __call__(self) -> int:
        if self.tally.window is None:
            self.tally.window = measured_window(self.warmup_s, self.duration_s)
        if self.stall_left and self.tally.window and time.monotonic_ns() >= self.tally.window[0]:
            self.stall()
        return self.receive(self.batch, self.wait_s)

    def receive(self, batch: int, wait_s: float, after_run: bool = False) -> int:
        add, count = self.tally.add, 0
        if self.postgres:
            for notify in self.conn.notifies(timeout=wait_s, stop_after=batch):
                add(time.monotonic_ns(), notify.payload, after_run)
                count += 1
            return count
        try:
            message = self.conn.get_message(timeout=wait_s)
        except ConnectionError_ as error:  # dropped by the server (output-buffer limit): rejoin
            self.rejoin(error)
            return 0
        while message is not None:
            if message["type"] == "message":
                add(time.monotonic_ns(), message["data"], after_run)
                count += 1
            if count >= batch:
                break
            try:
                message = self.conn.get_message(timeout=0)
            except ConnectionError_ as error:
                self.rejoin(error)
                break
        return count

    def subscribe(self) -> None:
        self.conn = self.client.pubsub()
        self.conn.subscribe(self.channel)
        confirmation = self.conn.get_message(timeout=10)
        if not confirmation or confirmation.get("type") != "subscribe":
            raise RuntimeError(f"no subscribe confirmation from Redis: {confirmation!r}")

    def rejoin(self, error: Exception) -> None:
        """What a Redis application does when the server drops its subscription: subscribe
        again. Whatever was published meanwhile is lost to it, and counted so."""
        self.disconnects += 1
        self.error = f"disconnected {self.disconnects}x, last: {type(error).__name__}: {error}"
        self.conn.close()
        self.subscribe()

    def stall(self) -> None:
        stall_s, self.stall_left = self.stall_left, 0.0
        if self.postgres:
            with self.conn.transaction():
                self.conn.execute("SELECT txid_current()")
                time.sleep(stall_s)
        else:
            time.sleep(stall_s)

    def close(self) -> None:
        deadline, quiet_since = time.monotonic() + DRAIN_LIMIT_S, time.monotonic()
        try:
            while time.monotonic() < deadline and time.monotonic() - quiet_since < QUIET_S:
                if self.receive(self.batch, 0.05, after_run=True):
                    quiet_since = time.monotonic()
        except Exception as error:  # a disconnected subscriber (Redis output-buffer limit) still reports
            self.error = f"{type(error).__name__}: {error}"
        # cut off while messages were still arriving: what it misses was not received in time,
        # which the accounting keeps apart from a loss
        quiet = time.monotonic() - quiet_since >= QUIET_S
        write_json(self.ledger_dir, f"subscriber-{self.subscriber}",
                   {**self.tally.to_json(), "error": self.error, "disconnects": self.disconnects,
                    "drain_complete": quiet})
        self.conn.close()
        if not self.postgres:
            self.client.close()


class WriteOp(PubsubOp):
    """An unrelated small write: one ``statement`` (an INSERT) in autocommit, one transaction
    per call (the commit-serialization rows' writers; Postgres only). ``control_select``: the
    transaction is explicit and selects a message-sized payload after the insert — the round
    trips of insert + ``pg_notify`` in one transaction, without the NOTIFY (the control)."""

    name = "write"

    def __init__(self, *args: Any, statement: str, control_select: bool = False, payload_bytes: int = 64,
                 **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.statement, self.control_select, self.payload_bytes = statement, control_select, payload_bytes

    def open(self) -> None:
        self.conn = self.connect_postgres()
        self.writer, self.seq = worker_tag("w"), 0

    def __call__(self) -> None:
        if not self.control_select:
            self.conn.execute(self.statement, prepare=True)
            return
        payload = encode_message(self.writer, self.seq, time.monotonic_ns(), self.payload_bytes)
        self.seq += 1
        with self.conn.transaction():
            self.conn.execute(self.statement, prepare=True)
            self.conn.execute("SELECT length(%s)", (payload,), prepare=True)

    def close(self) -> None:
        self.conn.close()
