"""Vectors' writes while querying (``experiments.writes``): each engine queried open loop at the
latency section's matched rate — one offered rate for every engine, each at its own smallest ef
reaching the recall target — while writer processes rewrite a share of the collection per minute.

A rewrite replaces a vector by a new version of itself (``VectorSystem.rewrite``: Postgres a
DELETE and INSERT in one transaction, committed with its fsync; Qdrant a gRPC upsert of the same
point, ``wait=true``), so the exact top 10 stays the dataset's ground truth: recall is scored
against it before the writes run, at its end (``after_s`` after the writes stopped, each engine
left to its background upkeep) and after the cleanup run (Postgres's VACUUM; Qdrant's optimizer,
waited for), whose cleanup ran under the same queries. With ``rebuild`` each point starts from a
fresh build, so every engine and write rate starts from the state the build leaves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pglimits_core.experiments.writes import EXPERIMENT, WritesTiming, run_point
from pglimits_core.studies.runner import Context, RecordedRun
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.vectors.ops import CleanupOp, QueryOp, RewriteOp
from pglimits_core.workloads.vectors.points import (
    STUDY,
    K,
    Setup,
    VectorsVariant,
    build_index,
    dataset,
    ensure_index,
    matched_rate,
    recall_score,
    server_memory_now,
    system_for,
)


@dataclass
class VectorsWrites:
    """``experiments.writes.WritesDesign`` for one engine at ``ef``; ``recall_queries``: the
    recall is scored on the dataset's first N queries (None: all)."""

    ctx: Context
    variant: VectorsVariant
    setup: Setup
    ef: int
    recall_queries: int | None = None

    def __post_init__(self) -> None:
        self.path, self.data = dataset(self.setup)
        self.items = len(self.data.base)
        self.cleanup_kind = self._engine().cleanup_kind

    def query_op(self) -> QueryOp:
        return QueryOp(self._engine(), str(self.path), self.ef, K)

    def rewrite_op(self) -> RewriteOp:
        return RewriteOp(self._engine(), str(self.path))

    def cleanup_op(self) -> CleanupOp:
        return CleanupOp(self._engine())

    def quality(self) -> dict[str, Any]:
        with self._engine() as system:
            system.set_search_params(self.ef, K)
            return recall_score(self.setup, self.recall_queries)(self.data, system)

    def state(self) -> dict[str, Any]:
        """The engine's own account, and the server's memory now (PSS over its processes)."""
        with self._engine() as system:
            found = system.write_state()
        return {**found, **server_memory_now(self.ctx.endpoints[self.variant.server].pids)}

    def _engine(self):
        return system_for(self.ctx, self.variant, self.setup)


def writes_point(run: StudyRun, v: VectorsVariant, setup: Setup, hnsw: list[VectorsVariant], target_recall: float,
                 fraction: float, timing: WritesTiming, repetition: int, rebuild: bool,
                 recall_queries: int | None = None) -> RecordedRun:
    """One writes-while-querying point of ``v`` at ``timing``'s write rate (see the module): its
    writes run and its cleanup run. Each point's writers take their own order (the seed)."""
    matched = matched_rate(run.ctx, hnsw, target_recall, fraction)
    ef, rate = matched["by_variant"][v.label]["ef"], matched["rate"]
    design = VectorsWrites(run.ctx, v, setup, ef, recall_queries)
    params = {"experiment": EXPERIMENT, "variant": v.label, **setup.params(), "ef": ef,
              "clients": timing.query_workers, "repetition": repetition, "target_recall": target_recall,
              "rate_fraction": fraction, "rate": rate, "rebuild": rebuild, "recall_queries": recall_queries,
              **timing.params(), "client": v.system_class.query_client}
    built: dict[str, Any] = {}

    def ready() -> None:
        with system_for(run.ctx, v, setup) as system:
            if rebuild:
                found = build_index(system, design.data.base)
                built.update(build_s=found.get("build_s"), load_s=found.get("load_s"))
            else:
                ensure_index(system, design.data.base)

    seed = run.seed * 1000 + repetition * 100 + int(timing.write_pct_per_min)
    return run_point(run.ctx, STUDY, v, design, timing, rate, seed, params, ready,
                     extra={"matched": matched, "build": built})
