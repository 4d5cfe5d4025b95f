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
Idle listeners and the stuck subscriber are fan-out points with options (``pubsub.fanout_point``).
"""

from __future__ import annotations

from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.load import ClosedLoop, Role
from pglimits_core.studies.runner import Context, RecordedRun
from pglimits_core.workloads.pubsub.ledger import encode_message
from pglimits_core.workloads.pubsub.ops import PublishOp, WriteOp
from pglimits_core.workloads.pubsub.points import (
    PUBLISHING,
    PubsubVariant,
    publisher_loop,
    run_point,
    subscriber_role,
)

WRITES_TABLE = "pubsub_writes"
INSERT = f"INSERT INTO {WRITES_TABLE} (payload) VALUES (repeat('w', 64))"
COMMIT_MODES = ("alone", "txn_without_notify", "notify_in_txn", "beside_notify")


def fresh_writes_table(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {WRITES_TABLE}")
        conn.execute(f"CREATE TABLE {WRITES_TABLE} (id bigserial PRIMARY KEY, at timestamptz DEFAULT now(), "
                     "payload text)")


def commit_point(ctx: Context, v: PubsubVariant, mode: str, writers: int, duration_s: float,
                 warmup_s: float = 1.0, notify_rate: float = 1000, seed: int = 0,
                 repetition: int = 0) -> RecordedRun:
    """``writers`` inserting in ``mode`` (see the module doc); one subscriber listens throughout."""
    if v.server != "postgres" or mode not in COMMIT_MODES:
        raise PGLimitsError(f"commit serialization: {v.label} / {mode!r}",
                            f"a Postgres variant and one of {', '.join(COMMIT_MODES)}")

    def roles(common: tuple) -> list[Role]:
        if mode == "notify_in_txn":
            writer = PublishOp(*common, batch=v.batch, statement=INSERT)
        else:
            writer = WriteOp(*common, statement=INSERT, control_select=mode == "txn_without_notify")
        found = [subscriber_role(common, 1),
                 Role("writer", writer, workers=writers, loop=ClosedLoop(idle_sleep_s=0), active_phases=PUBLISHING)]
        if mode == "beside_notify":
            found.append(Role("publisher", PublishOp(*common, batch=v.batch), workers=1,
                              loop=publisher_loop(notify_rate, v.batch), active_phases=PUBLISHING))
        return found

    fresh_writes_table(ctx.endpoints[v.server].url)
    params = {"mode": mode, "writers": writers, "subscribers": 1, "repetition": repetition,
              "notify_rate": notify_rate if mode == "beside_notify" else None}
    return run_point(ctx, v, "commit_serialization", roles, params, duration_s, warmup_s, seed)


def payload_point(ctx: Context, v: PubsubVariant, sizes: list[int], seed: int = 0) -> RecordedRun:
    """A short flat-out run at the default payload, then each size in ``sizes`` published once:
    the largest accepted and the exact error text of the smallest refused."""
    url = ctx.endpoints[v.server].url

    def roles(common: tuple) -> list[Role]:
        return [subscriber_role(common, 1),
                Role("publisher", PublishOp(*common, batch=1), workers=1, loop=publisher_loop(None, 1),
                     active_phases=PUBLISHING)]

    def probe(_outcome: dict[str, Any]) -> dict[str, Any]:
        return {"payload_sizes": [probe_size(v, url, size) for size in sorted(sizes)]}

    return run_point(ctx, v, "payload_limit", roles, {"sizes": ",".join(map(str, sorted(sizes)))},
                     0.5, 0.2, seed, after=probe)


def probe_size(v: PubsubVariant, url: str, size: int) -> dict[str, Any]:
    """Publish one message of ``size`` bytes on its own connection: accepted, or the error."""
    payload = encode_message("probe", 0, 0, size)
    try:
        if v.server == "postgres":
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("SELECT pg_notify('pl_probe', %s)", (payload,))
        else:
            import redis

            with redis.Redis.from_url(url) as client:
                client.publish("pl_probe", payload)
    except Exception as error:
        return {"bytes": size, "accepted": False, "error": f"{type(error).__name__}: {str(error).strip()}"}
    return {"bytes": size, "accepted": True, "error": None}
