"""The pub/sub system contract: verbs only, no timing (the driver in ``load/`` owns the clock).

Lifecycle, as the load operations use it: the system object is built unopened (``__init__``
only stores the url and options, so it pickles), ``open()`` connects in the worker process that
uses it, the verbs run, ``close()`` disconnects. One opened object is one client: a publisher,
a subscriber (after ``listen``) or, on a system whose publishes are transactional, a writer.

``receive`` hands over payloads one by one *as they arrive* (a generator): the operation that
counts them reads the clock after each, so the delivery latency is the operation's, never the
system's. The study's own checks (limits, the server watch, idle listeners, a payload probe)
open connections of their own and close them again.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any


class PubsubSystem(abc.ABC):
    """One system (and variant) behind the pub/sub verbs. ``url`` is the endpoint's url;
    ``options`` are the variant options the registry validated."""

    system: str = ""
    #: a publish can share a transaction with a write (NOTIFY): the commit-serialization rows
    #: need it, and only such a system has the writer verbs below
    transactional: bool = False

    def __init__(self, url: str, **options: Any):
        self.url = url
        self.options = options
        #: a subscriber the server dropped and that subscribed again: how often, and why last
        self.disconnects = 0
        self.error: str | None = None
        #: times the client library re-established a subscriber's connection on its own (and
        #: subscribed again) without telling the caller: what was published meanwhile is lost
        self.reconnects = 0

    # --- connection -------------------------------------------------------------------
    @abc.abstractmethod
    def open(self) -> None:
        """Connect; runs inside the worker process."""

    @abc.abstractmethod
    def close(self) -> None: ...

    # --- publishing ---------------------------------------------------------------------
    @abc.abstractmethod
    def publish(self, channel: str, payloads: list[str]) -> None:
        """Send ``payloads`` on ``channel`` in one round trip; published once this returns."""

    def publish_once(self, channel: str, payload: str) -> None:
        """One message on a connection of its own (the payload-size probe); raises the
        server's refusal as it comes."""
        self.open()
        try:
            self.publish(channel, [payload])
        finally:
            self.close()

    # --- subscribing --------------------------------------------------------------------
    @abc.abstractmethod
    def listen(self, channel: str) -> None:
        """Subscribe to ``channel``; confirmed by the server once this returns."""

    @abc.abstractmethod
    def receive(self, batch: int, wait_s: float) -> Iterator[str | bytes]:
        """The payloads that have arrived, one by one as they come: at most ``batch``, waiting
        at most ``wait_s`` for the first."""

    def stall(self, seconds: float) -> None:
        """Stop reading for ``seconds`` (the stuck-subscriber drill): by default the socket is
        simply not read, so what arrives piles up on the server."""
        time.sleep(seconds)

    @abc.abstractmethod
    def listen_idle(self, stack: ExitStack, channel: str) -> None:
        """A connection of its own listening on ``channel`` and never reading, held until
        ``stack`` closes (an application that listens per tenant)."""

    # --- the server ---------------------------------------------------------------------
    @abc.abstractmethod
    def limits(self) -> dict[str, Any]:
        """The settings that bound this system, as the server reports them."""

    @classmethod  # noqa: B027 - an optional check: most systems have none
    def check_room(cls, limits: dict[str, Any], connections: int) -> None:
        """Refuse (PGLimitsError, with the fix) a point needing more connections than the
        server's ``limits`` allow. Nothing to check by default."""

    @abc.abstractmethod
    def watcher(self) -> Callable[[], dict[str, Any]]:
        """A reader of what the server holds for pub/sub right now, on a connection of its own
        (sampled once a second by ``points.ServerWatch``)."""

    # --- transactional systems only (``transactional``): the commit-serialization writers --
    def reset_writes(self) -> None:
        """An empty table for the writers (on a connection of its own)."""
        raise self._not_transactional()

    def write(self) -> None:
        """One small row inserted in a transaction of its own."""
        raise self._not_transactional()

    def write_then_select(self, payload: str) -> None:
        """The control: in one transaction the row, then ``payload`` selected back — the round
        trips of ``publish_after_write`` without the publish."""
        raise self._not_transactional()

    def publish_after_write(self, channel: str, payloads: list[str]) -> None:
        """The row and then the publishes, in one transaction (the notify-on-insert pattern)."""
        raise self._not_transactional()

    def _not_transactional(self) -> NotImplementedError:
        return NotImplementedError(f"{self.system}: a publish cannot share a transaction with a write")
