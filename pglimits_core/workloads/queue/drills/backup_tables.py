"""The backup/restore drill's tables, chart, README lines and seed ratios (``drills.backup``).

A drill runs no load driver: its facts live in the manifest's outcome. One row per drill, and per
variant the median (min–max) over its drills of the time to back up, the backup's size and the
time from the start of the restore to the first claim the restored queue served; the accounting
across the backup point is summed over the drills (acknowledged messages that reappeared, lost
ones, claims in flight at the backup and how many came back).
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pglimits_core.workloads.queue.durability_tables import (
    CLASSES,
    design,
    ensure_class,
    label,
    sort_by_class,
)

EXPERIMENT = "backup"
SCOPE_NOTE = ("one hot backup under a moderate load, restored on the same disk with the page cache warm; "
              "restore = copy + start (+ WAL replay) + first claim")
BACKUP_CAPTION = ("Backup/restore drill per variant: a hot backup while a producer and a consumer run (SQLite online "
                  "backup API, Postgres pg_basebackup -X stream -c fast, Redis BGSAVE + RDB copy), restored into a fresh "
                  "data directory on a second instance. Median (min–max) over the drills of backup_s, backup_bytes and "
                  "restore_to_first_claim_s (copy + start + replay + first claim); summed over the drills: acknowledged-"
                  "before-backup messages that reappeared (must be 0), confirmed-before-backup messages lost (must be 0), "
                  "claims in flight at the backup and how many came back (at-least-once designs: through the reaper; "
                  "delete-mode: none, by design)")
DRILL_COLUMNS = ["variant", "durability_class", "method", "queue_messages", "queue_mb", "backup_s", "backup_bytes",
                 "restore_to_first_claim_s", "copy_s", "start_s", "confirmed_per_s", "acked_per_s",
                 "confirmed_before_backup", "acked_before_backup",
                 "acked_reappeared", "lost", "in_flight_at_backup", "in_flight_returned", "claimed_returned", "delivery_guarantee",
                 "note"]
SPREAD = ("backup_s", "backup_bytes", "restore_to_first_claim_s")
SUMMED = ("acked_reappeared", "lost", "in_flight_at_backup", "in_flight_returned", "claimed_returned")
BACKUP_COLUMNS = ["variant", "durability_class", "method", "drills", "failed_drills", "queue_messages", "queue_mb",
                  *[f"{c}{s}" for c in SPREAD for s in ("", "_min", "_max")], *SUMMED, "note"]


def backup_drills(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per drill (``frame``: the queue frame, one row per run for a drill)."""
    if frame.empty or "experiment" not in frame or "path" not in frame:
        return pd.DataFrame(columns=DRILL_COLUMNS)
    rows = frame[frame.experiment == EXPERIMENT].drop_duplicates("run_id")
    if rows.empty:
        return pd.DataFrame(columns=DRILL_COLUMNS)
    drills = pd.DataFrame([_drill_row(run) for run in ensure_class(rows).itertuples()], columns=DRILL_COLUMNS)
    return sort_by_class(drills, ["variant"])


def _drill_row(run) -> dict:
    outcome = json.loads((Path(run.path) / "manifest.json").read_text()).get("params", {}).get("outcome") or {}
    base = {"variant": run.variant, "durability_class": run.durability_class,
            "queue_messages": getattr(run, "queue_messages", None)}
    if run.status != "complete" or not outcome:
        return {**base, "note": f"failed: {run.error}"}
    return {**base, **{key: outcome.get(key) for key in DRILL_COLUMNS if key in outcome},
            "queue_mb": _mib(outcome.get("queue_bytes")), "note": _drill_note(outcome)}


def _mib(value) -> float | None:
    return None if value is None else round(value / 2**20, 1)


