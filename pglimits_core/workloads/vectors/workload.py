"""The vector study as a registry entry: pgvector HNSW vs Qdrant HNSW at matched recall, with the
exact scan's cost, each engine's build cost and the dataset's difficulty."""

from __future__ import annotations

from pglimits_core.plotting.capacity import capacity_chart
from pglimits_core.plotting.writes import timeline_chart
from pglimits_core.registry import Chart, Workload, with_capacity
from pglimits_core.workloads.vectors.capacity import capacity_decisions
from pglimits_core.workloads.vectors.decision import (
    decisions,
    extension_decisions,
    filtered_decisions,
)
from pglimits_core.workloads.vectors.footprint import footprint_decisions
from pglimits_core.workloads.vectors.plan import plan
from pglimits_core.workloads.vectors.profile import VectorsProfile
from pglimits_core.workloads.vectors.report import (
    SEED_NOTES,
    build_chart,
    filtered_chart,
    pareto_chart,
    readme_lines,
    recall_chart,
    report_sections,
    seed_comparison,
)
from pglimits_core.workloads.vectors.tables import all_tables, vectors_frame
from pglimits_core.workloads.vectors.writes_report import writes_recall_chart


def vectors_capacity_chart(table):
    return capacity_chart(table, unit="queries/s", what="query p99 from the intended start")


WORKLOAD = Workload(
    name="vectors",
    title="Vectors",
    notebook="30-vectors",
    section=VectorsProfile,
    plan=plan,
    frame=vectors_frame,
    tables=all_tables,
    charts=(Chart("capacity", "vectors-capacity", vectors_capacity_chart, "curve"),
            Chart("sweep", "vectors-recall-qps", pareto_chart, "recall_mean", under="matched"),
            Chart("sweep", "vectors-recall-ef", recall_chart, "recall_mean"),
            Chart("build", "vectors-build", build_chart, "build_s"),
            Chart("filtered", "vectors-filtered", filtered_chart, "recall_mean"),
            Chart("writes_timeline", "vectors-writes-timeline", timeline_chart, "query_p99_ms", under="writes"),
            Chart("writes", "vectors-writes-recall", writes_recall_chart, "recall_mean_before")),
    report_sections=report_sections,
    readme_lines=readme_lines,
    capacity_unit="queries/s",
    seed_comparison=seed_comparison,
    seed_notes=SEED_NOTES,
    decisions=with_capacity(capacity_decisions, decisions, filtered_decisions, footprint_decisions),
    extension_decisions=extension_decisions,
)
