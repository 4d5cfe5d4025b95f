"""The search study as a registry entry: Postgres GIN + tsvector (ranked and unranked) vs
Elasticsearch 8.13.4 and OpenSearch 2.19 — load and index, correctness, throughput per
term-frequency class and the mixed stream, the crossover by match-set size, latency at matched
rates, ranking agreement, and capacity (the ceiling and the highest rate holding a p99 target)."""

from __future__ import annotations

from pglimits_core.plotting.capacity import capacity_chart
from pglimits_core.plotting.writes import timeline_chart
from pglimits_core.registry import Chart, Workload, with_capacity
from pglimits_core.workloads.search import charts as search_figures
from pglimits_core.workloads.search.capacity import capacity_decisions
from pglimits_core.workloads.search.decision import decisions, extension_decisions
from pglimits_core.workloads.search.footprint import footprint_decisions
from pglimits_core.workloads.search.plan import plan, prepare, server_options
from pglimits_core.workloads.search.profile import SearchProfile
from pglimits_core.workloads.search.report import (
    SEED_NOTES,
    readme_lines,
    report_sections,
    seed_comparison,
)
from pglimits_core.workloads.search.tables import all_tables, search_frame
from pglimits_core.workloads.search.writes_report import writes_agreement_chart


def search_capacity_chart(table):
    return capacity_chart(table, unit="queries/s", what="query p99 from the intended start")

WORKLOAD = Workload(
    name="search",
    title="Full-text search",
    notebook="20-search",
    section=SearchProfile,
    plan=plan,
    frame=search_frame,
    tables=all_tables,
    charts=(Chart("capacity", "search-capacity", search_capacity_chart, "curve",
                  caption="Query p99, from each query's intended start, against the offered rate on the mixed stream, one line per design, a panel per target: the starred rate is the highest whose steady windows held the dotted target."),
            Chart("throughput", "search-throughput", search_figures.throughput_chart, "qps",
                  caption="Queries per second against client count, closed loop, a panel per query stream (frequent, medium, rare terms and the mixed stream): where Postgres's line sits against the engines' differs by stream."),
            Chart("crossover", "search-crossover", search_figures.crossover_chart, "qps",
                  caption="Queries grouped by how many documents match them: throughput and p99 against the match-set size (log). Postgres ranks every match before keeping 10, so its line falls as match sets grow while the engines' stays flatter — the crossing is where the dedicated engine starts to pay."),
            Chart("latency", "search-latency", search_figures.latency_chart, "latency_p99_ms",
                  caption="Latency from the intended start at the same offered rates for every system (fractions of the slower one's peak): p99 with its spread and p50; a hollow marker is a rate not sustained."),
            Chart("writes_timeline", "search-writes-timeline", timeline_chart, "query_p99_ms", under="writes",
                  caption="Per-second query p99 while documents are rewritten at 1 % and 10 % of the corpus a minute (shaded), then through the cleanup (VACUUM, a merge): how much writing costs the queries, and whether they recover after it."),
            Chart("writes", "search-writes-agreement", writes_agreement_chart, "agreement_mean_after_writes",
                  caption="Each system's top 10 after the writes against its own before them (mean overlap): near 1 means rewriting a document with the same text left the answers as they were.")),
    report_sections=report_sections,
    readme_lines=readme_lines,
    capacity_unit="queries/s",
    seed_comparison=seed_comparison,
    seed_notes=SEED_NOTES,
    prepare=prepare,
    server_options=server_options,
    require_servers=True,
    decisions=with_capacity(capacity_decisions, decisions, footprint_decisions),
    extension_decisions=extension_decisions,
)
