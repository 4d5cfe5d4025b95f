"""The ``ceiling`` experiment: the search study's measured query driven by each system's own load
tool instead of the Python harness.

Per variant, stream and client count, one run record: pgbench for Postgres GIN (ranked and
unranked), vegeta (HTTP, closed loop) for Elasticsearch and OpenSearch — the same samplers, the
same client/server CPU split (client = the tool's processes), the tool's name, version and exact
command lines in the manifest (``ceiling_tools`` says what each runs). The point runs on a
variant that passed its correctness check, on a loaded index, after the untimed warm-up, as a
throughput point does. It answers "is the harness the limit?" point by point: the ``ceiling``
table sets each tool rate beside the harness's throughput at as many clients.

A system is here when it has an entry in ``CEILING_TOOLS``; a variant named in the profile's
``ceiling.variants`` without one is a plan error, and a tool missing from the machine fails its
points with a one-line reason (the study reports it), never a silent skip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.studies.runner import RecordedRun, run_tool_recorded
from pglimits_core.studies.study import Point, point
from pglimits_core.workloads.search.ceiling_tools import CEILING_TOOLS
from pglimits_core.workloads.search.correctness import verified
from pglimits_core.workloads.search.loading import ensure_loaded
from pglimits_core.workloads.search.points import stream_params, warm_up
from pglimits_core.workloads.search.prepared import Setup
from pglimits_core.workloads.search.records import STUDY
from pglimits_core.workloads.search.variant import SearchVariant

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

EXPERIMENT = "ceiling"


def ceiling_variants(section: Any, variants: list[SearchVariant]) -> list[SearchVariant]:
    """The variants the ``ceiling:`` section asks for (empty: every one with a tool)."""
    chosen = [v for v in variants if section.includes(v.label) and (section.variants or v.system in CEILING_TOOLS)]
    for v in chosen:
        if v.system not in CEILING_TOOLS:
            raise PGLimitsError(f"search.ceiling.variants names {v.label!r}, but {v.system} has no load tool here",
                                f"name variants of {', '.join(sorted(CEILING_TOOLS))}")
    return chosen


def ceiling_points(section: Any, setup: Setup, variants: list[SearchVariant]) -> list[Point]:
    """Every (stream, clients, variant) point of the profile's ``ceiling:`` section (None: none)."""
    if section is None:
        return []
    return [point(EXPERIMENT, v, ceiling_point, setup=setup, stream=stream, clients=clients,
                  duration_s=section.duration_s, warmup_s=section.warmup_s)
            for stream in section.streams for clients in section.clients
            for v in ceiling_variants(section, variants)]


def ceiling_point(run: StudyRun, v: SearchVariant, setup: Setup, stream: str, clients: int, duration_s: int,
                  warmup_s: int, experiment: str = EXPERIMENT, extra_params: dict[str, Any] | None = None) -> RecordedRun:
    """One tool run of ``stream`` at ``clients`` on a checked, loaded, warm index, recorded under
    ``experiment`` with ``extra_params`` (the capacity experiment's ceiling is this run)."""
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
