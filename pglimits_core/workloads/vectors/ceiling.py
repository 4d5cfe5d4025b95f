"""A capacity ceiling through the engine's own C load tool: the vector query at one ef, closed
loop, one run record (``runner.run_tool_recorded``: the same samplers as a harness run, the
tool's name, version and exact command lines in the manifest) — pgbench for pgvector, vegeta over
HTTP for Qdrant, each sending the harness's query with the harness's query vectors at that ef
(``ceiling_tools``). The index is the sweep's (ensured first, as a sweep point does); pgbench's
plan is checked before the run and recorded with it. A system has a tool when it has an entry in
``CEILING_TOOLS``; a tool missing from the machine (or not in this build) fails its point with a
one-line reason, never a silent skip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.studies.runner import RecordedRun, run_tool_recorded
from pglimits_core.workloads.vectors import ceiling_tools as tools
from pglimits_core.workloads.vectors.points import (
    STUDY,
    K,
    Setup,
    VectorsVariant,
    dataset,
    ensure_index,
    system_for,
)
from pglimits_core.workloads.vectors.systems.qdrant import collection_name

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

class PgbenchCeiling:
    """pgbench on the stored query vectors; ef by ``PGOPTIONS`` on every connection."""

    tool = "pgbench"

    def ef_set_by(self, ef: int) -> str:
        return f"PGOPTIONS={tools.ef_options(ef)} in pgbench's environment (each connection's setting)"

    def load(self, endpoint: Any, setup: Setup, queries: Any, ef: int, clients: int, knobs: dict[str, Any]):
        return tools.EfPgbenchLoad(endpoint.url, tools.pgbench_script(K, len(queries)), clients, knobs["duration_s"],
                                   knobs["warmup_s"], op="query", script_name="pgvector_topk.sql",
                                   options=tools.ef_options(ef))

    def prepare(self, system: Any, queries: Any, ef: int) -> dict[str, Any]:
        """The query vectors stored; both plans checked (and recorded)."""
        stored = tools.store_queries(system.conn, queries)
        return {**tools.pgbench_plans(system.endpoint.url, K, ef), "query_table": tools.QUERY_TABLE,
                "query_vectors": stored}


class VegetaCeiling:
    """vegeta POSTs the REST search, one target per query vector, ``hnsw_ef`` in each body."""

    tool = "vegeta"

    def ef_set_by(self, ef: int) -> str:
        return f"params.hnsw_ef={int(ef)} in every request body"

    def load(self, endpoint: Any, setup: Setup, queries: Any, ef: int, clients: int, knobs: dict[str, Any]):
        try:
            from pglimits_core.load.tools.vegeta import HttpTarget, VegetaLoad
        except ImportError:
            raise PGLimitsError("vegeta not available: pglimits_core/load/tools/vegeta.py is not in this build",
                                "add the vegeta load tool, or drop qdrant hnsw from vectors.capacity.designs") from None
        url = tools.search_url(endpoint.url, collection_name(setup.tag))
        headers = {"Content-Type": "application/json"}
        targets = [HttpTarget("POST", url, tools.search_body(q, ef, K), headers) for q in queries]
        return VegetaLoad(targets, clients, knobs["duration_s"], knobs["warmup_s"], op="query")

    def prepare(self, system: Any, queries: Any, ef: int) -> dict[str, Any]:
        url = tools.search_url(system.endpoint.url, system.collection)
        return {**tools.check_search(url, tools.search_body(queries[0], ef, K), K),
                "request_body": "{vector: <query i>, limit: 10, params: {hnsw_ef: ef, exact: false}, "
                                "with_payload: false}", "query_vectors": len(queries)}


CEILING_TOOLS: dict[str, Any] = {"pgvector": PgbenchCeiling(), "qdrant": VegetaCeiling()}


def ceiling_point(run: StudyRun, v: VectorsVariant, setup: Setup, ef: int, clients: int, repetition: int,
                  duration_s: int, warmup_s: int, recorded_as: str,
                  extra_params: dict[str, Any] | None = None) -> RecordedRun:
    """One tool run at ``ef`` on the sweep's index, after the tool's own check, recorded under the
    experiment ``recorded_as`` with ``extra_params`` added to its params."""
    tool = CEILING_TOOLS[v.system]
    _, data = dataset(setup)
    knobs = {"duration_s": duration_s, "warmup_s": warmup_s}
    load = tool.load(run.ctx.endpoints[v.server], setup, data.queries, ef, clients, knobs)  # a missing tool fails here
    params = {"experiment": recorded_as, "variant": v.label, **setup.params(), "ef": ef, "clients": clients,
              "repetition": repetition, **knobs, "ef_set_by": tool.ef_set_by(ef), **(extra_params or {})}
    name = f"{recorded_as}:{v.label}"
    if reused := run.ctx.reuse(STUDY, v.system, name, {**params, **load.describe()}):
        return reused
    with system_for(run.ctx, v, setup) as system:
        ensure_index(system, data.base)
        found = tool.prepare(system, data.queries, ef)

    def after(result: Any) -> dict[str, Any]:
        return {**found, "tool_reported": result.params.get("tool_reported", {})}

    return run_tool_recorded(run.ctx, STUDY, v.system, name, v.server, load, params, seed=run.seed, after=after)
