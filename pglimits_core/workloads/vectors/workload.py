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
    charts=(Chart("capacity", "vectors-capacity", vectors_capacity_chart, "curve",
                  caption="Query p99, from each query's intended start, against the offered rate, one line per design (engine and ef at a recall level), a panel per target: the starred rate is the highest whose steady windows held the dotted target."),
            Chart("sweep", "vectors-recall-qps", pareto_chart, "recall_mean", under="matched",
                  caption="Recall against queries per second (log), a line per engine along its ef, a panel per client count: up and to the right is better; the exact scan is the single point at recall 1."),
            Chart("sweep", "vectors-recall-ef", recall_chart, "recall_mean",
                  caption="Recall against ef per engine: the mean and the worst 5 % of queries — the ef each engine needs for a recall level, and how far its worst queries lag its mean."),
            Chart("build", "vectors-build", build_chart, "build_s",
                  caption="What building each index costs: load time, build time, size on disk and server memory (PSS), per engine; a second variant of one engine shares its colour, hatched."),
            Chart("filtered", "vectors-filtered", filtered_chart, "recall_mean",
                  caption="Filtered search against selectivity: recall against the exact filtered top 10, and rows returned, a line per engine and ef; where a line drops at low selectivity, too few of the graph's neighbours passed the filter."),
            Chart("writes_timeline", "vectors-writes-timeline", timeline_chart, "query_p99_ms", under="writes",
                  caption="Per-second query p99 while vectors are rewritten at 1 % and 10 % of the collection a minute (shaded), then through the cleanup (VACUUM, the optimizer): how much writing costs the queries, and whether they recover after it."),
            Chart("writes", "vectors-writes-recall", writes_recall_chart, "recall_mean_before",
                  caption="Recall before the writes, while they run and after the cleanup, per system and write rate: whether rewriting vectors degrades the answers, not only the latency.")),
    report_sections=report_sections,
    readme_lines=readme_lines,
    capacity_unit="queries/s",
    seed_comparison=seed_comparison,
    seed_notes=SEED_NOTES,
    decisions=with_capacity(capacity_decisions, decisions, filtered_decisions, footprint_decisions),
    extension_decisions=extension_decisions,
)
