"""What the queue study's cross-process latency measures, named once for every table, figure and cell.

It runs from a message's *scheduled* send time — the open-loop producer's intended start, stamped
into the payload (``ops.EnqueueOp`` with ``load.intended_start_ns``), not the moment the enqueue
actually began — to the moment the consumer's claim call returned it (``ops.ConsumeOp`` reads the
clock right after ``claim()``, before ``ack()``). The processing and the ack's commit are outside
it, so it is not end to end; a producer running behind its schedule is inside it.

The run records keep the kind's first name, ``end_to_end`` (``end_to_end_p99_ms`` in a summary),
so committed records still load; everything a reader sees uses the names below.
"""

from __future__ import annotations

RECORDED_KIND = "end_to_end"  # the latency kind in the records (ops.ConsumeOp's OpOutcome)

# table columns (ms; percentiles over one run's messages)
P50 = "send_to_claim_p50_ms"
P95 = "send_to_claim_p95_ms"
P99 = "send_to_claim_p99_ms"

NAME = "send → claim"
FROM = "from the scheduled send"
P99_LABEL = f"{NAME} p99 ({FROM})"
DEFINITION = ("send → claim latency runs from each message's scheduled send time (the open-loop "
              "producer's intended start, so a producer running behind schedule shows up in it) to "
              "the return of the consumer's claim — before its ack, so the ack is not in it")


def columns(consumer, percentiles: tuple[str, ...] = ("p50", "p95", "p99")) -> dict:
    """The consumers' send → claim percentiles (ms) read under their recorded names, keyed by the
    table column each is shown as (``{"send_to_claim_p99_ms": consumer["end_to_end_p99_ms"]}``);
    a percentile the records lack is None."""
    return {f"send_to_claim_{p}_ms": consumer.get(f"{RECORDED_KIND}_{p}_ms") for p in percentiles}
