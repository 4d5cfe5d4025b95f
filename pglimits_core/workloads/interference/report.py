"""The interference study's report sections and README lines."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pglimits_core.plotting.html_report import Section

HOW_TO_READ = (
    "Interference: one Postgres 16 instance, three tenants at once — a two-phase SKIP LOCKED queue churned by "
    "`pgbench -R` (each transaction enqueues, claims and acks one job: constant depth, two dead tuples per job) "
    "and two read bystanders open loop at fixed rates (the search study's ranked FTS query, the vector study's "
    "pgvector HNSW query at its recall-0.95 ef). Latency runs from each operation's intended start. Levels are "
    "fractions of `queue_rate`, the jobs/s the churn sustains beside the bystanders (each window checks it: "
    "`churn_sustained`); level 0 is the baseline (bystanders alone). A `backlog` of jobs waits in the queue "
    "during the churn (prefilled before each window), so autovacuum has real pages to scan. Mechanisms: churn "
    "(normal autovacuum), control (the same statement count on a static table: no dead tuples), held xmin (one "
    "snapshot held, then released), autovacuum off on the queue table (then back on). Autovacuum windows come from "
    "the server log (`log_autovacuum_min_duration = 0`), or the per-second vacuum sampler when the log is not "
    "readable. Alignment = mean per-second p99 inside those windows minus outside, p-value by circular shifts of "
    "the windows. The dedicated side runs the same tenants at the same rates on the same box, each on its own "
    "engine: the FTS query on OpenSearch (the search study's requests byte for byte), the HNSW query on Qdrant "
    "(hnsw_ef = the same ef), the churn on the queue study's Redis reliable queue with the same backlog (a paced "
    "harness load: redis-benchmark cannot pace; the churn client's CPU is recorded apart), with OpenSearch's "
    "merges, refreshes and GC and Qdrant's optimizer status sampled per second; baseline and churn levels only "
    "(the control, held xmin and autovacuum off are Postgres mechanisms). `sides` sets each side's inflation "
    "against its own baseline: removed (only Postgres inflates), moved (both do), or neither.")

CAPTIONS = {
    "inflation": "p99 per tenant vs the baseline (median over repetitions, min–max)",
    "alignment": "Does a tenant's per-second p99 rise while autovacuum runs on the queue table?",
    "stalls": "Held xmin and autovacuum off: before, during, after, and recovery",
    "sides": "Split the systems? p99 inflation per tenant and churn level: Postgres vs dedicated engines, same box",
}


def sections(tables: dict[str, pd.DataFrame], figures: dict[str, list[Path]]) -> tuple[list[Section], list[Section]]:
    shown = [(caption, tables[key]) for key, caption in CAPTIONS.items() if key in tables and not tables[key].empty]
    pngs = [path for paths in figures.values() for path in paths if path.suffix == ".png"]
    return [Section("Interference: tables", [HOW_TO_READ], shown), Section("Interference: figures", figures=pngs)], []


def readme_lines(tables: dict[str, pd.DataFrame], links: str) -> list[str]:
    """The p99 inflation per bystander under churn, or that nothing was measured; ``links``
    names the full tables and the report."""
    table = tables.get("inflation", pd.DataFrame())
    if table.empty:
        return ["- Interference: not measured in these records."]
    churned = table[(table.mechanism == "churn") & table.tenant.isin(["fts", "vector"]) &
                    (table.get("side", "postgres") == "postgres")]
    lines = [f"- Interference ({row.tenant}, churn level {row.level:g}): p99 {row.p99_ms} ms vs "
             f"{row.baseline_p99_ms} ms alone ({row.cycles_note})" for row in churned.itertuples()]
    return [links, ""] + lines + split_lines(tables.get("sides", pd.DataFrame()))


def split_lines(sides: pd.DataFrame) -> list[str]:
    """Per bystander and level: Postgres vs dedicated inflation and the reading."""
    if sides.empty or "reading" not in sides:
        return []
    rows = sides[sides.tenant.isin(["fts", "vector"])]
    return [f"- Interference split ({row.tenant}, churn level {row.level:g}): Postgres x{row.postgres_ratio} vs "
            f"dedicated x{row.dedicated_ratio} ({row.reading})" for row in rows.itertuples()]
