"""The failure modes of pub/sub that users run into, each a measured point.

* Commit serialization (Postgres): a transaction that issued NOTIFY takes a database-wide lock
  at commit and holds it through its commit record's flush, so notifying commits run one at a
  time. ``writers`` closed-loop workers insert one small row per transaction, in three modes:
  ``alone``; ``beside_notify`` (plus one open-loop publisher notifying ``notify_rate``
  messages/s in its own transactions — a fixed rate, so the writers do not just lose CPU to a
  flat-out publisher); ``txn_without_notify`` (the control: each writer's transaction inserts
  and then selects a payload of the same size — the same BEGIN/INSERT/SELECT/COMMIT round trips
  as the next mode, without NOTIFY); ``notify_in_txn`` (each writer's transaction also notifies:
  the notify-on-insert trigger pattern). The writers' TPS and p99 are the rows; what NOTIFY
  costs is ``notify_in_txn`` against ``txn_without_notify``, not against ``alone``.
* The largest payload: each size in ``sizes`` published once; accepted, or the exact error.
* Idle listeners and the stuck subscriber: fan-out points with options (``points.fanout_point``)
  under their own experiment name.
"""

from __future__ import annotations

from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.load import ClosedLoop, Role
from pglimits_core.studies.runner import RecordedRun
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.pubsub.ledger import encode_message
from pglimits_core.workloads.pubsub.ops import PublishOp, WriteOp
from pglimits_core.workloads.pubsub.points import (
    PUBLISHING,
    PubsubVariant,
    fanout_point,
    publisher_loop,
    run_point,
    subscriber_role,
)
from pglimits_core.workloads.pubsub.systems.registry import make_system

COMMIT_MODES = ("alone", "txn_without_notify", "notify_in_txn", "beside_notify")


def commit_point(run: StudyRun, v: PubsubVariant, mode: str, writers: int, duration_s: float,
                 warmup_s: float = 1.0, notify_rate: float = 1000, repetition: int = 0) -> RecordedRun:
    """``writers`` inserting in ``mode`` (see the module doc); one subscriber listens throughout."""
    if not v.transactional or mode not in COMMIT_MODES:
        raise PGLimitsError(f"commit serialization: {v.label} / {mode!r}",
                            f"a Postgres variant and one of {', '.join(COMMIT_MODES)}")

    def roles(common: tuple) -> list[Role]:
        return [subscriber_role(common, 1),
                Role("writer", commit_writer(common, v, mode), workers=writers, loop=ClosedLoop(idle_sleep_s=0),
                     active_phases=PUBLISHING),
                *beside_publisher(common, v, mode, notify_rate)]

    make_system(v.system, run.ctx.endpoints[v.server].url).reset_writes()
    params = {"mode": mode, "writers": writers, "subscribers": 1, "repetition": repetition,
              "notify_rate": notify_rate if mode == "beside_notify" else None}
    return run_point(run, v, "commit_serialization", roles, params, duration_s, warmup_s)


def commit_writer(common: tuple, v: PubsubVariant, mode: str) -> PublishOp | WriteOp:
    """The writers' operation: a row and the notifications in one transaction, or the row
    alone (with the round-trip control's select in ``txn_without_notify``)."""
    if mode == "notify_in_txn":
        return PublishOp(*common, batch=v.batch, with_write=True)
    return WriteOp(*common, control_select=mode == "txn_without_notify")


def beside_publisher(common: tuple, v: PubsubVariant, mode: str, notify_rate: float) -> list[Role]:
    """``beside_notify``: one open-loop publisher notifying in its own transactions."""
    if mode != "beside_notify":
        return []
    return [Role("publisher", PublishOp(*common, batch=v.batch), workers=1,
                 loop=publisher_loop(notify_rate, v.batch), active_phases=PUBLISHING)]


def idle_listeners_point(run: StudyRun, v: PubsubVariant, idle: int, subscribers: int, duration_s: float,
                         warmup_s: float, repetition: int) -> RecordedRun:
    """One publisher flat out to ``subscribers`` while ``idle`` listeners wait on other channels,
    with the server's memory read once they are connected (what each listener costs)."""
    return fanout_point(run, v, subscribers, 1, None, duration_s, warmup_s=warmup_s, idle=idle,
                        experiment="idle_listeners", extra_params={"repetition": repetition}, memory=True)


def stuck_point(run: StudyRun, v: PubsubVariant, stall_s: float, subscribers: int, rate: float, duration_s: float,
                warmup_s: float, payload_bytes: int, repetition: int) -> RecordedRun:
    """One publisher at ``rate`` while subscriber 0 stops reading for ``stall_s`` (0: the control)."""
    return fanout_point(run, v, subscribers, 1, rate, duration_s, warmup_s=warmup_s, payload_bytes=payload_bytes,
                        experiment="stuck_subscriber", stall_s=stall_s, extra_params={"repetition": repetition})


def payload_point(run: StudyRun, v: PubsubVariant, sizes: list[int]) -> RecordedRun:
    """A short flat-out run at the default payload, then each size in ``sizes`` published once:
    the largest accepted and the exact error text of the smallest refused."""
    url = run.ctx.endpoints[v.server].url

    def roles(common: tuple) -> list[Role]:
        return [subscriber_role(common, 1),
                Role("publisher", PublishOp(*common, batch=1), workers=1, loop=publisher_loop(None, 1),
                     active_phases=PUBLISHING)]

    def probe(_outcome: dict[str, Any]) -> dict[str, Any]:
        return {"payload_sizes": [probe_size(v, url, size) for size in sorted(sizes)]}

    return run_point(run, v, "payload_limit", roles, {"sizes": ",".join(map(str, sorted(sizes)))},
                     0.5, 0.2, after=probe)


def probe_size(v: PubsubVariant, url: str, size: int) -> dict[str, Any]:
    """Publish one message of ``size`` bytes on its own connection: accepted, or the error."""
    payload = encode_message("probe", 0, 0, size)
    try:
        make_system(v.system, url).publish_once("pl_probe", payload)
    except Exception as error:
        return {"bytes": size, "accepted": False, "error": f"{type(error).__name__}: {str(error).strip()}"}
    return {"bytes": size, "accepted": True, "error": None}
