"""The soak's charts (``soak_tables.py``): the long run's time line and the ceiling against depth."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from pglimits_core.plotting.figures import colour_for, line_style_for, marker_for
from pglimits_core.plotting.figures import finish as _finish


def soak_chart(series: pd.DataFrame) -> plt.Figure:
    """Minutes along x, one line per design: send → claim p99 (the median of each 30 s's
    per-second p99s, its worst second faint beside it), then for the Postgres designs the
    queue table's dead tuples and its size with indexes."""
    postgres = series.dropna(subset=["dead_tuples"]) if "dead_tuples" in series else series.iloc[0:0]
    panels = 3 if not postgres.empty else 1
    fig, axes = plt.subplots(panels, 1, figsize=(9, 3.2 * panels), sharex=True, squeeze=False)
    latency = axes[0, 0]
    for variant, group in series.groupby("variant"):
        style = _style(variant, series.variant)
        latency.plot(group.minute, group.p99_ms, label=variant, **style)
        latency.plot(group.minute, group.worst_second_p99_ms, color=style["color"], alpha=0.3, linewidth=0.8,
                     label="_worst")
    latency.set(yscale="log", ylabel="send → claim p99 (ms, log)",
                title="The queue held at a share of its ceiling, minute by minute\n"
                      "(faint: the worst second of each 30 s)")
    _finish(latency)
    if panels == 3:
        for ax, column, what in ((axes[1, 0], "dead_tuples", "dead tuples in the queue table"),
                                 (axes[2, 0], "table_mib", "queue table + indexes (MiB)")):
            for variant, group in postgres.groupby("variant"):
                ax.plot(group.minute, group[column], label=variant, **_style(variant, series.variant))
            ax.set(ylabel=what)
            _finish(ax)
    axes[-1, 0].set_xlabel("minutes into the measured window")
    return fig


def depth_chart(table: pd.DataFrame) -> plt.Figure:
    """Jobs/s claimed flat out against the backlog the window started from, one line per design."""
    fig, ax = plt.subplots(figsize=(8, 4))
    for variant, group in table.groupby("variant"):
        ordered = group.sort_values("depth")
        ax.plot(ordered.depth, ordered.jobs_per_s, label=variant, **_style(variant, table.variant))
    ax.set(xscale="log", yscale="log", xlabel="jobs waiting when the window started (log)",
           ylabel="jobs/s claimed flat out (log)", title="Ceiling against backlog depth")
    _finish(ax)
    return fig


def _style(variant: str, variants: pd.Series) -> dict:
    return {"color": colour_for(variant), "linestyle": line_style_for(variant, variants),
            "marker": marker_for(variant, variants), "markersize": 4}
