"""Pub/sub accounting: what each message carries, what each subscriber counts, what was lost.

A message is ``<publisher>:<seq>:<intended ns>:<padding>`` — the publisher's id, its sequence
number (0, 1, 2 ... per publisher, so every payload is unique) and the time its publish was
*meant* to start (the open-loop schedule; the actual start in a closed loop), padded to the
point's payload size. Each subscriber keeps a ``Tally``: per publisher a bitmap of the sequence
numbers it received (duplicates and reordering are counted, not assumed), and one latency
histogram of receive time − intended publish time over the messages *meant* for the measured
window (a message published late, or delivered after the window, still counts where it was
meant to: a stall shows up). Publishers and subscribers write their counts as JSON into the
point's ledger directory when they close; ``account`` judges them together.

What a subscriber is expected to receive from a publisher: every message the publisher
confirmed, except those published before the subscriber listened (not a loss: a subscriber
that joined late is expected to see a publisher's messages from the first one it received on;
the driver subscribes every subscriber before any publisher starts, so this does not happen in
a measured point).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pglimits_core.record.histograms import (
    encode,
    merge_encoded,
    new_histogram,
    ns_to_us,
    percentiles_us,
    record_us,
)

SEPARATOR = ":"


def encode_message(publisher: str, seq: int, intended_ns: int, size: int) -> str:
    """The payload of message ``seq`` of ``publisher``, padded with ``x`` to ``size`` bytes."""
    head = f"{publisher}{SEPARATOR}{seq}{SEPARATOR}{intended_ns}{SEPARATOR}"
    return head + "x" * max(0, size - len(head))


def decode_message(payload: str | bytes) -> tuple[str, int, int] | None:
    """``(publisher, seq, intended_ns)``, or None for a payload of another shape."""
    if isinstance(payload, bytes):
        payload = payload.decode("ascii", "replace")
    parts = payload.split(SEPARATOR, 3)
    if len(parts) < 4:
        return None
    try:
        return parts[0], int(parts[1]), int(parts[2])
    except ValueError:
        return None


@dataclass
class Seen:
    """One publisher's messages as one subscriber received them."""

    bitmap: bytearray = field(default_factory=bytearray)
    distinct: int = 0
    duplicates: int = 0
    reordered: int = 0  # arrived after a higher sequence number of the same publisher
    first_seq: int | None = None
    max_seq: int = -1

    def add(self, seq: int) -> None:
        if seq >= len(self.bitmap):
            self.bitmap.extend(bytes(max(seq + 1 - len(self.bitmap), len(self.bitmap))))
        if self.bitmap[seq]:
            self.duplicates += 1
            return
        self.bitmap[seq] = 1
        self.distinct += 1
        if self.first_seq is None:
            self.first_seq = seq
        if seq < self.max_seq:
            self.reordered += 1
        self.max_seq = max(self.max_seq, seq)

    def summary(self) -> dict[str, Any]:
        return {"distinct": self.distinct, "duplicates": self.duplicates, "reordered": self.reordered,
                "first_seq": self.first_seq, "max_seq": self.max_seq, "ranges": received_ranges(self.bitmap)}


#: sequence ranges kept per publisher and subscriber: a record stays small however broken the run
MAX_RANGES = 50


def received_ranges(bitmap: bytes | bytearray) -> list[list[int]]:
    """The received sequence numbers as contiguous ``[first, last]`` ranges (at most
    ``MAX_RANGES``, the first ones): a loss explains itself by where its gaps sit."""
    ranges, at = [], 0
    while len(ranges) < MAX_RANGES:
        start = bitmap.find(b"\x01", at)
        if start < 0:
            break
        end = bitmap.find(b"\x00", start)
        end = len(bitmap) if end < 0 else end
        ranges.append([start, end - 1])
        at = end
    return ranges


