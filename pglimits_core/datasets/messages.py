"""Seeded queue messages: 70 % 256 B, 25 % 1 KB, 5 % 8 KB JSON payloads (the seeds' mix).

A payload is valid JSON of an *exact* encoded size::

    {"enq_ns":<20 bytes>,"id":"<producer>-<seq>","pad":"<filler>"}

``enq_ns`` is the *intended* send time of a load producer (the open-loop schedule's start, so
a producer running late shows up in end-to-end latency), the send time for anything else. It
comes first at a fixed offset and fixed width (right-aligned digits; JSON allows
the leading blanks), so stamping the enqueue time at send is one bytes splice with no JSON
encoding, and ``decode`` is two slices — cheap enough to sit inside the timed loop.
Systems that re-encode JSON (pgmq stores ``jsonb``) hand back a normalised form; ``decode``
falls back to a regex for those.
"""

from __future__ import annotations

import random
import re
import time

# (encoded size in bytes, share of messages) — the mix of both seeds.
SIZE_MIX: tuple[tuple[int, float], ...] = ((256, 0.70), (1024, 0.25), (8192, 0.05))

_PREFIX = b'{"enq_ns":'
ENQ_OFFSET = len(_PREFIX)
ENQ_WIDTH = 20  # monotonic_ns fits in 19 digits for ~300 years of uptime
_ID_KEY = b',"id":"'
ID_OFFSET = ENQ_OFFSET + ENQ_WIDTH + len(_ID_KEY)
_PAD_KEY = b'","pad":"'
_SUFFIX = b'"}'
_FILLER_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_ID_RE = re.compile(rb'"id":\s*"([^"]*)"')
_ENQ_RE = re.compile(rb'"enq_ns":\s*(\d+)')


class MessageGenerator:
    """Payload templates for one producer; the same (seed, producer) gives the same sequence."""

    def __init__(self, seed: int, producer: str | int = 0, size_mix=SIZE_MIX):
        producer = str(producer)
        if '"' in producer or "\\" in producer:
            raise ValueError("producer name must not contain quotes or backslashes")
        self.producer = producer
        self.size_mix = tuple(size_mix)
        self.seq = 0
        self._rng = random.Random(f"{seed}:{producer}")
        # One seeded filler block, sliced at random offsets: seeded and cheap for 8 KB payloads.
        self._filler = "".join(self._rng.choices(_FILLER_ALPHABET, k=2 * max(s for s, _ in self.size_mix)))

    def pick_size(self) -> int:
        point, total = self._rng.random(), 0.0
        for size, share in self.size_mix:
            total += share
            if point < total:
                return size
        return self.size_mix[-1][0]

    def template(self) -> bytes:
        """The next payload with ``enq_ns`` = 0; ``stamp()`` it when sending."""
        self.seq += 1
        return build_payload(f"{self.producer}-{self.seq}", self.pick_size(), self._filler,
                             self._rng.randrange(len(self._filler) // 2))

    def templates(self, count: int) -> list[bytes]:
        return [self.template() for _ in range(count)]


def build_payload(message_id: str, size: int, filler: str, offset: int = 0) -> bytes:
    """A payload of exactly ``size`` bytes carrying ``message_id``."""
    head = _PREFIX + b"%*d" % (ENQ_WIDTH, 0) + _ID_KEY + message_id.encode() + _PAD_KEY
    pad = size - len(head) - len(_SUFFIX)
    if pad < 0:
        raise ValueError(f"id {message_id!r} does not fit a {size}-byte payload")
    return head + filler[offset:offset + pad].encode() + _SUFFIX


def stamp(template: bytes, enq_ns: int | None = None) -> bytes:
    """``template`` with its enqueue time set (``time.monotonic_ns()`` now unless given)."""
    if enq_ns is None:
        enq_ns = time.monotonic_ns()
    return template[:ENQ_OFFSET] + b"%*d" % (ENQ_WIDTH, enq_ns) + template[ENQ_OFFSET + ENQ_WIDTH:]


def stamp_batch(templates: list[bytes], sent_ns: int | None = None) -> list[bytes]:
    """The batch stamped with one send time (it is sent as one statement): ``sent_ns``, or
    the clock now. A load producer passes its *intended* send time (see ``load.intended_start_ns``)."""
    when = time.monotonic_ns() if sent_ns is None else sent_ns
    return [stamp(t, when) for t in templates]


def decode(payload: bytes | str) -> tuple[str, int]:
    """``(id, enq_ns)`` of a payload, fast for our own layout, regex for re-encoded JSON."""
    if isinstance(payload, str):
        payload = payload.encode()
    if payload.startswith(_PREFIX) and payload.startswith(_ID_KEY, ID_OFFSET - len(_ID_KEY)):
        end = payload.index(b'"', ID_OFFSET)
        return payload[ID_OFFSET:end].decode(), int(payload[ENQ_OFFSET:ENQ_OFFSET + ENQ_WIDTH])
    id_match, enq_match = _ID_RE.search(payload), _ENQ_RE.search(payload)
    if id_match is None or enq_match is None:
        raise ValueError("payload carries no id/enq_ns")
    return id_match.group(1).decode(), int(enq_match.group(1))


def message_id(payload: bytes | str) -> str:
    return decode(payload)[0]
