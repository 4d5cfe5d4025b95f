"""The ``ceiling`` experiment: the vector query driven by each engine's own C load tool.

Per engine, ef and client count, one run record (``runner.run_tool_recorded``: the same samplers
and client/server CPU split as a harness run, the client being the tool's processes; the tool's
name, version and exact command lines in the manifest): pgbench for pgvector, vegeta over HTTP
for Qdrant, each sending the harness's query with the harness's query vectors at that ef
(``ceiling_tools``). It answers "is the Python harness the limit?" point by point: the
``ceiling`` table sets each tool's QPS beside the sweep's at the same (ef, clients).

The index is the sweep's (ensured first, as a sweep point does). pgbench's plan is checked
before the run and recorded with it. A system is here when it has an entry in
``CEILING_TOOLS``; a variant named in ``ceiling.variants`` without one is a plan error, and a
tool missing from the machine (or not in this build) fails its points with a one-line reason,
never a silent skip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.studies.runner import RecordedRun, run_tool_recorded
from pglimits_core.studies.study import Point, point
from pglimits_core.workloads.vectors import ceiling_tools as tools
from pglimits_core.workloads.vectors.points import (
    STUDY,
    K,
    Setup,
    VectorsVariant,
    _system,
    dataset,
    ensure_index,
)
from pglimits_core.workloads.vectors.systems.qdrant import collection_name

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

EXPERIMENT = "ceiling"


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
                                "add the vegeta load tool, or drop qdrant hnsw from vectors.ceiling.variants") from None
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


def ceiling_points(section: Any, setup: Setup, variants: list[VectorsVariant]) -> list[Point]:
    """Rounds of repetition, ef, engine and client count (None: no ``ceiling:`` section)."""
    if section is None:
        return []
    chosen = [v for v in variants if v.label in section.variants]
    for v in chosen:
        if v.system not in CEILING_TOOLS or v.exact:
            raise PGLimitsError(f"vectors.ceiling.variants names {v.label!r}, which has no C load tool here",
                                "name HNSW variants of " + ", ".join(sorted(CEILING_TOOLS)))
    return [point(EXPERIMENT, v, ceiling_point, setup=setup, ef=ef, clients=c, repetition=r,
                  duration_s=section.duration_s, warmup_s=section.warmup_s)
            for r in range(section.repetitions) for ef in section.ef for v in chosen for c in section.clients]


def ceiling_point(run: StudyRun, v: VectorsVariant, setup: Setup, ef: int, clients: int, repetition: int,
                  duration_s: int, warmup_s: int, recorded_as: str = EXPERIMENT,
                  extra_params: dict[str, Any] | None = None) -> RecordedRun:
    """One tool run at ``ef`` on the sweep's index, after the tool's own check; ``recorded_as``:
    the experiment of the record (the capacity ceiling runs this same point), ``extra_params``
    added to its params."""
    tool = CEILING_TOOLS[v.system]
    _, data = dataset(setup)
    knobs = {"duration_s": duration_s, "warmup_s": warmup_s}
    load = tool.load(run.ctx.endpoints[v.server], setup, data.queries, ef, clients, knobs)  # a missing tool fails here
    params = {"experiment": recorded_as, "variant": v.label, **setup.params(), "ef": ef, "clients": clients,
              "repetition": repetition, **knobs, "ef_set_by": tool.ef_set_by(ef), **(extra_params or {})}
    name = f"{recorded_as}:{v.label}"
    if reused := run.ctx.reuse(STUDY, v.system, name, {**params, **load.describe()}):
        return reused
    with _system(run.ctx, v, setup) as system:
        ensure_index(system, data.base)
        found = tool.prepare(system, data.queries, ef)

    def after(result: Any) -> dict[str, Any]:
        return {**found, "tool_reported": result.params.get("tool_reported", {})}

    return run_tool_recorded(run.ctx, STUDY, v.system, name, v.server, load, params, seed=run.seed, after=after)
