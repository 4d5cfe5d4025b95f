"""The capacity figure every workload draws the same way: p99 from the intended start against the
offered rate, one line per design, the latency target drawn across, the confirmed capacity marked.

Drawn from ``experiments.capacity_table`` rows (their ``curve``: every probe and confirmation as
(offered_per_s, p99_ms, held)). Filled markers held the target (p99, achieved rate and backlog),
hollow ones did not; a star marks the capacity its steady confirmations held at.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from pglimits_core.plotting.figures import colour_for, finish, line_style_for


def capacity_chart(table: pd.DataFrame, unit: str = "ops/s", what: str = "p99 from the intended start") -> plt.Figure:
    targets = sorted(t for t in table.target_p99_ms.dropna().unique())
    fig, axes = plt.subplots(1, max(1, len(targets)), figsize=(6.5 * max(1, len(targets)), 4.8), squeeze=False)
    for ax, target in zip(axes[0], targets, strict=False):
        rows = table[table.target_p99_ms == target]
        for row in rows.itertuples():
            _design(ax, row, table.variant)
        ax.axhline(target, color="black", linewidth=1, linestyle=":", label=f"target p99 ≤ {target:g} ms")
        ax.set(xscale="log", yscale="log", xlabel=f"offered rate ({unit}, log scale)", ylabel=f"{what} (ms, log scale)",
               title=f"Capacity at p99 ≤ {target:g} ms\n(● held, ○ missed; ★ the rate its steady windows held)")
        _plain_ticks(ax)
        finish(ax)
    fig.tight_layout()
    return fig


def _plain_ticks(ax) -> None:
    """Numbers as people read them (1,000 and 2.5), not 10³ and 2.5×10⁰, on both log axes."""
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 10 else f"{value:g}"))
        axis.set_minor_formatter(NullFormatter())


def _design(ax, row, variants) -> None:
    curve = sorted((offered, p99, held) for offered, p99, held in row.curve if p99 is not None)
    if not curve:
        return
    colour, style = colour_for(row.variant), line_style_for(row.variant, variants)
    ax.plot([c[0] for c in curve], [c[1] for c in curve], color=colour, linestyle=style, linewidth=1,
            label=row.variant)
    for offered, p99, held in curve:
        ax.scatter([offered], [p99], s=30, color=colour if held else "none", edgecolors=colour, zorder=3)
    if pd.notna(getattr(row, "capacity_per_s", None)) and pd.notna(getattr(row, "p99_ms", None)):
        ax.scatter([row.capacity_per_s], [row.p99_ms], marker="*", s=180, color=colour, edgecolors="black", zorder=4)
