"""Redis PUBLISH/SUBSCRIBE on redis-py.

A publish is ``PUBLISH``, or ``batch`` PUBLISHes in one pipeline (one round trip, not a
transaction). Fire-and-forget: nothing is persisted, and a subscriber that is not connected —
or that the server drops at its ``client-output-buffer-limit pubsub`` — misses the message for
good. A dropped subscriber does what a Redis application does: it subscribes again, and says
how often it had to (``disconnects``, ``error``); redis-py's own silent reconnects (its retry
reconnects and subscribes again inside ``get_message``) are counted too (``reconnects``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import redis
from redis.exceptions import ConnectionError as ConnectionError_

from pglimits_core.workloads.pubsub.systems.base import PubsubSystem


class RedisPublish(PubsubSystem):
    system = "redis_publish"
    client: redis.Redis | None = None
    pubsub: Any = None
    channel: str = ""

    def open(self) -> None:
        self.client = redis.Redis.from_url(self.url)

    def close(self) -> None:
        if self.pubsub is not None:
            self.pubsub.close()
        self.client.close()

    # --- publishing ---------------------------------------------------------------------
    def publish(self, channel: str, payloads: list[str]) -> None:
        if len(payloads) == 1:
            self.client.publish(channel, payloads[0])
            return
        pipe = self.client.pipeline(transaction=False)
        for payload in payloads:
            pipe.publish(channel, payload)
        pipe.execute()

    # --- subscribing --------------------------------------------------------------------
    def listen(self, channel: str) -> None:
        self.channel = channel
        self.pubsub = self.client.pubsub()
        self.pubsub.subscribe(channel)
        confirmation = self.pubsub.get_message(timeout=10)
        if not confirmation or confirmation.get("type") != "subscribe":
            raise RuntimeError(f"no subscribe confirmation from Redis: {confirmation!r}")
        # redis-py reconnects a pub/sub connection on its own (its retry) and subscribes again
        # silently; every connect from here on is such a reconnect, and is counted
        self.pubsub.connection.register_connect_callback(self._reconnected)

    def _reconnected(self, _connection: Any) -> None:
        self.reconnects += 1

    def receive(self, batch: int, wait_s: float) -> Iterator[bytes]:
        received = 0
        message = self._next(wait_s)
        while message is not None:
            if message["type"] == "message":
                yield message["data"]
                received += 1
            if received >= batch:
                return
            message = self._next(0)

    def _next(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None: none within ``timeout``, or dropped by the server (then
        subscribed again)."""
        try:
            return self.pubsub.get_message(timeout=timeout)
        except ConnectionError_ as error:  # dropped by the server (output-buffer limit): rejoin
            self.rejoin(error)
            return None

    def rejoin(self, error: Exception) -> None:
        """Whatever was published meanwhile is lost to this subscriber, and counted so."""
        self.disconnects += 1
        self.error = f"disconnected {self.disconnects}x, last: {type(error).__name__}: {error}"
        self.pubsub.close()
        self.listen(self.channel)

    def listen_idle(self, stack: ExitStack, channel: str) -> None:
        client = stack.enter_context(redis.Redis.from_url(self.url))
        pubsub = client.pubsub()
        stack.callback(pubsub.close)
        pubsub.subscribe(channel)
        pubsub.get_message(timeout=5)

    # --- the server ---------------------------------------------------------------------
    def limits(self) -> dict[str, Any]:
        with redis.Redis.from_url(self.url, decode_responses=True) as client:
            return {**client.config_get("client-output-buffer-limit"), **client.config_get("maxclients")}

    def watcher(self) -> Callable[[], dict[str, Any]]:
        client = redis.Redis.from_url(self.url, decode_responses=True)

        def read() -> dict[str, Any]:
            clients = client.client_list(_type="pubsub")
            return {"pubsub_clients": len(clients),
                    "max_omem_bytes": max((int(c.get("omem", 0)) for c in clients), default=0)}
        return read
