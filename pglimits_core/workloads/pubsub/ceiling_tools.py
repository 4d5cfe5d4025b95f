"""What the pub/sub ceiling's C tools send, and how the listeners' counts are judged.

pgbench runs the harness's own statement (``systems.postgres``: ``NOTIFY_ONE`` for one message
per transaction, ``NOTIFY_MANY`` for a batch) with the payload built in SQL to the harness's
shape — ``p<client_id>:<seq>:0:`` padded with ``x`` to the point's size (``ledger.encode_message``;
no intended time: latency is the harness's measure, not the tool's). ``seq`` is a pgbench
variable per client, started at 0 (``-D seq=0``) and advanced by the batch after each
transaction, so every client numbers its messages as a harness publisher does.

redis-benchmark sends ``PUBLISH channel payload`` with one fixed payload of the same shape and
size: it cannot number them, so the listeners' counts are compared with the requests sent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pglimits_core.workloads.pubsub.ledger import account, encode_message, read_json
from pglimits_core.workloads.pubsub.systems.postgres import NOTIFY_MANY, NOTIFY_ONE

SEQ_VARIABLE = "seq"


def fill(statement: str, *values: str) -> str:
    """``statement`` with its ``%s`` placeholders replaced, in order, by SQL expressions."""
    parts = statement.split("%s")
    if len(parts) != len(values) + 1:
        raise ValueError(f"{len(parts) - 1} placeholders, {len(values)} values")
    return "".join(part + value for part, value in zip(parts, [*values, ""], strict=True))


def payload_sql(offset: str, size: int) -> str:
    """The harness's message of sequence ``:seq + offset`` for this pgbench client, in SQL."""
    return f"rpad('p' || :client_id::text || ':' || (:{SEQ_VARIABLE}::bigint + {offset})::text || ':0:', {int(size)}, 'x')"


def notify_script(channel: str, batch: int, size: int) -> str:
    """One transaction of ``batch`` notifications on ``channel``, then the client's ``seq`` advanced."""
    literal = "'" + channel.replace("'", "''") + "'"
    if batch == 1:
        statement = fill(NOTIFY_ONE, literal, payload_sql("0", size))
    else:
        many = f"array(SELECT {payload_sql('i', size)} FROM generate_series(0, {int(batch) - 1}) AS i)"
        statement = fill(NOTIFY_MANY, literal, many)
    return f"{statement};\n\\set {SEQ_VARIABLE} :{SEQ_VARIABLE} + {int(batch)}\n"


def publish_steps(channel: str, size: int) -> list[tuple[str, list[str]]]:
    """redis-benchmark's one step: ``PUBLISH`` of a fixed payload of the harness's shape and size."""
    return [("PUBLISH", ["PUBLISH", channel, encode_message("redis-benchmark", 0, 0, size)])]


def received(subscriber: dict[str, Any]) -> int:
    """Every message a listener took off the wire (distinct, repeated or of another shape)."""
    return sum(s["distinct"] + s["duplicates"] for s in subscriber["publishers"].values()) + subscriber["foreign"]


def judge_listeners(publishers: list[dict[str, Any]], ledger: Path, listeners: int, result: Any) -> dict[str, Any]:
    """Published against received: numbered messages (pgbench) through the study's accounting
    (lost sequence ranges per listener); a fixed payload (redis-benchmark) by count. A listener
    that reported nothing, while the tool ran, fails the point."""
    subscribers = read_json(ledger, "subscriber-")
    published = sum(p["published"] for p in publishers)
    per = [{"subscriber": s["subscriber"], "received": received(s), "error": s.get("error"),
            "reconnects": s.get("reconnects"), "disconnects": s.get("disconnects", 0),
            "drain_complete": s.get("drain_complete")} for s in subscribers]
    outcome = {"listeners": listeners, "published": published, "expected": published * listeners,
               "received": sum(p["received"] for p in per), "numbered": all(p["publisher"] for p in publishers)}
    if outcome["numbered"] and subscribers:
        accounting = account(publishers, subscribers)
        outcome.update({k: accounting[k] for k in ("delivered", "lost", "not_received_by_cutoff", "unexpected",
                                                   "duplicates")})
        for row, judged in zip(per, accounting["per_subscriber"], strict=True):
            row.update(lost=judged["lost"], lost_ranges=judged["lost_ranges"])
    else:
        outcome["lost"] = sum(max(0, published - p["received"]) for p in per)
        for row in per:
            row["lost"] = max(0, published - row["received"])
    outcome["per_listener"] = per
    if len(subscribers) != listeners and result.status == "complete":
        outcome["error"] = f"{len(subscribers)} of {listeners} listeners reported their counts"
    return outcome
