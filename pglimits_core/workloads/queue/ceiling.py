"""The ``ceiling`` experiment: the queue's statements driven by each system's own C tool.

Per variant and client count, one run record: pgbench on a prefilled, settled jobs table (the
throughput points' prefill and settle) for the Postgres SKIP LOCKED designs, redis-benchmark
for the Redis reliable queue — the same samplers, the same client/server CPU split (client =
the tool's processes), the tool's name, version and exact command lines in the manifest. It
answers "is the harness the limit?" point by point: the ``ceiling`` table sets each tool rate
beside the harness's throughput at as many consumers.

A system is here when it has an entry in ``CEILING_TOOLS``; a variant named in the profile's
``ceiling.variants`` without one is a plan error, and a tool missing from the machine fails
its points with a one-line reason (the study reports it), never a silent skip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools import PgbenchLoad, RedisBenchmarkLoad
from pglimits_core.studies.runner import RecordedRun, run_tool_recorded
from pglimits_core.studies.study import Point, point
from pglimits_core.workloads.queue import ceiling_tools as scripts
from pglimits_core.workloads.queue.points import STUDY, QueueVariant, fresh_queue, prefill

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

EXPERIMENT = "ceiling"


class PgbenchCeiling:
    """pgbench runs ``script(batch)`` on a jobs table prefilled with ``prefill`` jobs; the
    run holds only if every logged transaction claimed a full batch (the table never ran dry)."""

    tool = "pgbench"
    fills_queue = True

    def __init__(self, script, op: str):
        self.script, self.op = script, op

    def load(self, url: str, v: QueueVariant, clients: int, knobs: dict[str, Any]) -> PgbenchLoad:
        return PgbenchLoad(url, self.script(v.batch), clients, knobs["duration_s"], knobs["warmup_s"],
                           items_per_transaction=v.batch, op=self.op, script_name=f"{v.system}.sql")

    def judge(self, adapter, result, prefilled: int, clients: int, batch: int) -> dict[str, Any]:
        """Rows the run removed against what the logged transactions claim they took: fewer
        means claims came back short (the table ran dry) and jobs/s = transactions × batch
        overstates; a few more are the transactions cut off by ``-T`` (not logged)."""
        logged = result.params.get("tool_reported", {}).get("logged_transactions", 0)
        left = adapter.depth()
        removed, expected = prefilled - left, logged * batch
        fact = {"prefilled": prefilled, "left_after_run": left, "removed": removed,
                "logged_jobs": expected}
        if left == 0 or not expected <= removed <= expected + clients * batch:
            return {**fact, "error": f"queue ran dry or lost count: {removed} jobs removed, "
                                     f"{expected} claimed by logged transactions — raise ceiling.prefill"}
        return fact


class RedisBenchmarkCeiling:
    """redis-benchmark runs the reliable queue's LPUSH, LMOVE and LREM, ``requests`` each, with
    the variant's pipeline depth; per-job rates are derived from them in the table."""

    tool = "redis-benchmark"
    fills_queue = False  # the LPUSH step fills what the LMOVE step takes

    def load(self, url: str, v: QueueVariant, clients: int, knobs: dict[str, Any]) -> RedisBenchmarkLoad:
        steps = scripts.reliable_queue_steps(v.options.get("key", scripts.DEFAULT_KEY))
        return RedisBenchmarkLoad(url, steps, clients, knobs["requests"], int(v.options.get("pipeline", 1)))

    def judge(self, adapter, result, prefilled: int, clients: int, batch: int) -> dict[str, Any]:
        """Every LMOVE found a job and every LREM its value: nothing is left behind."""
        left = adapter.depth()
        if left and result.status == "complete":
            return {"left_after_run": left, "error": f"{left} jobs left after LPUSH/LMOVE/LREM of equal counts"}
        return {"left_after_run": left}


CEILING_TOOLS: dict[str, Any] = {
    "pg_delete": PgbenchCeiling(scripts.delete_mode_script, "claim_delete"),
    "pg_skiplocked": PgbenchCeiling(scripts.two_phase_script, "claim_ack"),
    "redis_reliable": RedisBenchmarkCeiling(),
}


def ceiling_points(section: Any, variants: list[QueueVariant]) -> list[Point]:
    """Every (variant, clients) point of the profile's ``ceiling:`` section (None: none)."""
    if section is None:
        return []
    chosen = [v for v in variants if section.includes(v.label) and (section.variants or v.system in CEILING_TOOLS)]
    for v in chosen:
        if v.system not in CEILING_TOOLS:
            raise PGLimitsError(f"queue.ceiling.variants names {v.label!r}, but {v.system} has no C load tool here",
                                f"name variants of {', '.join(sorted(CEILING_TOOLS))}")
    return [point(EXPERIMENT, v, ceiling_point, clients=c, duration_s=section.duration_s,
                  warmup_s=section.warmup_s, prefill_count=section.prefill, requests=section.requests)
            for v in chosen for c in section.clients]


def ceiling_point(run: StudyRun, v: QueueVariant, clients: int, duration_s: int, warmup_s: int,
                  prefill_count: int, requests: int) -> RecordedRun:
    """One tool run on a fresh queue (prefilled and settled where the tool needs a backlog)."""
    ctx, tool = run.ctx, CEILING_TOOLS[v.system]
    knobs = {"duration_s": duration_s, "warmup_s": warmup_s, "requests": requests}
    load = tool.load(ctx.endpoints[v.server].url, v, clients, knobs)  # a missing tool fails here
    filled = prefill_count if tool.fills_queue else 0
    params = {"experiment": EXPERIMENT, "variant": v.label, "options": v.options, "clients": clients,
              "prefill": filled, **knobs}
    name = f"{EXPERIMENT}:{v.label}"
    reused = ctx.reuse(STUDY, v.system, name, {**params, **load.describe()})
    if reused:
        return reused
    adapter = fresh_queue(ctx, v)
    try:
        prefill(adapter, filled, run.seed)
        start_state = adapter.settle()

        def after(result) -> dict[str, Any]:
            return {**tool.judge(adapter, result, filled, clients, v.batch), "adapter": adapter.describe(),
                    "start_state": start_state, "tool_reported": result.params.get("tool_reported", {})}

        return run_tool_recorded(ctx, STUDY, v.system, name, v.server, load, params, seed=run.seed,
                                 tables=adapter.describe().get("tables"), after=after)
    finally:
        adapter.close()
