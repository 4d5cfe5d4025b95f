"""The queue study's part of the README results block: one headline row per variant, grouped by
durability class, the crash drills, the consumer-crash drill, the backup/restore drill."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.verdict import LOAD, LOAD_LIMITED
from pglimits_core.workloads.queue import tables as queue_tables
from pglimits_core.workloads.queue.drills.backup_tables import backup_lines
from pglimits_core.workloads.queue.drills.consumer_crash_tables import consumer_crash_lines
from pglimits_core.workloads.queue.drills.recovery_tables import FOREIGN_STATE, SIGKILL_NOTE
from pglimits_core.workloads.queue.durability_tables import (
    UNKNOWN,
    label,
    sigkill_losers,
    sort_by_class,
)
from pglimits_core.workloads.queue.latency_names import DEFINITION, NAME, P99
from pglimits_core.workloads.queue.like_for_like import offered_only, offered_text, short_side
from pglimits_core.workloads.queue.tables import any_verdict

HOW_TO_READ = (
    "Rows are grouped by durability class (fsync per commit / periodic / none): compare within a "
    "class. Median over the runs that measured the point (min–max; `k of n runs` when fewer than "
    "all did); `@n` = at n consumers (the best of the consumer counts measured, not a true peak); "
    "`≥ x (producer-bound)` / `≥ x (backlog ran out)` = a lower bound: the consumers waited on the "
    "producers or on an empty backlog, so they can do at least x; ᶜ = client-bound (the Python harness, not the server, was the limit — see `pglimits bench "
    f"harness`; not applicable to SQLite, whose engine runs in the client). The {DEFINITION}.")


# a design's best figure over the consumer counts it was measured at: a floor of its peak when
# its curve was still rising at the last count measured (most designs ran at 4 and 16 only)
BEST_OF = "best of the measured consumer counts @consumers"


def readme_lines(tables: dict[str, pd.DataFrame], links: str) -> list[str]:
    """How to read it (and where the full tables are), the headline table, who kept up at each
    offered rate, this machine's harness/C-tool ratio, then the crash drill and consumer-crash
    blocks."""
    lines = [f"{HOW_TO_READ} {links}", "", headline_table(tables).to_markdown(index=False), ""]
    lines += kept_up_lines(tables.get("latency")) + harness_bench_lines(tables.get("harness_bench"))
    recovery = tables.get("recovery")
    return (lines + recovery_lines(recovery) + sigkill_class_lines(recovery)
            + consumer_crash_lines(tables.get("consumer_crash")) + fairness_lines(tables.get("fairness"))
            + backup_lines(tables.get("backup")))


def _spread_text(row: pd.Series, with_consumers: bool = False) -> str:
    where = f"@{row.consumers:.0f}" if with_consumers else ""
    # ᶜ: the load, not the server, set the limit (the old client-bound verdict, or the record's
    # limit side under the split placement, where the load has a core of its own)
    load_limited = queue_tables.flag_set(row.client_bound) or row.get("limit") == LOAD
    return queue_tables.rate_text(row, where) + (" ᶜ" if load_limited else "")


def _at_consumers(table: pd.DataFrame, consumers: int) -> pd.Series:
    rows = table[table.consumers == consumers].set_index("variant")
    return rows.apply(_spread_text, axis=1)


def _peak(table: pd.DataFrame) -> pd.Series:
    """Each variant's best consumer count (highest median; a lower bound counts at its floor),
    with that count named."""
    measured = table.dropna(subset=["jobs_per_s"])
    best = measured.loc[measured.groupby("variant").jobs_per_s.idxmax()].set_index("variant")
    return best.apply(lambda r: _spread_text(r, with_consumers=True), axis=1)


def _classes(tables: dict[str, pd.DataFrame]) -> pd.Series:
    """Each variant's durability class, from whichever table measured it."""
    frames = [t[["variant", "durability_class"]] for t in tables.values() if {"variant", "durability_class"} <= set(t)]
    both = pd.concat(frames) if frames else pd.DataFrame(columns=["variant", "durability_class"])
    return both.drop_duplicates("variant").set_index("variant").durability_class


