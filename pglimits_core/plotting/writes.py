"""The writes-while-querying figures (``experiments.writes``), for any workload that runs it: the
queries' p99 second by second with the writing phase shaded, and the answers' quality at the
three moments it is read."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pglimits_core.plotting.figures import colour_for, finish, line_style_for

WRITING_SHADE = "#f2d7a6"
#: the quality chart's three moments: before, after the writes, after the cleanup
HATCHES = ("", "//", "..")


CLEANUP_SHADE = "#cfe2f3"


def timeline_chart(timeline: pd.DataFrame, what: str = "query p99 from the intended start") -> plt.Figure:
    """One panel per write rate: each variant's per-second p99 (first repetition; later ones
    thinner) through the writes run and, after a gap, the cleanup run; the seconds the writers
    were planned to run and the cleanup run shaded; a second with no query completed (a stall)
    breaks the line and is marked with an x at the panel's top; log scale."""
    rates = sorted(timeline.write_pct_per_min.dropna().unique())
    fig, axes = plt.subplots(1, len(rates), figsize=(5.5 * len(rates), 3.8), sharey=True, squeeze=False)
    for ax, rate in zip(axes[0], rates, strict=True):
        rows = timeline[timeline.write_pct_per_min == rate]
        _shade(ax, rows)
        for (variant, repetition), run in rows.groupby(["variant", "repetition"], sort=True):
            first = repetition == rows.repetition.min()
            style = {"color": colour_for(variant), "linestyle": line_style_for(variant, rows.variant)}
            ax.plot(run.second, run.query_p99_ms, linewidth=1.4 if first else 0.7, alpha=1.0 if first else 0.6,
                    label=variant if first else None, **style)
            stalls = run[run.queries == 0]
            if len(stalls):
                ax.plot(stalls.second, [1.0] * len(stalls), "x", transform=ax.get_xaxis_transform(),
                        color=style["color"], clip_on=False, label=f"{variant}: no query completed" if first else None)
        ax.set(title=f"{rate:g} % of the items rewritten per minute", xlabel="second (writes run, then cleanup run)",
               yscale="log")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"{what} (ms, per second)")
    finish(axes[0][-1])
    fig.tight_layout()
    return fig


def _shade(ax, rows: pd.DataFrame) -> None:
    """The planned windows, as the records' params give them (not the seconds queries completed in)."""
    first = rows.iloc[0]
    # gid "annotation": a shaded window is an event, not a system's bar
    ax.axvspan(first.writing_from, first.writing_to, color=WRITING_SHADE, alpha=0.6, label="writers running",
               gid="annotation")
    if pd.notna(first.get("cleanup_from")) and (rows.get("stage") == "cleanup").any():
        ax.axvspan(first.cleanup_from, first.cleanup_to, color=CLEANUP_SHADE, alpha=0.6, label="cleanup run",
                   gid="annotation")


def quality_chart(table: pd.DataFrame, key: str, label: str) -> plt.Figure:
    """Grouped bars per (variant, write rate): ``key`` before, right after the writes, after the
    cleanup (median over repetitions; the runs' range as a whisker), each system in its engine
    colour, the three moments told apart by hatching."""
    moments = (("before", "before the writes"), ("after_writes", "end of the writes run"), ("after_cleanup", "after the cleanup"))
    groups = list(table.groupby(["variant", "write_pct_per_min"], sort=True))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(groups)), 3.8))
    width = 0.8 / len(moments)
    for offset, (moment, words) in enumerate(moments):
        column = f"{key}_{moment}"
        values = [pd.to_numeric(rows[column], errors="coerce") for _, rows in groups]
        middle = np.array([v.median() for v in values])
        low, high = np.array([v.min() for v in values]), np.array([v.max() for v in values])
        x = np.arange(len(groups)) + (offset - 1) * width
        ax.bar(x, middle, width, color=[colour_for(variant) for (variant, _), _ in groups], edgecolor="black",
               linewidth=0.5, hatch=HATCHES[offset], label=words, yerr=[middle - low, high - middle], capsize=2)
    ax.set_xticks(np.arange(len(groups)), [f"{variant}\n{rate:g} %/min" for (variant, rate), _ in groups])
    ax.set(ylabel=label, ylim=(0.0, 1.05))  # from 0: a clipped axis makes a 0.01 difference look large
    finish(ax)
    fig.tight_layout()
    return fig
