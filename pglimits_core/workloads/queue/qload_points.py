"""The queue's open-loop rate point driven by qload (``load.tools.qload``): the harness's latency
point — producers at a fixed offered rate, one message per enqueue, closed-loop consumers, send →
claim from the *intended* send — with the load compiled, so one load core can offer the rates the
Python producers and consumers cannot (they top out near 1,500 jobs/s of a two-phase queue on one
core). The verbs are each system's own: the adapter's SQL constants for the Postgres designs (with
the variant's session settings), the reliable queue's commands for Redis, and for the SQLite WAL
queue the adapter's statements, PRAGMAs, shard dealing and busy retries: SQLite is embedded, so
there qload *is* the program the engine runs in — a compiled one, as the SQLite source study's was
— and its core is the engine's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pglimits_core.load.tools.qload import QloadLoad
from pglimits_core.studies.runner import RecordedRun, run_tool_recorded
from pglimits_core.workloads.queue.points import STUDY, QueueVariant, fresh_queue
from pglimits_core.workloads.queue.systems.qload_verbs import qload_target, qload_verbs

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun


def qload_point(run: StudyRun, v: QueueVariant, rate: float, producers: int, consumers: int, duration_s: float,
                warmup_s: float, experiment: str, extra_params: dict[str, Any] | None = None) -> RecordedRun:
    """One qload run on a fresh, empty queue; the record's outcome says what was left in it."""
    ctx = run.ctx
    load = QloadLoad(qload_verbs(v), qload_target(ctx.endpoints[v.server].url, v), rate, producers,
                     consumers, v.batch, duration_s, warmup_s, seed=run.seed)
    params = {"experiment": experiment, "variant": v.label, "options": v.options, "rate": rate,
              "producers": producers, "consumers": consumers, **(extra_params or {})}
    name = f"{experiment}:{v.label}"
    reused = ctx.reuse(STUDY, v.system, name, {**params, **load.describe()})
    if reused:
        return reused
    adapter = fresh_queue(ctx, v)
    try:
        def after(result) -> dict[str, Any]:
            return {"left_after_run": adapter.depth(), "adapter": adapter.describe(),
                    "tool_reported": result.params.get("tool_reported", {})}

        return run_tool_recorded(ctx, STUDY, v.system, name, v.server, load, params, seed=run.seed,
                                 tables=adapter.describe().get("tables"), after=after)
    finally:
        adapter.close()
