"""The interference timeline: per-second p99 of each tenant over the worst repetition's window of
each mechanism and level, the queue table's autovacuum runs shaded, the act shaded grey, its dead
tuples and the server's WAL on axes of their own and checkpoints marked — so a spike can be read
against the second autovacuum, a checkpoint or the act's end happened. An axis with nothing on it
(no dead tuples: the baseline) is left out rather than drawn around a constant zero."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from pglimits_core.plotting.figures import GREY, colour_for
from pglimits_core.workloads.interference.mechanisms import is_act, split_mitigation

#: seconds an autovacuum run is drawn at least (a 20 ms run would be an invisible sliver)
MIN_SHADE_S = 0.4
TENANT_STYLE = {"fts": ("tab:blue", "search (ranked FTS)"), "vector": ("tab:green", "vectors (HNSW)"),
                "oltp": ("tab:purple", "OLTP (point lookup)"), "churn": ("tab:red", "queue churn (job: enqueue+claim+ack)")}


def panel(ax, rows: pd.DataFrame) -> None:
    """One window: the tenants' per-second p99 (log scale), vacuum shaded, dead tuples on the right."""
    for start, end in rows.vacuum_windows.iloc[0] or []:
        # most runs last tens of ms: widened to stay visible, the start marked exactly
        ax.axvspan(start, max(end, start + MIN_SHADE_S), color="gold", alpha=0.5, lw=0, gid="annotation")
        ax.axvline(start, color="goldenrod", lw=0.8)
    act_start, act_end = rows.act_start_s.iloc[0], rows.act_end_s.iloc[0]
    if pd.notna(act_start) and pd.notna(act_end):
        ax.axvspan(act_start, act_end, color=GREY, alpha=0.12, lw=0, gid="annotation", label="the act (horizon held / autovacuum off)")
    for tenant, (colour, label) in TENANT_STYLE.items():
        column = f"{tenant}_p99_ms"
        if column in rows and rows[column].notna().any():
            ax.plot(rows.second, rows[column], color=colour, lw=1.2, label=label)
    ax.set_yscale("log")
    ax.set_ylabel("p99 per second (ms)")
    right_axes(ax, rows)
    first = rows.iloc[0]
    ax.set_title(f"{first.mechanism} at level {first.level:g} (repetition {first.repetition})", fontsize=9)


def _drawn(rows: pd.DataFrame, column: str) -> bool:
    """The column has a reading other than zero (a constant zero is not worth an axis)."""
    return column in rows and pd.to_numeric(rows[column], errors="coerce").fillna(0).ne(0).any()


def right_axes(ax, rows: pd.DataFrame) -> None:
    """Dead tuples on the right, WAL on a second right axis, checkpoints as dotted lines."""
    queue_colour = colour_for("postgres", "postgres")
    if _drawn(rows, "dead_tuples"):
        dead = ax.twinx()
        # the queue table's dead tuples are Postgres's: its colour, dashed apart from the tenants
        dead.plot(rows.second, rows.dead_tuples, color=queue_colour, lw=1, ls="--", label="dead tuples (queue table)")
        dead.set_ylabel("dead tuples", color=queue_colour)
    if _drawn(rows, "wal_mb_per_s"):
        wal = ax.twinx()
        wal.spines.right.set_position(("axes", 1.09))
        # the server's WAL rate is context, not a system's series: grey, marked as an annotation
        wal.plot(rows.second, rows.wal_mb_per_s, color=GREY, lw=0.8, label="WAL written (MB/s)", gid="annotation")
        wal.set_ylabel("WAL MB/s", color=GREY)
    if _drawn(rows, "checkpoints"):
        for second in rows.second[pd.to_numeric(rows.checkpoints, errors="coerce").fillna(0) > 0]:
            ax.axvline(second, color="black", lw=0.8, ls=":", label="a checkpoint completed")


def shown_groups(table: pd.DataFrame) -> list[tuple[Any, pd.DataFrame]]:
    """The panels worth a look: every act and mitigated window, and the churn at its highest
    level (the baseline, the control and the lower levels are in the tables)."""
    churned = pd.to_numeric(table.level[table.mechanism == "churn"], errors="coerce")
    top = churned.max() if len(churned) else None
    return [(key, rows) for key, rows in table.groupby(["mechanism", "level"], sort=False)
            if is_act(key[0]) or split_mitigation(key[0])[1] or (key[0] == "churn" and key[1] == top)]


def timeline_chart(table: pd.DataFrame):
    """One panel per act, mitigation and the highest churn level, in the table's order."""
    groups = shown_groups(table) or list(table.groupby(["mechanism", "level"], sort=False))
    fig, axes = plt.subplots(len(groups), 1, figsize=(10, 2.4 * len(groups) + 0.6), squeeze=False, sharex=False)
    for ax, (_, rows) in zip(axes[:, 0], groups, strict=True):
        panel(ax, rows)
    # two lines: one would run past the figure's edges
    axes[-1, 0].set_xlabel("second of the window (gold: an autovacuum run on the queue table from its start, widened to "
                           f"{MIN_SHADE_S:g} s to stay visible;\neach panel is the worst repetition, not a typical one)")
    legend = {}
    for ax in fig.axes:  # every tenant, the act and the dead tuples, once each
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    fig.legend(list(legend.values()), list(legend), loc="upper center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / fig.get_figheight()))
    return fig