def missing_ranges(ranges: list[list[int]], first: int, last: int) -> list[list[int]]:
    """The ``[first, last]`` ranges of sequence numbers in ``first..last`` not in ``ranges``."""
    gaps, expected = [], first
    for low, high in ranges:
        if high < expected:
            continue
        if low > last:
            break
        if low > expected:
            gaps.append([expected, low - 1])
        expected = high + 1
    if expected <= last:
        gaps.append([expected, last])
    return gaps[:MAX_RANGES]


class Tally:
    """One subscriber's counts. ``window`` = ``(start_ns, end_ns)`` of the measured phase (set
    once the run starts); ``subscribed_ns`` = when its subscription was confirmed."""

    def __init__(self, subscriber: str, subscribed_ns: int):
        self.subscriber, self.subscribed_ns = subscriber, subscribed_ns
        self.window: tuple[int, int] | None = None
        self.publishers: dict[str, Seen] = {}
        self.histogram = new_histogram()
        self.in_window = 0  # deliveries of messages meant for the measured window
        self.foreign = 0  # payloads of another shape (not this harness's)
        self.after_run = 0  # received while draining after the subscriber's loop ended
        self.clamped = 0

    def add(self, received_ns: int, payload: str | bytes, after_run: bool = False) -> None:
        decoded = decode_message(payload)
        if decoded is None:
            self.foreign += 1
            return
        publisher, seq, intended_ns = decoded
        seen = self.publishers.setdefault(publisher, Seen())
        before = seen.duplicates
        seen.add(seq)
        self.after_run += after_run
        if seen.duplicates == before and self.window and self.window[0] <= intended_ns < self.window[1]:
            self.in_window += 1
            self.clamped += record_us(self.histogram, ns_to_us(received_ns - intended_ns))

    def to_json(self) -> dict[str, Any]:
        return {"subscriber": self.subscriber, "subscribed_ns": self.subscribed_ns,
                "publishers": {p: s.summary() for p, s in self.publishers.items()},
                "in_window": self.in_window, "foreign": self.foreign, "after_run": self.after_run,
                "clamped": self.clamped, "histogram": encode(self.histogram).decode("ascii")}


def write_json(ledger_dir: str | Path, name: str, data: dict[str, Any]) -> None:
    (Path(ledger_dir) / f"{name}.json").write_text(json.dumps(data))


def read_json(ledger_dir: str | Path, prefix: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(Path(ledger_dir).glob(f"{prefix}*.json"))]


def expected_from(subscriber: dict[str, Any], publisher: dict[str, Any]) -> int:
    """The first sequence number ``subscriber`` is expected to receive from ``publisher``: 0 when
    it listened before the publisher's first publish started, else the first it received (what
    was published before it listened is not a loss); every message when it received none."""
    first_ns = publisher.get("first_start_ns")
    if first_ns is None or subscriber["subscribed_ns"] < first_ns:
        return 0
    seen = subscriber["publishers"].get(publisher["publisher"])
    return seen["first_seq"] if seen and seen["first_seq"] is not None else publisher["published"]


def account(publishers: list[dict[str, Any]], subscribers: list[dict[str, Any]]) -> dict[str, Any]:
    """Every subscriber against every publisher: expected, delivered, lost, duplicated, reordered;
    ``per_subscriber`` lists each subscriber's misses (a stuck one shows here). A subscriber whose
    final read was cut off while messages still arrived (``drain_complete`` false: it was that
    far behind) has its misses counted ``not_received_by_cutoff``, not lost: they may still have
    been on their way."""
    totals = {"published": sum(p["published"] for p in publishers),
              "published_in_window": sum(p.get("published_in_window", 0) for p in publishers),
              "subscribers": len(subscribers), "expected": 0, "delivered": 0, "lost": 0,
              "duplicates": 0, "reordered": 0, "unexpected": 0, "before_subscribe": 0,
              "foreign": 0, "after_run": 0, "clamped": 0, "not_received_by_cutoff": 0}
    per_subscriber, known = [], {p["publisher"] for p in publishers}
    for sub in subscribers:
        lost, gaps = 0, {}
        for pub in publishers:
            lost += _one_pair(totals, sub, pub)
            gaps.update(lost_ranges(sub, pub))
        totals["unexpected"] += sum(s["distinct"] for p, s in sub["publishers"].items() if p not in known)
        for key in ("foreign", "after_run", "clamped"):
            totals[key] += sub.get(key, 0)
        complete = sub.get("drain_complete", True)
        totals["lost" if complete else "not_received_by_cutoff"] += lost
        recorded = all("ranges" in seen for seen in sub["publishers"].values())
        per_subscriber.append({"subscriber": sub["subscriber"], "lost": lost, "in_window": sub["in_window"],
                               "drain_complete": complete, "lost_ranges": gaps if recorded else None,
                               "reconnects": sub.get("reconnects"), "disconnects": sub.get("disconnects", 0)})
    totals["delivered_ratio"] = totals["delivered"] / totals["expected"] if totals["expected"] else None
    return {**totals, "per_subscriber": per_subscriber}


