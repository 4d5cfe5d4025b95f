"""The consumer-crash drill: one consumer dies holding claims; does the design bring them back?

A burn-down of a prefilled queue by ``consumers`` closed-loop consumers plus the design's reaper
(``ReapOp``: every ``visibility_timeout_s / 2``, as a cron job or reaper thread of its users
would run it). Consumer 0, after its ``kill_after_acks``-th acknowledged batch, claims one more
batch and SIGKILLs itself holding it: a deterministic moment, the same for every design. The
others keep running (``Role.may_die``). Afterwards the drain claims what is left and, while
claimed messages are still invisible, runs the reaper, for at most the visibility timeout +
``DRAIN_GRACE_S`` — then every id is accounted for.

The kill comes after the worker recorded its last acknowledged batch, so no batch is in doubt
here (``IN_DOUBT_BATCHES``); a kill at an arbitrary moment could land between an ack and its
ledger write, leaving at most that one batch "in doubt" — never "lost". At-least-once designs
must lose nothing; delete-mode (at-most-once by design) loses exactly the batch the dead
consumer held, reported as the design's property.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pglimits_core.datasets.messages import decode
from pglimits_core.load import ClosedLoop, Phase, Role
from pglimits_core.studies.runner import RecordedRun
from pglimits_core.workloads.queue.ops import ConsumeOp, ReapOp
from pglimits_core.workloads.queue.points import (
    DRAIN_LIMIT_S,
    IDLE_SLEEP_S,
    QueueVariant,
    _run_point,
    read_ledger_batches,
)
from pglimits_core.workloads.queue.systems.registry import adapter_class

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

EXPERIMENT = "consumer_crash"
DRAIN_GRACE_S = 5.0  # beyond the visibility timeout: a reaper pass and the claims after it
REAP_POLL_S = 0.1
IN_DOUBT_BATCHES = 0  # batches a killed consumer may have acked unrecorded (the kill follows the write)
AT_MOST_ONCE_LOSS = "at-most-once: lost = the batch the killed consumer held, by design"


def with_visibility_timeout(v: QueueVariant, seconds: int) -> QueueVariant:
    """The variant with the drill's visibility timeout where the system has its own (pgmq vt_s);
    the label stays, so the drill's record joins the variant's other records."""
    option = adapter_class(v.system).visibility_option
    return replace(v, options={**v.options, option: seconds}) if option else v


def consumer_crash_point(run: StudyRun, v: QueueVariant, consumers: int, prefill_count: int,
                         kill_after_acks: int, visibility_timeout_s: int, duration_s: float) -> RecordedRun:
    """One drill, one run record (experiment "consumer_crash", outcome in params.outcome)."""
    ctx, seed = run.ctx, run.seed
    v = with_visibility_timeout(v, visibility_timeout_s)
    url = ctx.endpoints[v.server].url

    def roles(ledger: str) -> list[Role]:
        consumer = ConsumeOp(v.system, url, v.options, v.batch, ledger, seed,
                             die_after_acks=kill_after_acks, die_worker=0)
        reaper = ReapOp(v.system, url, v.options, v.batch, ledger, seed,
                        visibility_timeout_s=visibility_timeout_s, every_s=visibility_timeout_s / 2)
        return [Role("consumer", consumer, workers=consumers, may_die=True,
                     loop=ClosedLoop(idle_sleep_s=IDLE_SLEEP_S)),
                Role("reaper", reaper, workers=1, loop=ClosedLoop(idle_sleep_s=IDLE_SLEEP_S))]

    guarantee = adapter_class(v.system).delivery_guarantee

    def judge(adapter, ledger: Path, produced: list[str]) -> dict[str, Any]:
        drained, emptied = drain_recovering(adapter, visibility_timeout_s)
        killed = read_killed(ledger)
        return crash_account(produced, read_ledger_batches(ledger, "consume"), drained, emptied,
                             killed, v.batch, guarantee)

    params = {"consumers": consumers, "kill_after_acks": kill_after_acks,
              "visibility_timeout_s": visibility_timeout_s, "guarantee": guarantee,
              "recovery": adapter_class(v.system).recovery}
    return _run_point(ctx, v, EXPERIMENT, roles, [Phase("measure", duration_s)], params,
                      prefill_count, seed, judge=judge)


def drain_recovering(adapter, visibility_timeout_s: float,
                     grace_s: float = DRAIN_GRACE_S) -> tuple[list[tuple[int, list[str]]], bool]:
    """Claim+ack everything left; while the queue holds only invisible (claimed) messages, run
    the reaper and wait, at most the visibility timeout + ``grace_s`` from the first wait.
    Returns ``(wall-clock ns, ids)`` per drained batch and whether the queue emptied."""
    batches, limit = [], time.monotonic() + DRAIN_LIMIT_S
    wait_until = None
    while time.monotonic() < limit:
        messages = adapter.claim(100)
        if messages:
            adapter.ack([m.id for m in messages])
            batches.append((time.time_ns(), [decode(m.payload)[0] for m in messages]))
            continue
        if adapter.depth() == 0:
            return batches, True
        wait_until = wait_until or time.monotonic() + visibility_timeout_s + grace_s
        if time.monotonic() > wait_until:
            break
        adapter.reap(visibility_timeout_s)
        time.sleep(REAP_POLL_S)
    return batches, adapter.depth() == 0


def read_killed(ledger: Path) -> list[dict[str, Any]]:
    """What each self-killed consumer wrote just before its SIGKILL (held ids, when)."""
    return [json.loads(p.read_text()) for p in sorted(ledger.glob("killed-*.json"))]


def crash_account(produced: list[str], consumed: list[tuple[int, list[str]]],
                  drained: list[tuple[int, list[str]]], emptied: bool, killed: list[dict[str, Any]],
                  batch: int, guarantee: str) -> dict[str, Any]:
    """Every produced id: acknowledged in the run (ledger), drained after, held by the dead
    consumer and redelivered, in doubt (at most ``IN_DOUBT_BATCHES`` batches per killed
    consumer, never counted lost) or lost; what guarantee the numbers show."""
    delivered = [i for _, ids in consumed + drained for i in ids]
    unique = set(delivered)
    held = {i for k in killed for i in k["held"]}
    missing = set(produced) - unique
    in_doubt = min(len(missing - held), IN_DOUBT_BATCHES * batch * len(killed))
    lost = len(missing) - in_doubt
    return {"produced": len(produced), "acknowledged_in_run": sum(len(ids) for _, ids in consumed),
            "drained_after": sum(len(ids) for _, ids in drained), "killed_consumers": len(killed),
            "held_by_killed": len(held), "redelivered": len(held & unique),
            "duplicates": len(delivered) - len(unique), "in_doubt": in_doubt, "lost": lost,
            "lost_held": len(missing & held), "unexpected": len(unique - set(produced)),
            "drain_complete": emptied,
            "redelivery_s": redelivery_s(killed, held, consumed + drained),
            "guarantee": guarantee,
            "shown": shown_guarantee(lost, len(missing & held), len(held), guarantee, bool(killed))}


def redelivery_s(killed: list[dict[str, Any]], held: set[str],
                 batches: list[tuple[int, list[str]]]) -> float | None:
    """Seconds from the kill until the last message the dead consumer held was acknowledged
    again (by a live consumer or the drain); None when it held none or they never came back."""
    if not killed or not held:
        return None
    killed_at = min(k["killed_at_ns"] for k in killed)
    back = {}
    for stamp, ids in batches:
        for i in ids:
            if i in held and stamp >= killed_at:
                back[i] = min(back.get(i, stamp), stamp)
    return round((max(back.values()) - killed_at) / 1e9, 3) if len(back) == len(held) else None


def shown_guarantee(lost: int, lost_held: int, held: int, guarantee: str, killed: bool) -> str:
    """The delivery guarantee the numbers show (not the one the design claims)."""
    if not killed:
        return "no consumer was killed: nothing shown"
    if lost == 0:
        return "at-least-once"
    if guarantee == "at-most-once" and lost == lost_held == held:
        return AT_MOST_ONCE_LOSS
    return f"LOST {lost} messages the design should not lose"
