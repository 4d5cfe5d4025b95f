"""The pub/sub ``ceiling`` experiment: publishing driven by each system's own C tool.

Per variant, publisher count and listener count, one run record (``run_tool_recorded``: the
same samplers and client/server CPU split as a harness run; client = the tool's processes and
the listeners): pgbench publishing with the harness's own statement (``systems.postgres``'s
``NOTIFY_ONE``, or ``NOTIFY_MANY`` for a batch) in autocommit, one publish = one transaction;
redis-benchmark sending ``PUBLISH`` (``-P batch``: a pipeline of that many), closed loop only.
Payloads are the harness's message shape and size (``ledger.encode_message``): pgbench numbers
each client's messages (publisher ``p<client_id>``, sequence 0, 1, 2 ...), so a listener's
received ranges show any loss; redis-benchmark sends one fixed payload (it cannot number
messages), so there the listeners' counts are compared with the requests sent.

Listeners (``listeners`` > 0) are the study's own subscribers (``ceiling_listen``), listening
before the first publish and counting what arrives; 0 listeners is the publish ceiling with
nobody listening — a different number (nothing is delivered). The record's outcome says how
many messages each listener received against how many were published, and what was lost.

A system is here when it has an entry in ``CEILING_TOOLS``; a tool missing from the machine
fails its points with a one-line reason (the study reports it), never a silent skip.
"""

from __future__ import annotations

import shutil
from collections import Counter
from typing import TYPE_CHECKING, Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools import PgbenchLoad, RedisBenchmarkLoad
from pglimits_core.load.tools.pgbench import LOG_PREFIX
from pglimits_core.load.tools.process import ToolCommand
from pglimits_core.studies.runner import RecordedRun, run_tool_recorded
from pglimits_core.studies.study import Point, point
from pglimits_core.workloads.pubsub.ceiling_listen import URL_ENV, launcher_argv
from pglimits_core.workloads.pubsub.ceiling_tools import (
    SEQ_VARIABLE,
    judge_listeners,
    notify_script,
    publish_steps,
)
from pglimits_core.workloads.pubsub.points import STUDY, PubsubVariant, _scratch

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

EXPERIMENT = "ceiling"


class Listened:
    """What both tools' loads share: with ``listeners`` > 0 every command runs under the
    listener launcher (``ceiling_listen``), and the listeners count as client processes."""

    listen: dict[str, Any] | None = None

    def attach(self, system: str, url: str, channel: str, listeners: int, ledger: str) -> None:
        if listeners:
            self.listen = {"argv": launcher_argv(system, channel, listeners, ledger), "env": {URL_ENV: url}}
            self.client_cores += listeners

    def listened(self, commands: list[ToolCommand]) -> list[ToolCommand]:
        if not self.listen:
            return commands
        return [ToolCommand(c.step, [*self.listen["argv"], *c.argv], c.timeout_s, {**c.env, **self.listen["env"]})
                for c in commands]


class NotifyPgbench(Listened, PgbenchLoad):
    """pgbench publishing; also counts each client's logged transactions (its publisher's
    confirmed messages = that count × batch)."""

    logged_per_client: Counter | None = None

    def commands(self) -> list[ToolCommand]:
        # every client's message sequence starts at 0 (the script advances it per transaction)
        numbered = [ToolCommand(c.step, [c.argv[0], "-D", f"{SEQ_VARIABLE}=0", *c.argv[1:]], c.timeout_s, c.env)
                    for c in super().commands()]
        return self.listened(numbered)

    def run(self, process) -> Any:
        result = super().run(process)
        self.logged_per_client = Counter(line.split()[0] for path in sorted(process.cwd.glob(f"{LOG_PREFIX}.*"))
                                         for line in path.read_text().splitlines() if line.split())
        return result


class PublishBenchmark(Listened, RedisBenchmarkLoad):
    def commands(self) -> list[ToolCommand]:
        return self.listened(super().commands())


