"""The interference study's report sections and README lines."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pglimits_core.plotting.html_report import Section
from pglimits_core.workloads.interference.aligned import verdict_of
from pglimits_core.workloads.interference.evidence import BYSTANDERS
from pglimits_core.workloads.interference.keeping_up import NEVER_RAN_BAR, never_ran

HOW_TO_READ = (
    "Interference: one Postgres 16 instance, three tenants at once — a two-phase SKIP LOCKED queue churned by "
    "`pgbench -R` (each transaction enqueues, claims and acks one job: constant depth, two dead tuples per job) "
    "and read bystanders open loop at fixed rates (the search study's ranked FTS query, the vector study's "
    "pgvector HNSW query at its recall-0.95 ef, and where planned an OLTP tenant: pgbench's select-only lookup by "
    "primary key). Latency runs from each operation's intended start. Levels are fractions of the churn's own "
    "capacity on this server, measured first in the same run (`capacity`: pgbench running the churn's script "
    "closed loop, the bystanders idle), or of a stated `queue_rate`; each window checks the churn kept its rate "
    "(`churn_sustained`); level 0 is the baseline (bystanders alone). A `backlog` of jobs waits in the queue "
    "during the churn (prefilled before each window), so autovacuum has real pages to scan. Mechanisms: churn "
    "(normal autovacuum), control (the same statement count on a static table: no dead tuples), held xmin (one "
    "snapshot held, then released), autovacuum off on the queue table (then back on; with a dead-tuple target, "
    "until the queue holds that many), the horizons production holds (`idle_xid_<s>s`: a session idle in a "
    "transaction that took an XID; `rr_query_<s>s`: a REPEATABLE READ query running; each held s seconds, "
    "verified in pg_stat_activity, always released), and mitigations (`<mechanism> | <mitigation>`: the same "
    "window again with one change — the queue table's own autovacuum settings, or the server ending the holder "
    "after a timeout). Autovacuum windows come from "
    "the server log (`log_autovacuum_min_duration = 0`), or the per-second vacuum sampler when the log is not "
    "readable (the per-second progress view misses runs shorter than a second). Every statistic drops the "
    "window's first `warmup_s` seconds. Each repetition's query schedule is seeded by seed + repetition and is the "
    "same for every mechanism and both sides, so every ratio pairs a repetition with the same side's baseline of "
    "the same seed (the paired ratios are printed per repetition). Alignment = per-second p99 inside the "
    "autovacuum and auto-ANALYZE spans minus outside, the repetitions of a level pooled, exact p = k/n over every "
    "combination of circular shifts (an act window without the seconds containing the act's start and end), "
    "Benjamini–Hochberg across the table: \"aligned\" only at q < 0.05, else "
    "\"none shown\" with the test's minimum detectable effect (a span of tens of ms fills a few % of the second "
    "it marks: \"none shown\" is uninformative below that effect). The dedicated side runs the same tenants at the same rates on the same box, each on its own "
    "engine: the FTS query on OpenSearch (the search study's requests byte for byte), the HNSW query on Qdrant "
    "(hnsw_ef = the same ef), the churn on the queue study's Redis reliable queue with the same backlog and appendfsync always (a paced "
    "harness load: redis-benchmark cannot pace; the churn client's CPU is recorded apart), with OpenSearch's "
    "merges, refreshes and GC and Qdrant's optimizer status sampled per second; baseline and churn levels only "
    "(the control, held xmin and autovacuum off are Postgres mechanisms). `sides` sets each side's inflation "
    "against its own baseline: removed (only Postgres inflates), moved (both do), or neither, each only when "
    "every repetition's paired ratio lies on one side of the band (else \"cannot tell\"), each side's change said "
    "as it is (slower or faster in every repetition, by how much), with both sides' durability "
    "class and a note when a tenant already queued at its baseline.")

CAPTIONS = {
    "capacities": ("The capacities measured first, each alone on this server: the churn's (pgbench running its "
                 "script — enqueue, two-phase claim, ack: one job a transaction — closed loop from the load's CPU "
                 "set, the bystanders idle, the queue at its backlog) and each bystander given a share of its own "
                 "(the harness closed loop); `limit`: which CPU set was saturated (server: the server's capacity; "
                 "load: a floor). The churn levels and those bystanders' rates are fractions of `capacity_per_s`"),
    "inflation": ("p99 per tenant vs the same side's baseline run of the same seed (the same query schedule): median "
                  "over repetitions (min–max), the paired ratios per repetition and the per-second paired "
                  "differences. `p99_ms` / `baseline_p99_ms`: the window p99 on every row. `compared_on`: a plain "
                  "window's ratio is on its window p99; an act window's (longer) on the median of its per-second p99 "
                  "over the plain windows' seconds against the same seconds of the baseline (`median_second_p99_ms` / "
                  "`baseline_median_second_p99_ms`), and `during_vs_churn` sets its during-act seconds against the same seconds of "
                  "the same-seed churn window. Achieved rates: count over the load phase's measured seconds"),
    "alignment": ("Does a tenant's per-second p99 rise while autovacuum or auto-ANALYZE runs? Repetitions pooled, "
                  "exact p = k/n, Benjamini–Hochberg q across rows; the minimum detectable effect is the mean "
                  "inside − outside per run a one-sided 0.05 test finds with 80 % power (before BH). An act window "
                  "is tested on its seconds before the act only: from the act on, the act moves the load and the "
                  "vacuums together (a released hold's vacuum runs inside the churn's catch-up; autovacuum off has "
                  "none), so a p99 inside a vacuum there could not be told from the act's own effect"),
    "stalls": ("Held xmin, autovacuum off and the holds: before, during, after the act (edges at the act's exact start and end; "
               "job = the churn's enqueue+claim+ack transaction), and the next autovacuum of the queue table after "
               "the act: how long after the act's end it started, its elapsed time and the tuples it removed; per "
               "stretch, the median buffer hits per second and the queue's vacuums that started in it (tuples "
               "removed, not yet removable), the churn's offered and completed jobs/s (`held_s`, "
               "`held_completed_per_s`: a hold a server timeout released early, the seconds it stood), and the "
               "seconds the load's CPU set was saturated (`worst_s_load_bound`: the bystanders whose worst second "
               "was one of them — that second describes the load generator, not the server)"),
    "mitigations": ("What postpones the split: each mitigation (one run) beside the same mechanism unmitigated at the "
                    "same churn level — jobs completed per second over the window and while the hold ran (a hold a "
                    "timeout released: over the seconds it stood, unmitigated over the same seconds), dead tuples "
                    "during it, each tenant's p99 (unmitigated churn levels: median (min–max) of their runs; one run "
                    "inside that range shows no effect)"),
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
    churned = table[(table.mechanism == "churn") & table.tenant.isin(BYSTANDERS) &
                    (table.get("side", "postgres") == "postgres")]
    lines = [f"- Interference ({row.tenant}, churn level {row.level:g}): p99 {row.p99_ms} ms vs "
             f"{row.baseline_p99_ms} ms alone (paired by seed: x{row.paired_ratios}; {row.cycles_note}; "
             f"{bound_note(row)}); {tested(verdict_of(alignment, 'churn', row.level, row.tenant))}"
             for row in churned.itertuples()]
    return ([links, ""] + capacity_lines(tables.get("capacities", pd.DataFrame())) + lines + alignment_lines(alignment) + act_lines(tables.get("stalls", pd.DataFrame()))
            + split_lines(tables.get("sides", pd.DataFrame())))


def capacity_lines(capacity: pd.DataFrame) -> list[str]:
    """The capacities measured first, which the churn levels and shared bystander rates are
    fractions of (none where every rate was stated)."""
    done = capacity[capacity.status == "complete"] if "status" in capacity else capacity
    lines = []
    for row in done.itertuples():
        limit = {"server": "the server's core saturated", "load": "the load's core saturated first: a floor"}.get(
            row.limit, f"limit: {row.limit}")
        lines.append(f"- Interference capacity of the {row.capacity_of}, alone: {row.capacity_per_s:,.0f} {row.unit} "
                     f"(closed loop, {row.clients} clients, {row.capacity_s:g} s; {limit})")
    return lines


def tested(verdict: str | None) -> str:
    if verdict is None:
        return "autovacuum alignment: not tested"
    return f"tested for alignment with autovacuum runs by a pooled permutation test: {verdict}"


def bound_note(row) -> str:
    note = getattr(row, "client_bound_unknown", "none")
    return "client-bound known in every run" if note in (None, "none") else note


def alignment_lines(alignment: pd.DataFrame) -> list[str]:
    """How many pooled tests hold after Benjamini–Hochberg, the smallest exact p and the range of
    the tests' minimum detectable effects."""
    if alignment.empty or "q_bh" not in alignment:
        return ["- Interference alignment: not tested in these records."]
    tested_rows = alignment[alignment.k.notna()]
    held = tested_rows[tested_rows.verdict.str.startswith("aligned")]
    smallest = tested_rows.loc[pd.to_numeric(tested_rows.k / tested_rows.n).idxmin()] if len(tested_rows) else None
    low = f"; smallest p {smallest.p} ({smallest.mechanism} {smallest.level:g}, {smallest.tenant})" if smallest is not None else ""
    effects = pd.to_numeric(tested_rows.get("min_detectable_ms"), errors="coerce").dropna()
    mde = f"; minimum detectable effects {effects.min():.1f}–{effects.max():.1f} ms" if len(effects) else ""
    if held.empty:
        return [f"- Interference alignment: none shown: 0 of {len(tested_rows)} pooled tests hold at BH q < 0.05"
                f" (per-second p99 inside autovacuum/auto-ANALYZE spans vs outside, repetitions pooled{low}{mde})"]
    names = ", ".join(f"{r.mechanism} {r.level:g} {r.tenant}" for r in held.itertuples())
    return [f"- Interference alignment: {len(held)} of {len(tested_rows)} pooled tests aligned at BH q < 0.05 "
            f"({names}{low}{mde})"]


