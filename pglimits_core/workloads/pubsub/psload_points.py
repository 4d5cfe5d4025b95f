"""Pub/sub's open-loop rate point driven by psload (``load.tools.psload``): the fan-out study's
rate point — publishers at a fixed offered rate, one message per publish, every subscriber on its
own connection, delivery from the *intended* publish, every message accounted for — with the load
compiled, so one load core can receive what 50 Python subscriber processes cannot. The verbs are
each system's own: ``SELECT pg_notify(channel, payload)`` autocommitted and ``LISTEN`` for
Postgres, ``PUBLISH`` / ``SUBSCRIBE`` for Redis; one message per publish (a batched variant is the
harness's: psload does not batch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools.psload import PsloadLoad, outcome_of
from pglimits_core.studies.runner import RecordedRun, run_tool_recorded
from pglimits_core.workloads.pubsub.points import STUDY, PubsubVariant

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

#: the pub/sub systems psload drives, as psload names them
PSLOAD_SYSTEMS = {"pg_notify": "postgres", "redis_publish": "redis"}
#: every psload run subscribes afresh before its first publish, and neither system keeps a message
#: for a subscriber that was not there: one channel name serves every run
CHANNEL = "psload"


def psload_system(v: PubsubVariant) -> str:
    """psload's name for the variant's system; one it does not drive is a plan error."""
    if v.system not in PSLOAD_SYSTEMS or v.batch != 1:
        raise PGLimitsError(f"psload does not drive {v.label}: it publishes one message per publish on "
                            f"{' and '.join(PSLOAD_SYSTEMS)}", "use the harness's load for it (capacity.load: harness)")
    return PSLOAD_SYSTEMS[v.system]


def psload_target(url: str, system: str) -> str:
    """What psload connects to: the libpq DSN as the adapters use it, or Redis's host:port."""
    if system != "redis":
        return url
    parsed = urlparse(url)
    return f"{parsed.hostname}:{parsed.port}"


def psload_point(run: StudyRun, v: PubsubVariant, subscribers: int, publishers: int, rate: float,
                 duration_s: float, warmup_s: float, payload_bytes: int, experiment: str,
                 extra_params: dict[str, Any] | None = None) -> RecordedRun:
    """One psload run; the record's outcome is the fan-out study's accounting, message by message."""
    ctx = run.ctx
    system = psload_system(v)
    load = PsloadLoad(system, psload_target(ctx.endpoints[v.server].url, system), CHANNEL, rate, publishers,
                      subscribers, payload_bytes, duration_s, warmup_s)
    params = {"experiment": experiment, "variant": v.label, "batch": v.batch, "subscribers": subscribers,
              "publishers": publishers, "rate": rate or None, "loop": "open" if rate else "closed",
              "payload_bytes": payload_bytes,
              **(extra_params or {})}
    name = f"{experiment}:{v.label}"
    reused = ctx.reuse(STUDY, v.system, name, {**params, **load.describe()})
    if reused:
        return reused

    def after(result) -> dict[str, Any]:
        return outcome_of(result.params.get("tool_reported", {}), subscribers)

    return run_tool_recorded(ctx, STUDY, v.system, name, v.server, load, params, seed=run.seed, after=after)
