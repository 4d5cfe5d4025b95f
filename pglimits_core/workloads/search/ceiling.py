"""A capacity ceiling through the system's own load tool: the search study's measured query
driven by pgbench for Postgres GIN (ranked and unranked) or vegeta (HTTP, closed loop) for
Elasticsearch and OpenSearch instead of the Python harness — the same samplers, the tool's name,
version and exact command lines in the manifest (``ceiling_tools`` says what each runs). The run
is on a variant that passed its correctness check, on a loaded index, after the untimed warm-up,
as a throughput point is. A tool missing from the machine fails its point with a one-line
reason (the study reports it), never a silent skip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pglimits_core.studies.runner import RecordedRun, run_tool_recorded
from pglimits_core.workloads.search.ceiling_tools import CEILING_TOOLS
from pglimits_core.workloads.search.correctness import verified
from pglimits_core.workloads.search.loading import ensure_loaded
from pglimits_core.workloads.search.points import stream_params, warm_up
from pglimits_core.workloads.search.prepared import Setup
from pglimits_core.workloads.search.records import STUDY
from pglimits_core.workloads.search.variant import SearchVariant

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

def ceiling_point(run: StudyRun, v: SearchVariant, setup: Setup, stream: str, clients: int, duration_s: int,
                  warmup_s: int, experiment: str, extra_params: dict[str, Any] | None = None) -> RecordedRun:
    """One tool run of ``stream`` at ``clients`` on a checked, loaded, warm index, recorded under
    ``experiment`` with ``extra_params``."""
    ctx, tool = run.ctx, CEILING_TOOLS[v.system]
    url = ctx.endpoints[v.server].url
    queries, params = stream_params(setup, v, stream)
    load = tool.load(url, v, queries, clients, duration_s, warmup_s)  # a missing tool fails here
    params = {"experiment": experiment, "variant": v.label, "clients": clients, "duration_s": duration_s,
              "warmup_s": warmup_s, **params, **(extra_params or {})}
    name = f"{experiment}:{v.label}"
    if reused := ctx.reuse(STUDY, v.system, name, {**params, **load.describe()}):
        return reused
    verified(ctx, setup, v)
    ensure_loaded(ctx, setup, v)
    warmed = warm_up(ctx, setup, v)
    tool.prepare(url, queries)

    def after(result) -> dict[str, Any]:
        return {"warmup_before": warmed, "tool_reported": result.params.get("tool_reported", {})}

    return run_tool_recorded(ctx, STUDY, v.system, name, v.server, load, params, seed=run.seed,
                             tables=v.engine().sampled_tables, after=after)