def _spread(values: pd.Series, digits: int = 2, one: bool = False) -> str:
    """Median (min–max); the value alone where it is ``one`` run's (a range of one is no spread)."""
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        return "—"
    if one:
        return f"{values.median():.{digits}f}"
    return f"{values.median():.{digits}f} ({values.min():.{digits}f}–{values.max():.{digits}f})"


def completed_rate(stretch: pd.DataFrame) -> str:
    """Churn jobs completed per second over a stretch (median of the repetitions): what a window
    average hides — a 300-s hold that stalls the churn, then a catch-up after it."""
    if not {"jobs", "start_s", "end_s"} <= set(stretch):
        return "—"
    seconds = pd.to_numeric(stretch.end_s, errors="coerce") - pd.to_numeric(stretch.start_s, errors="coerce")
    rates = (pd.to_numeric(stretch.jobs, errors="coerce") / seconds.where(seconds > 0)).dropna()
    return "—" if rates.empty else f"{rates.median():,.0f}"


def held_said(during: pd.DataFrame) -> str:
    """A hold a server timeout released: how long it stood and the churn's jobs/s meanwhile (the
    act's stretch runs to its planned end, averaging the stall with the catch-up)."""
    held = pd.to_numeric(during.get("held_s"), errors="coerce").dropna() if "held_s" in during else pd.Series()
    if held.empty:
        return ""
    rate = pd.to_numeric(during.held_completed_per_s, errors="coerce").dropna()
    return (f" (the timeout released the horizon after {_range(held, 1, ' s')}: "
            f"{_range(rate, 0)} jobs/s while it stood)")