def _drill_note(outcome: dict) -> str:
    notes = []
    if outcome.get("delivery_guarantee") == "at-most-once":
        notes.append("at-most-once: a claim deletes, so claims in flight at the backup cannot return")
    elif outcome.get("in_flight_at_backup") and outcome.get("in_flight_returned") is not None:
        notes.append("claims in flight at the backup come back through the design's reaper")
    if outcome.get("acked_reappeared"):
        notes.append("ACKNOWLEDGED-BEFORE-BACKUP MESSAGES REAPPEARED")
    if outcome.get("lost"):
        notes.append("CONFIRMED-BEFORE-BACKUP MESSAGES LOST")
    if outcome.get("restore_to_first_claim_s") is None:
        notes.append("the restored queue was empty: no claim to time")
    return "; ".join(notes)


def backup_table(drills: pd.DataFrame) -> pd.DataFrame:
    """Per variant: completed and failed drills, the queue's size, the median and range of backup
    time, backup size and restore-to-first-claim time, the accounting summed over the drills."""
    if drills.empty:
        return pd.DataFrame(columns=BACKUP_COLUMNS)
    rows = [_variant_row(group) for _, group in drills.groupby("variant", sort=False)]
    return sort_by_class(pd.DataFrame(rows, columns=BACKUP_COLUMNS), ["variant"])


def _variant_row(drills: pd.DataFrame) -> dict:
    done = drills[drills.method.notna()]
    failed = len(drills) - len(done)
    row = {"variant": drills.variant.iloc[0], "durability_class": drills.durability_class.iloc[0],
           "method": done.method.iloc[0] if len(done) else None, "drills": len(done), "failed_drills": failed,
           "queue_messages": _spread(done, "queue_messages")[0], "queue_mb": _spread(done, "queue_mb")[0]}
    for column in SPREAD:
        row[column], row[f"{column}_min"], row[f"{column}_max"] = _spread(done, column)
    for column in SUMMED:
        row[column] = pd.to_numeric(done[column], errors="coerce").sum(min_count=1)
    notes = [*dict.fromkeys(n for n in drills.note if isinstance(n, str) and n)]
    row["note"] = "; ".join([SCOPE_NOTE, *notes, *([f"{failed} drill(s) failed"] if failed else [])])
    return row


def _spread(rows: pd.DataFrame, column: str) -> tuple[float, float, float]:
    values = pd.to_numeric(rows[column], errors="coerce").dropna()
    return (values.median(), values.min(), values.max()) if len(values) else (float("nan"),) * 3


