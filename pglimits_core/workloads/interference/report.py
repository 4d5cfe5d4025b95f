"""The interference study's report sections and README lines."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pglimits_core.plotting.html_report import Section
from pglimits_core.workloads.interference.aligned import verdict_of

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
    "readable (the per-second progress view misses runs shorter than a second). Every statistic drops the "
    "window's first `warmup_s` seconds. Alignment = per-second p99 inside the autovacuum and auto-ANALYZE spans "
    "minus outside, the repetitions of a level pooled, exact p = k/n over every combination of circular shifts, "
    "Benjamini–Hochberg across the table: \"aligned\" only at q < 0.05, else \"no alignment shown with N "
    "cycles\". The held xmin's slowdown is read as the pinned horizon (dead tuples not removable), not as "
    "vacuum running. The dedicated side runs the same tenants at the same rates on the same box, each on its own "
    "engine: the FTS query on OpenSearch (the search study's requests byte for byte), the HNSW query on Qdrant "
    "(hnsw_ef = the same ef), the churn on the queue study's Redis reliable queue with the same backlog and appendfsync always (a paced "
    "harness load: redis-benchmark cannot pace; the churn client's CPU is recorded apart), with OpenSearch's "
    "merges, refreshes and GC and Qdrant's optimizer status sampled per second; baseline and churn levels only "
    "(the control, held xmin and autovacuum off are Postgres mechanisms). `sides` sets each side's inflation "
    "against its own baseline: removed (only Postgres inflates), moved (both do), or neither, each only when "
    "every repetition's ratio lies on one side of the band (else \"cannot tell\"), with both sides' durability "
    "class and a note when a tenant already queued at its baseline.")

CAPTIONS = {
    "inflation": "p99 per tenant vs the baseline (median over repetitions, min–max)",
    "alignment": ("Does a tenant's per-second p99 rise while autovacuum or auto-ANALYZE runs? Repetitions pooled, "
                  "exact p = k/n, Benjamini–Hochberg q across rows"),
    "stalls": "Held xmin and autovacuum off: before, during, after, and recovery",
    "sides": "Split the systems? p99 inflation per tenant and churn level: Postgres vs dedicated engines, same box",
}


def sections(tables: dict[str, pd.DataFrame], figures: dict[str, list[Path]]) -> tuple[list[Section], list[Section]]:
    shown = [(caption, tables[key]) for key, caption in CAPTIONS.items() if key in tables and not tables[key].empty]
    pngs = [path for paths in figures.values() for path in paths if path.suffix == ".png"]
    return [Section("Interference: tables", [HOW_TO_READ], shown), Section("Interference: figures", figures=pngs)], []


def readme_lines(tables: dict[str, pd.DataFrame], links: str) -> list[str]:
    """The p99 inflation per bystander under churn with what the alignment test allows saying,
    the acts' reading, and the sides; or that nothing was measured. ``links`` names the full
    tables and the report."""
    table = tables.get("inflation", pd.DataFrame())
    if table.empty:
        return ["- Interference: not measured in these records."]
    alignment = tables.get("alignment", pd.DataFrame())
    churned = table[(table.mechanism == "churn") & table.tenant.isin(["fts", "vector"]) &
                    (table.get("side", "postgres") == "postgres")]
    lines = [f"- Interference ({row.tenant}, churn level {row.level:g}): p99 {row.p99_ms} ms vs "
             f"{row.baseline_p99_ms} ms alone ({row.cycles_note}; {bound_note(row)}); autovacuum: "
             f"{verdict_of(alignment, 'churn', row.level, row.tenant) or 'not tested'}" for row in churned.itertuples()]
    return ([links, ""] + lines + alignment_lines(alignment) + act_lines(tables.get("stalls", pd.DataFrame()))
            + split_lines(tables.get("sides", pd.DataFrame())))


def bound_note(row) -> str:
    note = getattr(row, "client_bound_unknown", "none")
    return "client-bound known in every run" if note in (None, "none") else note


def alignment_lines(alignment: pd.DataFrame) -> list[str]:
    """How many pooled tests hold after Benjamini–Hochberg, and the smallest exact p."""
    if alignment.empty or "q_bh" not in alignment:
        return ["- Interference alignment: not tested in these records."]
    tested = alignment[alignment.k.notna()]
    held = tested[tested.verdict.str.startswith("aligned")]
    smallest = tested.loc[pd.to_numeric(tested.k / tested.n).idxmin()] if len(tested) else None
    low = f"; smallest p {smallest.p} ({smallest.mechanism} {smallest.level:g}, {smallest.tenant})" if smallest is not None else ""
    if held.empty:
        return [f"- Interference alignment: no alignment shown: 0 of {len(tested)} pooled tests hold at BH q < 0.05"
                f" (per-second p99 inside autovacuum/auto-ANALYZE spans vs outside, repetitions pooled{low})"]
    names = ", ".join(f"{r.mechanism} {r.level:g} {r.tenant}" for r in held.itertuples())
    return [f"- Interference alignment: {len(held)} of {len(tested)} pooled tests aligned at BH q < 0.05 ({names}{low})"]


def act_lines(stalls: pd.DataFrame) -> list[str]:
    """The acts' reading: what the claim p99 did during each act (medians over repetitions)."""
    if stalls.empty or "claim_p99_ms" not in stalls:
        return []
    found = []
    for mechanism, rows in stalls.groupby("mechanism", sort=False):
        p99 = rows.groupby("stretch").claim_p99_ms.median()
        dead = rows.groupby("stretch").dead_tuples_max.median()
        found.append(f"- Interference {mechanism.replace('_', ' ')}: churn claim p99 {p99.get('before')} ms before, "
                     f"{p99.get('during')} ms during the act (dead tuples up to {dead.get('during')}); "
                     f"{ACT_READING.get(mechanism, '')}")
    return found


#: what each act's slowdown is attributed to (the records: the held xmin kept fewer dead tuples
#: than autovacuum off, yet its claims were several times slower)
ACT_READING = {
    "held_xmin": "attributed to the pinned horizon (dead tuples not removable, nothing pruned for the SKIP LOCKED "
                 "scan), not to vacuum running",
    "autovacuum_off": "dead tuples pile up without the horizon pinned: compare with the held xmin",
}


def split_lines(sides: pd.DataFrame) -> list[str]:
    """Per bystander and level: Postgres vs dedicated inflation, the reading and what makes the sides unlike."""
    if sides.empty or "reading" not in sides:
        return []
    rows = sides[sides.tenant.isin(["fts", "vector"])]
    return [f"- Interference split ({row.tenant}, churn level {row.level:g}): Postgres {ratio(row, 'postgres')} vs "
            f"dedicated {ratio(row, 'dedicated')} ({row.reading}; churn durability {klass(row.postgres_durability)} vs "
            f"{klass(row.dedicated_durability)}; caveats: {row.caveat})"
            for row in rows.itertuples()]


def klass(value) -> str:
    return "not measured" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def ratio(row, side: str) -> str:
    """The side's median ratio and its repetitions' range, or "not measured"."""
    value, low, high = (getattr(row, f"{side}_{c}", None) for c in ("ratio", "ratio_min", "ratio_max"))
    if value is None or pd.isna(value):
        return "not measured"
    return f"x{value} (reps {low}–{high})"