def _range(values: pd.Series, digits: int = 2, unit: str = "") -> str:
    """min–max, or the one value where there is one (a run's figure is no range); "—" for a
    column the rows do not have (None)."""
    if values is None:
        return "—"
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        return "—"
    if len(values) == 1:
        return f"{values.iloc[0]:.{digits}f}{unit}"
    return f"{values.min():.{digits}f}–{values.max():.{digits}f}{unit}"


def rises(rows: pd.DataFrame) -> pd.Series:
    """Each repetition's job p99 during the act over its job p99 before it."""
    job = rows.pivot_table(index="repetition", columns="stretch", values="job_p99_ms", aggfunc="first")
    return (job.get("during") / job.get("before")) if {"during", "before"} <= set(job) else pd.Series(dtype=float)


def act_line(mechanism: str, rows: pd.DataFrame, rose: pd.Series) -> str:
    """One act's line: the churn's job p99 before and during it ("≥" where jobs never ran), its
    rise, the completed rates, the dead tuples and the autovacuum that followed."""
    by = {name: rows[rows.stretch == name] for name in ("before", "during", "after")}
    dead = pd.to_numeric(by["during"].dead_tuples_max, errors="coerce").dropna()
    most = (f"up to {dead.max():,.0f}" + ("" if len(dead) == 1 else " (largest reading of any repetition)")) if len(dead) else "not recorded"
    after, runs, unran = by["after"], rows.repetition.nunique(), never_ran(rows)
    at_least = "≥ " if unran > NEVER_RAN_BAR else ""
    of = "one run" if runs == 1 else f"median (min–max) of {runs} repetitions"
    censored = (f"; {unran:.0%} of the jobs scheduled from the warm-up's end to the window's end never ran "
                "(still waiting when it ended): the p99s during and after the act are lower bounds") if at_least else ""
    return (f"- Interference {mechanism.replace('_', ' ')}: churn job (enqueue+claim+ack) p99, {of}: "
            f"{_spread(by['before'].job_p99_ms, one=runs == 1)} ms before the act, "
            f"{at_least}{_spread(by['during'].job_p99_ms, one=runs == 1)} ms during it ({at_least}x{_range(rose)}"
            f"{'' if runs == 1 else ' per repetition'}){censored}; jobs completed per second before / during / after it: "
            f"{' / '.join(completed_rate(by[name]) for name in ('before', 'during', 'after'))}"
            f"{held_said(by['during'])}; dead "
            f"tuples during the act {most}; next autovacuum of the queue "
            f"{_range(after.get('next_autovacuum_after_act_s'), 1, ' s')} after the act, running "
            f"{_range(after.get('that_vacuum_elapsed_s'), 2, ' s')} and removing "
            f"{_range(after.get('that_vacuum_tuples_removed'), 0)} tuples")