def headline_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per variant, grouped by durability class: burn-down jobs/s at 1 consumer and at its best
    consumer count, the steady-state peak, send → claim p99 at each offered rate (or 'not sustained')."""
    sweep = tables["throughput"]
    if sweep.empty or "consumers" not in sweep:
        return pd.DataFrame({"note": ["no throughput run recorded: nothing to headline (see what could not be run)"]})
    low = int(sweep.consumers.min())
    head = pd.DataFrame({f"burn-down jobs/s, {low} consumer{'s' if low > 1 else ''}": _at_consumers(sweep, low),
                         f"burn-down jobs/s, {BEST_OF}": _peak(sweep)})
    if not tables["steady"].empty:
        head[f"steady-state jobs/s, {BEST_OF}"] = _peak(tables["steady"])
    for rate, group in tables["latency"].groupby("offered_per_s"):
        head[f"{NAME} p99 ms at {rate:,.0f}/s"] = pd.Series({variant: _latency_cell(runs)
                                                             for variant, runs in group.groupby("variant")})
    head = head.rename_axis("variant").reset_index()
    head.insert(1, "durability_class", _classes(tables).reindex(head.variant).fillna(UNKNOWN).to_numpy())
    head = sort_by_class(head, ["variant"])
    return head.assign(durability_class=head.durability_class.map(label)).rename(
        columns={"durability_class": "durability class"}).fillna("—")


def _latency_cell(runs: pd.DataFrame) -> str:
    """Median p99 over the runs (min–max), ᶜ when any run was client-bound; a rate held in only
    some runs says in how many (k of n), with the p99 of those runs; in none: "not sustained" and
    which side fell short; a rate the producers never offered: not decided, the load the limit."""
    if short := offered_only(runs):
        return f"{LOAD_LIMITED} ({short})"
    held = runs[runs.sustained.astype(bool)]
    if held.empty:
        return f"not sustained (0 of {len(runs)} runs{_short_sides(runs)})"
    p99 = held[P99]
    spread = f" ({p99.min():.2f}–{p99.max():.2f})" if p99.max() > p99.min() else ""
    cell = f"{p99.median():.2f}{spread}" + (" ᶜ" if any_verdict(held.client_bound) else "")
    return cell if len(held) == len(runs) else f"{cell} (sustained in {len(held)} of {len(runs)} runs)"


def _short_sides(runs: pd.DataFrame) -> str:
    """"; consumers short" (every run), "; producers short in 1, consumers short in 2" (mixed),
    "" where the records do not say."""
    sides = pd.Series([short_side(run) for run in runs.itertuples()]).replace("", pd.NA).dropna()
    if sides.empty:
        return ""
    counts = sides.value_counts()
    if len(counts) == 1:
        return f"; {counts.index[0]}"
    return "; " + ", ".join(f"{side} in {n}" for side, n in counts.sort_index(ascending=False).items())


def kept_up_lines(latency: pd.DataFrame | None) -> list[str]:
    """Who kept up at each offered rate, in k of n runs, from the latency records; designs whose
    producers never offered the rate are counted apart (not decided: the load was the limit)."""
    if latency is None or latency.empty:
        return []
    parts = [f"at {rate:,.0f}/s {_kept_up_at(group)}" for rate, group in latency.groupby("offered_per_s")]
    return ["**Who kept up** (open loop: producers held the offered rate and consumers kept up with it, "
            "k of n runs): " + "; ".join(parts) + ".", ""]


def _kept_up_at(group: pd.DataFrame) -> str:
    short = {variant: offered_only(runs) for variant, runs in group.groupby("variant")}
    short = {variant: why for variant, why in short.items() if why}
    offered = group[~group.variant.isin(list(short))]
    text = _kept_up(offered) if len(offered) else ""
    if not short:
        return text
    achieved = group[group.variant.isin(list(short))].groupby("variant").achieved_per_s.median()
    rate = group.offered_per_s.iloc[0]
    harness = (f"{LOAD_LIMITED} for {len(short)} design{'s' if len(short) > 1 else ''} "
               f"({offered_text(achieved.min(), achieved.max(), rate)})")
    return f"{text}, {harness}" if text else harness


def _kept_up(group: pd.DataFrame) -> str:
    held = group.groupby("variant").sustained.agg(lambda s: int(s.astype(bool).sum()))
    runs = group.groupby("variant").size()
    every, some = held[held == runs], held[(held > 0) & (held < runs)]
    if held.sum() == 0:
        return f"no design in any run ({len(runs)} designs)"
    text = f"{len(every)} of {len(runs)} designs in every run" if len(every) else "no design in every run"
    text += "".join(f", {variant} in {held[variant]} of {runs[variant]}" for variant in some.index)
    return text + (f", the other {len(runs) - len(every) - len(some)} in none" if len(every) + len(some) < len(runs) else "")


def harness_bench_lines(bench: pd.DataFrame | None) -> list[str]:
    """This machine's harness/C-tool ratio (the ``harness_bench`` experiment), or that these
    records lack it."""
    intro = "**Harness vs C tool on this machine** (the same statements, same clients, back to back): "
    if bench is None or bench.empty:
        return [intro + "not measured in these records (`pglimits bench harness` measures it).", ""]
    pairs = [f"{r.variant} @{r.clients:.0f}: harness {_rate(r.harness_consume_per_s)} / {r.tool} "
             f"{_rate(r.tool_consume_per_s)}{_derived(r.tool)} consumed jobs/s = {_ratio(r.harness_over_tool)}; "
             f"server CPU per job agrees: {r.server_cpu_agrees}" for r in bench.itertuples()]
    return [intro + "; ".join(pairs) + ".", ""]


def _derived(tool: str) -> str:
    """redis-benchmark times each command alone: its per-job figure is derived, not measured."""
    return " (derived from its separate LMOVE and LREM runs)" if tool == "redis-benchmark" else ""


def _rate(value) -> str:
    return "—" if value is None or pd.isna(value) else f"{value:,.0f}"


def _ratio(value) -> str:
    return "—" if value is None or pd.isna(value) else f"{value:.2f}×"


def recovery_lines(recovery: pd.DataFrame) -> list[str]:
    """The crash drill block: per variant the median (min–max) over its drills, and what the
    drill can and cannot show."""
    if recovery is None or recovery.empty:
        return []
    shown = pd.DataFrame({
        "variant": recovery.variant, "durability class": recovery.durability_class.map(label),
        "kill_target": recovery.kill_target, "drills": recovery.drills, "lost (all drills)": recovery.lost,
        "time to first claim, s": [_first_claim(r) for r in recovery.itertuples()],
        "WAL to replay, MiB": [_median_range(r.wal_to_replay_mb, r.wal_to_replay_mb_min, r.wal_to_replay_mb_max, "{:.1f}")
                               for r in recovery.itertuples()],
        "SIGKILL cannot lose (by configuration)": recovery.survives_sigkill})
    return ["Crash drill (SIGKILL mid-load, restart, time to the first successful claim; median (min–max) over "
            "the drills):", "", shown.astype(object).where(shown.notna(), "—").to_markdown(index=False), "",
            f"{SIGKILL_NOTE}. Postgres restart time is WAL replay: `WAL to replay` is the WAL written since the "
            "last checkpoint when the server was killed (bounded by `checkpoint_timeout`/`max_wal_size`); "
            "the `queue-recovery` figure plots time against it, one point per drill.", ""]


def sigkill_class_lines(recovery: pd.DataFrame | None) -> list[str]:
    """One class can hold two promises: the designs of each class whose acknowledged messages the
    server SIGKILL drill lost (the others in the drill lost none)."""
    losers = sigkill_losers(recovery)
    if not losers:
        return []
    parts = [f"{label(name)}: {'; '.join(found)}" for name, found in losers.items()]
    return ["**Durability class vs the server SIGKILL drill**: a class groups designs by when they fsync, "
            "not by what a process kill loses. Lost acknowledged messages in the crash drill — "
            + "; ".join(parts) + " (every other design in the drill lost none).", ""]


def _first_claim(row) -> str:
    """A queue that lost everything has nothing to claim: its time is the first (empty) answer."""
    if FOREIGN_STATE in str(row.note):
        return f"— ({FOREIGN_STATE}: not this drill's recovery; see the recovery table's note)"
    spread = _median_range(row.recovery_s, row.recovery_s_min, row.recovery_s_max, "{:.3f}")
    return f"— (nothing survived; first empty answer {spread})" if "nothing left to claim" in str(row.note) else spread


def _median_range(median: float, low: float, high: float, number: str) -> str:
    if pd.isna(median):
        return "—"
    spread = f" ({number.format(low)}–{number.format(high)})" if high > low else ""
    return number.format(median) + spread


def fairness_lines(fairness: pd.DataFrame | None) -> list[str]:
    """Fairness of the batched claims beside batch 1 of the same system: per variant, the median
    Jain index (and the least-served consumer's share of the mean) at each point with 4 or more
    consumers. Only systems with a batch-50 variant are shown: the cost the source names."""
    if fairness is None or fairness.empty:
        return []
    systems = {v.split()[0] for v in fairness.variant if "batch=50" in v.split()}
    rows = fairness[fairness.variant.map(lambda v: v.split()[0] in systems) & (fairness.consumers >= 4)]
    if rows.empty:
        return []
    rows = rows.assign(point=[_fairness_point(r) for r in rows.itertuples()],
                       cell=[f"{r.fairness_jain:.3f} ({r.consumer_min_share:.2f})" for r in rows.itertuples()])
    order = rows.sort_values(["experiment", "consumers", "rate"], ascending=[False, True, True]).point.unique()
    shown = rows.pivot_table(index=["variant", "durability_class"], columns="point", values="cell",
                             aggfunc="first")[list(order)].reset_index()
    shown = sort_by_class(shown, ["variant"])
    shown["durability_class"] = shown.durability_class.map(label)
    shown = shown.rename(columns={"durability_class": "durability class"}).rename_axis(columns=None)
    return ["**Fairness of batched claims.** Jain's index over the consumers' acknowledged messages (1 = equal "
            "shares, 1/n = one consumer did everything), median over the runs, with the least-served consumer's "
            "share of the mean in brackets:", "", shown.fillna("—").to_markdown(index=False), ""]


def _fairness_point(row) -> str:
    if row.experiment == "latency" and not pd.isna(row.rate):
        return f"{row.consumers:.0f} consumers at {row.rate:,.0f}/s"
    return f"burn-down, {row.consumers:.0f} consumers"