class PgbenchPublish:
    """pgbench, ``-T warmup + duration`` seconds, the measured window after the warm-up."""

    tool = "pgbench"

    def load(self, url: str, v: PubsubVariant, channel: str, publishers: int, knobs: dict[str, Any]) -> NotifyPgbench:
        return NotifyPgbench(url, notify_script(channel, v.batch, knobs["payload_bytes"]), publishers,
                             knobs["duration_s"], knobs["warmup_s"], items_per_transaction=v.batch, op="publish",
                             script_name="pg_notify.sql")

    def published(self, load: NotifyPgbench, batch: int) -> list[dict[str, Any]]:
        """One publisher per pgbench client: its logged transactions × batch, numbered from 0."""
        return [{"publisher": f"p{client}", "published": count * batch, "first_start_ns": None}
                for client, count in sorted((load.logged_per_client or {}).items())]


class RedisBenchmarkPublish:
    """redis-benchmark, ``requests`` PUBLISHes (the tool's fixed payload: not numbered)."""

    tool = "redis-benchmark"

    def load(self, url: str, v: PubsubVariant, channel: str, publishers: int,
             knobs: dict[str, Any]) -> PublishBenchmark:
        return PublishBenchmark(url, publish_steps(channel, knobs["payload_bytes"]), publishers, knobs["requests"],
                                pipeline=v.batch)

    def published(self, load: PublishBenchmark, batch: int) -> list[dict[str, Any]]:
        return [{"publisher": None, "published": load.requests}]


CEILING_TOOLS: dict[str, Any] = {"pg_notify": PgbenchPublish(), "redis_publish": RedisBenchmarkPublish()}


def ceiling_points(section: Any, variants: list[PubsubVariant]) -> list[Point]:
    """Every (variant, publishers, listeners) point of the profile's ``ceiling:`` section, per round."""
    if section is None:
        return []
    chosen = [v for v in variants if section.includes(v.label) and (section.variants or v.system in CEILING_TOOLS)]
    for v in chosen:
        if v.system not in CEILING_TOOLS:
            raise PGLimitsError(f"pubsub.ceiling.variants names {v.label!r}, but {v.system} has no C load tool here",
                                f"name variants of {', '.join(sorted(CEILING_TOOLS))}")
    return [point(EXPERIMENT, v, ceiling_point, publishers=p, listeners=n, duration_s=section.duration_s,
                  warmup_s=section.warmup_s, requests=section.requests, payload_bytes=section.payload_bytes,
                  repetition=r)
            for r in range(section.repetitions) for v in chosen for p in section.publishers for n in section.listeners]


def ceiling_point(run: StudyRun, v: PubsubVariant, publishers: int, listeners: int, duration_s: int,
                  warmup_s: int, requests: int, payload_bytes: int = 64, repetition: int = 0) -> RecordedRun:
    """One tool run on a fresh channel, ``listeners`` of the study's subscribers attached."""
    ctx, tool = run.ctx, CEILING_TOOLS[v.system]
    # named by the point, not at random: the recorded command lines, which hold both, are then
    # the same for the same point, so an interrupted study finds (and keeps) its earlier record
    tag = f"{v.system}_b{v.batch}_p{publishers}_l{listeners}_r{repetition}"
    url, channel, ledger = ctx.endpoints[v.server].url, f"pl_ceiling_{tag}", _scratch() / f"ceiling-{tag}"
    knobs = {"duration_s": duration_s, "warmup_s": warmup_s, "requests": requests, "payload_bytes": payload_bytes}
    shutil.rmtree(ledger, ignore_errors=True)
    ledger.mkdir(parents=True)
    try:
        load = tool.load(url, v, channel, publishers, knobs)  # a missing tool fails here
        load.attach(v.system, url, channel, listeners, str(ledger))
        params = {"experiment": EXPERIMENT, "variant": v.label, "batch": v.batch, "publishers": publishers,
                  "subscribers": listeners, "listeners": listeners, "loop": "closed", "repetition": repetition,
                  **knobs}
        name = f"{EXPERIMENT}:{v.label}"
        reused = ctx.reuse(STUDY, v.system, name, {**params, **load.describe()})
        if reused:
            return reused

        def after(result) -> dict[str, Any]:
            return {**judge_listeners(tool.published(load, v.batch), ledger, listeners, result),
                    "tool_reported": result.params.get("tool_reported", {})}

        return run_tool_recorded(ctx, STUDY, v.system, name, v.server, load, params, seed=run.seed, after=after)
    finally:
        shutil.rmtree(ledger, ignore_errors=True)