def act_lines(stalls: pd.DataFrame) -> list[str]:
    """Per act its line (``act_line``); then whether the acts' rises can be told apart."""
    if stalls.empty or "job_p99_ms" not in stalls:
        return []
    found = [act_line(mechanism, rows, rises(rows)) for mechanism, rows in stalls.groupby("mechanism", sort=False)]
    return found + compared_acts(stalls)


ACTS = {"held_xmin": "with the xmin held", "autovacuum_off": "with autovacuum off"}


def stretch_of(stalls: pd.DataFrame, mechanism: str, stretch: str, column: str) -> pd.Series:
    """One act's per-repetition values of a stalls column in one stretch (indexed by repetition)."""
    rows = stalls[(stalls.mechanism == mechanism) & (stalls.stretch == stretch)]
    if column not in rows:
        return pd.Series(dtype=float)
    return pd.to_numeric(rows.set_index("repetition")[column], errors="coerce").dropna()


def hits_change(stalls: pd.DataFrame, mechanism: str) -> str:
    """Each repetition's buffer hits per second during the act against before it, in %."""
    during, before = (stretch_of(stalls, mechanism, s, "buffer_hits_per_s_median") for s in ("during", "before"))
    change = (100 * (during / before - 1)).where(before > 0).dropna()
    return "not recorded" if change.empty else f"{change.min():+.0f} to {change.max():+.0f} %"