NOTHING_SEEN = {"distinct": 0, "duplicates": 0, "reordered": 0, "max_seq": -1, "ranges": []}


def _one_pair(totals: dict[str, Any], sub: dict[str, Any], pub: dict[str, Any]) -> int:
    """Add one subscriber × publisher to ``totals``; the messages the subscriber missed."""
    first = expected_from(sub, pub)
    seen = sub["publishers"].get(pub["publisher"], NOTHING_SEEN)
    beyond = max(0, seen["max_seq"] + 1 - pub["published"])  # seqs the publisher never confirmed
    delivered = min(seen["distinct"] - beyond, pub["published"] - first)
    totals["expected"] += pub["published"] - first
    totals["before_subscribe"] += first
    totals["delivered"] += delivered
    totals["unexpected"] += beyond
    totals["duplicates"] += seen["duplicates"]
    totals["reordered"] += seen["reordered"]
    return pub["published"] - first - delivered


def lost_ranges(sub: dict[str, Any], pub: dict[str, Any]) -> dict[str, list[list[int]]]:
    """``{publisher: [[first, last], ...]}``: the sequence ranges ``sub`` expected from ``pub``
    and never received (none: empty). Past the last kept received range (``MAX_RANGES``) a
    record cannot tell, so no gap is claimed there."""
    seen = sub["publishers"].get(pub["publisher"], NOTHING_SEEN)
    ranges, last = seen.get("ranges", []), pub["published"] - 1
    if len(ranges) >= MAX_RANGES:
        last = min(last, ranges[-1][1])
    gaps = missing_ranges(ranges, expected_from(sub, pub), last)
    return {pub["publisher"]: gaps} if gaps else {}


def delivery_latency(subscribers: list[dict[str, Any]]) -> dict[str, Any]:
    """Delivery latency (receive − intended publish) over every subscriber's in-window
    deliveries: count and percentiles in ms (None where too few samples)."""
    merged = merge_encoded([s["histogram"] for s in subscribers]) if subscribers else new_histogram()
    values, _ = percentiles_us(merged)
    count = merged.get_total_count()
    return {"count": count, **{f"{k}_ms": (None if v is None else v / 1000) for k, v in values.items()},
            "max_ms": merged.get_max_value() / 1000 if count else None}


def lost_ranges_text(per_subscriber: list[dict[str, Any]]) -> str:
    """Each subscriber that lost messages: which sequence ranges of which publisher, and how often
    its client reconnected on its own ("" when nothing was lost). A record taken before ranges
    were kept says so instead of guessing."""
    parts = []
    for sub in per_subscriber:
        if not sub.get("lost"):
            continue
        ranges = sub.get("lost_ranges")
        where = ("ranges not recorded in this record" if ranges is None else
                 "; ".join(f"{pub} {', '.join(f'{a}–{b}' if a != b else f'{a}' for a, b in gaps)}"
                           for pub, gaps in ranges.items()) or "beyond the recorded ranges")
        reconnects = sub.get("reconnects")
        again = "" if reconnects is None else f", client reconnected {reconnects}×"
        parts.append(f"{sub['subscriber']}: {sub['lost']} lost ({where}{again})")
    return " | ".join(parts)