def backup_tables(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    drills = backup_drills(frame)
    return {"backup_drills": drills, "backup": backup_table(drills)}


# --- the chart -------------------------------------------------------------------------------------
def backup_chart(table: pd.DataFrame) -> plt.Figure:
    """Per variant, bars of the median time to back up and to the first claim after the restore,
    whiskers = min–max over the drills; each variant labelled with its durability class. A time
    not recorded gets no bar (not a bar of 0) and says so where its bar would be."""
    from pglimits_core.plotting.figures import colour_for, wrap_label

    fig, ax = plt.subplots(figsize=(max(6, 2.3 * len(table) + 2), 4.8))
    x, width = np.arange(len(table)), 0.38
    for offset, column, hatch, name in ((-width / 2, "backup_s", "", "back up (hot, under load)"),
                                        (width / 2, "restore_to_first_claim_s", "//", "restore → first claim")):
        medians = pd.to_numeric(table[column], errors="coerce")
        low = (medians - pd.to_numeric(table[f"{column}_min"], errors="coerce")).clip(lower=0).fillna(0)
        high = (pd.to_numeric(table[f"{column}_max"], errors="coerce") - medians).clip(lower=0).fillna(0)
        shown = medians.notna().to_numpy()
        ax.bar((x + offset)[shown], medians[shown].to_numpy(), width, hatch=hatch, label=name,
               color=[colour_for(v) for v in table.variant[shown]], edgecolor="black", alpha=0.85)
        ax.errorbar((x + offset)[shown], medians[shown].to_numpy(), fmt="none", ecolor="black", capsize=3,
                    yerr=np.vstack([low[shown].to_numpy(), high[shown].to_numpy()]))
        for position in (x + offset)[~shown]:
            ax.text(position, 0, "not\nrecorded", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xticks(x, [f"{wrap_label(v, 22)}\n({label(c)};\n{_messages(m)})" for v, c, m in
                      zip(table.variant, table.durability_class, table.queue_messages, strict=True)],
                  fontsize=7)
    ax.set(ylabel="seconds (median; whiskers min–max over the drills)",
           title="Backup/restore drill: time to back up a live queue, and from the restore's start\n"
                 "to the restored queue's first claim")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    return fig


def _messages(count: float) -> str:
    return "queue size not recorded" if pd.isna(count) else f"{count:,.0f} msgs"


# --- README lines --------------------------------------------------------------------------------------
def backup_lines(table: pd.DataFrame | None) -> list[str]:
    """The README block's backup paragraph and table (nothing when no drill ran)."""
    if table is None or table.empty:
        return []
    shown = pd.DataFrame({
        "variant": table.variant, "durability class": table.durability_class.map(label),
        "drills": table.drills, "queue (messages, MiB)": [f"{m:,.0f} ({mb:,.0f} MiB)" if not pd.isna(m) else "—"
                                                          for m, mb in zip(table.queue_messages, table.queue_mb, strict=True)],
        "back up, s": [_median_range(r, "backup_s", "{:.2f}") for _, r in table.iterrows()],
        "backup size, MiB": [_median_range(r, "backup_bytes", "{:.1f}", 2**20) for _, r in table.iterrows()],
        "restore → first claim, s": [_median_range(r, "restore_to_first_claim_s", "{:.2f}") for _, r in table.iterrows()],
        "acked before backup, reappeared": table.acked_reappeared, "lost": table.lost,
        "in flight at backup → in the restore": [f"{a:.0f} → {b:.0f}" if not pd.isna(a) else "—"
                                           for a, b in zip(table.in_flight_at_backup, table.in_flight_returned, strict=True)],
        "claims in the snapshot, handed out again": table.claimed_returned})
    return ["**Backup / restore.** A hot backup of a live queue (a producer and 4 consumers running), restored into a "
            "fresh data directory on a second instance; median (min–max) over the drills, accounting summed. "
            "SQLite: the online backup API; Postgres: `pg_basebackup -X stream -c fast`; Redis: `BGSAVE` + copy "
            f"of the RDB. Scope: {SCOPE_NOTE}. A message in flight (claimed, not yet acknowledged) when the backup "
            "began and acknowledged while it ran may be absent from the restore: that is not a loss (`lost` counts "
            "confirmed messages that are missing).", "",
            shown.astype(object).where(shown.notna(), "—").to_markdown(index=False), ""]


def _median_range(row: pd.Series, column: str, number: str, unit: float = 1.0) -> str:
    median, low, high = (row[column], row[f"{column}_min"], row[f"{column}_max"])
    if pd.isna(median):
        return "—"
    spread = f" ({number.format(low / unit)}–{number.format(high / unit)})" if high > low else ""
    return number.format(median / unit) + spread


# --- the seed's ratios ----------------------------------------------------------------------------------
SEED_SOURCE = "seed 000 (SQLite WAL vs Postgres queue)"
SEED_SIZE = "a 4.2 GB database"
SQLITE_DESIGNS = ("sqlite_wal batch=1",)
POSTGRES_DESIGNS = ("pg_skiplocked batch=1", "pg_delete batch=1", "pgmq batch=1")
# (figure, our column, seed SQLite (low, high) s, seed Postgres (low, high) s); "under 10 s" is (0, 10)
SEED_FIGURES = (("hot backup time", "backup_s", (6.3, 6.3), (47.0, 47.0)),
                ("restore time (seed: restore + replay; ours: restore → first claim)", "restore_to_first_claim_s",
                 (0.0, 10.0), (258.0, 258.0)))


def backup_seed_rows(tables: dict[str, pd.DataFrame]) -> list[dict]:
    """SQLite / Postgres for the seed's backup and restore times, within one durability class
    (judged by ``seed_figures``' rule), with the sizes of both sides said: the seed's was 4.2 GB."""
    table = tables.get("backup", pd.DataFrame())
    rows = []
    for figure, column, seed_a, seed_b in SEED_FIGURES:
        pairs = [(name, *_pair(table, column, name)) for name in CLASSES]
        matched = [(name, a, b) for name, a, b in pairs if a is not None and b is not None]
        for name, a, b in matched or [(None, *_pair(table, column, None))]:
            rows.append(_seed_row(figure, name, seed_a, seed_b, a, b))
    return rows


def _pair(table: pd.DataFrame, column: str, durability_class: str | None):
    def first(designs: tuple[str, ...]):
        if table.empty:
            return None
        rows = ensure_class(table)
        rows = rows[rows.variant.map(design).isin(designs) & pd.to_numeric(rows[column], errors="coerce").notna()]
        if durability_class is not None:
            rows = rows[rows.durability_class == durability_class]
        return rows.iloc[0] if len(rows) else None
    return first(SQLITE_DESIGNS), first(POSTGRES_DESIGNS)


def _seed_row(figure: str, durability_class: str | None, seed_a, seed_b, a, b) -> dict:
    from pglimits_core.workloads.queue.seed import SEED_000_DURABILITY, verdict

    low, high = seed_a[0] / seed_b[1], seed_a[1] / seed_b[0]
    column = "backup_s" if figure.startswith("hot backup") else "restore_to_first_claim_s"
    ratio = float(a[column]) / float(b[column]) if a is not None and b is not None and float(b[column]) else None
    judged = verdict(ratio, low, high)
    if durability_class is None and ratio is not None:
        judged = (f"not compared: no durability class measured on both sides (A {label(a.durability_class)}, "
                  f"B {label(b.durability_class)}); the ratio is context only")
    elif ratio is not None and (apart := _sizes_apart(a, b)):
        judged = f"not compared: {apart}; the ratio is context only"
    return {"source": SEED_SOURCE, "figure": f"queue {figure}",
            "durability class (ours, both sides)": label(durability_class) if durability_class else "—",
            "A / B": "SQLite WAL / Postgres", "seed durability": SEED_000_DURABILITY,
            "seed A": _seed_text(seed_a), "seed B": _seed_text(seed_b),
            "seed ratio A/B": f"≤ {high:.3f}×" if low == 0 else f"{low:.3f}×",
            "ours A": _ours_text(a, column), "ours B": _ours_text(b, column),
            "our ratio A/B": None if ratio is None else round(ratio, 3),
            "verdict": judged + (f"; sizes differ: the seed's {SEED_SIZE}, ours {_size_text(a)} vs {_size_text(b)}"
                                 if a is not None or b is not None else "")}


def _seed_text(value: tuple[float, float]) -> str:
    low, high = value
    return (f"under {high:g} s" if low == 0 else f"{low:g} s") + f" ({SEED_SIZE})"


def _ours_text(row, column: str) -> str:
    if row is None:
        return "no usable drill (not run, or every drill failed)"
    return (f"{float(row[column]):.2f} s — {row.variant} [{label(row.durability_class)}], "
            f"median of {int(row.drills)} drill(s), {_size_text(row)}")


#: two queues of the same messages whose sizes are further apart than this did not start from one
#: state (a file grown by earlier points, free pages and all): their copy times measure the files
SIZE_APART = 2.0


def _sizes_apart(a, b) -> str:
    """"A's queue is ×16.9 the size of B's for the same messages (3,224 vs 190 MiB): not one start
    state" where the sizes per message differ beyond ``SIZE_APART``; "" otherwise."""
    per = [float(row.queue_mb) / float(row.queue_messages) if float(row.queue_messages) else None for row in (a, b)]
    if None in per or not all(per):
        return ""
    times = max(per) / min(per)
    if times <= SIZE_APART:
        return ""
    big = "A" if per[0] > per[1] else "B"
    return (f"{big}'s queue is ×{times:.1f} the size of the other's per message ({float(a.queue_mb):,.0f} vs "
            f"{float(b.queue_mb):,.0f} MiB): not one start state")


def _size_text(row) -> str:
    if row is None:
        return "—"
    return f"{float(row.queue_mb):,.0f} MiB ({float(row.queue_messages):,.0f} messages)"