def held_vacuums(stalls: pd.DataFrame) -> str:
    """What the queue's vacuums during the held act removed and could not remove yet."""
    removed, kept = (stretch_of(stalls, "held_xmin", "during", c)
                     for c in ("vacuum_tuples_removed", "vacuum_not_yet_removable_max"))
    if removed.empty and kept.empty:
        return "the vacuums during the held act: not in the log"
    return (f"the queue's vacuums during the held act removed {_range(removed, 0)} tuples in all, up to "
            f"{_range(kept, 0)} not yet removable (per repetition)")


def compared_acts(stalls: pd.DataFrame) -> list[str]:
    """The two acts during the act, side by side (the churn job p99 per repetition), told apart
    only when the ranges separate, with the mechanism evidence the records hold: buffer hits
    during against before each act, and the vacuums under the held horizon."""
    if "mechanism" not in stalls or not set(ACTS) <= set(stalls.mechanism):
        return []
    held, off = (stretch_of(stalls, m, "during", "job_p99_ms") for m in ACTS)
    if held.empty or off.empty:
        return []
    apart = held.max() < off.min() or off.max() < held.min()
    said = ("the ranges separate" if apart
            else f"the ranges overlap: not distinguishable with {min(len(held), len(off))} repetitions")
    runs = f"{len(held)} repetitions each" if len(held) == len(off) else f"{len(held)} and {len(off)} repetitions"
    hits = "; ".join(f"{hits_change(stalls, m)} {said_as}" for m, said_as in ACTS.items())
    return [f"- Interference acts compared: during the act the churn job p99 was {_range(held)} ms with the xmin "
            f"held against {_range(off)} ms with autovacuum off ({runs}; {said}); buffer hits per second during "
            f"against before the act: {hits}; {held_vacuums(stalls)}"]


def split_lines(sides: pd.DataFrame) -> list[str]:
    """Per bystander and level: one Postgres vs the dedicated engines (and, where it ran, the queue
    on its own Postgres instance), the reading and what makes the sides unlike."""
    if sides.empty or "reading" not in sides:
        return []
    rows = sides[sides.tenant.isin(BYSTANDERS)]
    return [f"- Interference sides ({row.tenant}, churn level {row.level:g}): one Postgres {ratio(row, 'postgres')} "
            f"vs dedicated engines {ratio(row, 'dedicated')}{own_instance(row)}: {row.reading}; churn durability "
            f"{klass(row.postgres_durability)} vs {klass(row.dedicated_durability)}"
            + (f"; caveats: {row.caveat}" if row.caveat not in (None, "none") else "")
            for row in rows.itertuples()]


def own_instance(row) -> str:
    """The split side's ratio at the level, where it ran (shown, not read against the others)."""
    if pd.isna(getattr(row, "split_ratio", None)):
        return ""
    sustained = getattr(row, "split_churn_sustained", None)
    note = " (its churn not sustained)" if sustained is False or sustained == 0 else ""
    return f" (the queue on its own Postgres instance {ratio(row, 'split')}{note})"


def klass(value) -> str:
    return "not measured" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def ratio(row, side: str) -> str:
    """The side's median paired ratio and each repetition's, or "not measured"."""
    value, each = (getattr(row, f"{side}_{c}", None) for c in ("ratio", "paired_ratios"))
    if value is None or pd.isna(value):
        return "not measured"
    return f"x{value} (paired by seed: {each})" if each not in (None, "—") else f"x{value}"
