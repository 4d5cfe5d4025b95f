"""The queue study's charts: throughput per consumer count, latency at matched rates,
the crash drills and dead tuples, each grouped by durability class."""

from __future__ import annotations

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from pglimits_core.analysis.flags import flag_set
from pglimits_core.plotting.figures import colour_for, line_style_for, sustained_line
from pglimits_core.plotting.figures import finish as _finish
from pglimits_core.workloads.queue.durability_tables import classes_in, ensure_class, label
from pglimits_core.workloads.queue.latency_names import FROM, NAME, P50, P99


def class_panels(table: pd.DataFrame, width: float = 9, height: float = 4):
    """One panel per durability class present (stacked, shared x): variants are compared within
    a class. Returns the figure and (class, its rows, its axes) per panel."""
    table = ensure_class(table)
    classes = classes_in(table)
    fig, axes = plt.subplots(len(classes), 1, figsize=(width, height * len(classes)), sharex=True, squeeze=False)
    return fig, [(name, table[table.durability_class == name], ax) for name, ax in zip(classes, axes[:, 0], strict=True)]


def _panel_title(ax, title: str, durability_class: str, first: bool) -> None:
    heading = f"{title}\n" if first else ""
    ax.set_title(f"{heading}durability class: {label(durability_class)}", fontsize=10)


def _flagged(values: pd.Series) -> pd.Series:
    """True where a verdict holds; None (not applicable, not recorded) is not a mark."""
    return values.map(flag_set).astype(bool)


def consumer_sweep_chart(table: pd.DataFrame, title: str = "Queue throughput vs consumers") -> plt.Figure:
    """Jobs/s (median, whiskers min–max) per consumer count, one panel per durability class;
    black rings = client-bound; ▲ = a lower bound (backlog ran out / producer-bound)."""
    fig, panels = class_panels(table)
    for index, (name, rows, ax) in enumerate(panels):
        for variant, group in rows.groupby("variant"):
            _sweep_line(ax, group.sort_values("consumers"), variant, table.variant)
        _panel_title(ax, f"{title}\n(black rings: client-bound — the harness, not the server, was the limit; "
                         "▲: at least this, a lower bound)", name, index == 0)
        ax.set(xscale="log", ylabel="jobs/s consumed")
        _finish(ax)
    ticks = sorted(int(c) for c in table.consumers.unique())
    _bottom_axis(panels[-1][2], "consumers (worker processes)", ticks, [str(c) for c in ticks])
    return fig


def _bottom_axis(ax, xlabel: str, ticks: list, labels: list[str]) -> None:
    """The shared x axis, labelled once under the last panel, ticks only where data sits."""
    ax.set_xlabel(xlabel)
    ax.set_xticks(ticks, labels=labels)
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _sweep_line(ax, group: pd.DataFrame, variant: str, variants: pd.Series) -> None:
    # one (2, n) array: a list of two arrays makes matplotlib test truth of an array
    spread = np.vstack([(group.jobs_per_s - group.min_jobs_per_s).to_numpy(),
                        (group.max_jobs_per_s - group.jobs_per_s).to_numpy()])
    ax.errorbar(group.consumers.to_numpy(), group.jobs_per_s.to_numpy(), yerr=spread, marker="o", capsize=3,
                color=colour_for(variant), label=variant, linestyle=line_style_for(variant, variants))
    bound = group[_flagged(group.client_bound)]
    ax.scatter(bound.consumers, bound.jobs_per_s, s=120, facecolors="none", edgecolors="black")
    if "lower_bound" in group:
        floor = group[_flagged(group.lower_bound)]
        ax.scatter(floor.consumers, floor.jobs_per_s, marker="^", s=110, color=colour_for(variant),
                   edgecolors="black", zorder=4)


def latency_chart(table: pd.DataFrame) -> plt.Figure:
    """Send → claim p99 from the scheduled send (median over repetitions, whiskers min–max) and
    p50 per offered rate, open loop, one panel per durability class. A rate not sustained in some repetition is a hollow
    marker the line does not join (a stall, not a latency). Variants are nudged apart along x so
    their markers at the same rate stay readable."""
    fig, panels = class_panels(table.assign(sustained=table.sustained.astype(bool)), height=4.5)
    for index, (name, rows, ax) in enumerate(panels):
        per_rate = rows.groupby(["variant", "offered_per_s"]).agg(
            p99=(P99, "median"), p99_min=(P99, "min"), p99_max=(P99, "max"),
            p50=(P50, "median"), sustained=("sustained", "all")).reset_index()
        variants = sorted(per_rate.variant.unique())
        for offset, (variant, group) in enumerate(per_rate.groupby("variant")):
            x = group.offered_per_s * (1 + 0.025 * (offset - (len(variants) - 1) / 2))
            _latency_points(ax, x, group, variant, table.variant)
        _panel_title(ax, f"Queue latency at matched rates: {NAME}, {FROM} to the claim's return (ack not in it)\n"
                         "(lines: p99 median over repetitions, joining sustained rates only; whiskers min–max; "
                         "dots: p50;\nhollow marker, not joined: not sustained in some repetition)",
                     name, index == 0)
        ax.set(xscale="log", yscale="log", ylabel=f"{NAME} latency (ms)\n{FROM}")
        _finish(ax)
    rates = sorted(table.offered_per_s.unique())
    panels[-1][2].set_xlim(rates[0] / 1.3, rates[-1] * 1.3)
    _bottom_axis(panels[-1][2], "offered rate (msg/s, open loop)", rates, [f"{r:,.0f}" for r in rates])
    return fig


def _latency_points(ax, x: pd.Series, group: pd.DataFrame, variant: str, variants: pd.Series) -> None:
    spread = np.vstack([(group.p99 - group.p99_min).to_numpy(), (group.p99_max - group.p99).to_numpy()])
    ax.errorbar(x.to_numpy(), group.p99.to_numpy(), yerr=spread, fmt="none", capsize=2, ecolor=colour_for(variant))
    sustained_line(ax, x, group.p99, group.sustained, color=colour_for(variant),
                   linestyle=line_style_for(variant, variants), label=f"{variant} p99")
    ax.plot(x, group.p50, marker=".", linestyle="none", color=colour_for(variant))


CLASS_MARKERS = {"per_commit": "o", "periodic": "s", "none": "^"}


def recovery_chart(drills: pd.DataFrame) -> plt.Figure:
    """Time from the restart call to the first answered claim vs the WAL to replay at the kill, one
    point per drill; colour = engine, marker = durability class. A drill that recorded no replay
    size has no x: it is not drawn (not at 0), and a note beside the plot lists its times."""
    fig, ax = plt.subplots(figsize=(8, 5))
    drills = ensure_class(drills).assign(wal_to_replay_mb=lambda d: pd.to_numeric(d.wal_to_replay_mb, errors="coerce"))
    unsized = []
    for variant, group in drills.groupby("variant"):
        name, sized = group.durability_class.iloc[0], group.wal_to_replay_mb.notna()
        if sized.any():
            ax.scatter(group.wal_to_replay_mb[sized], group.recovery_s[sized], marker=CLASS_MARKERS.get(name, "D"),
                       s=60, color=colour_for(variant), label=f"{variant} ({label(name)})")
        if (~sized).any():
            unsized.append(_unsized_line(variant, name, group.recovery_s[~sized]))
    ax.set(xlabel="WAL to replay at the kill (MB, written since the last checkpoint)",
           ylabel="restart call -> first answered claim (s)",
           title="Crash drill (SIGKILL): recovery time vs WAL to replay, one point per drill\n"
                 "(SIGKILL keeps the OS page cache: this drill cannot separate durability classes)")
    if ax.collections:
        _finish(ax)
    else:
        ax.grid(alpha=0.3)
    if unsized:
        ax.text(1.01, 0.0, "Not drawn — no replay size recorded\n(restart → first claim, s):\n" + "\n".join(unsized),
                transform=ax.transAxes, va="bottom", ha="left", fontsize=7.5)
    return fig


def _unsized_line(variant: str, durability_class: str, recovery_s: pd.Series) -> str:
    values = pd.to_numeric(recovery_s, errors="coerce").dropna()
    times = f"{values.min():.3f}–{values.max():.3f}" if len(values) else "not recorded"
    return f"• {variant} ({label(durability_class)}): {len(recovery_s)} drill(s), {times}"


def dead_tuples_chart(series: pd.DataFrame) -> plt.Figure:
    """Dead tuples in the queue table(s) second by second (Postgres runs at the top common rate)."""
    fig, ax = plt.subplots(figsize=(8, 4))
    for variant, group in series.groupby("variant"):
        ax.plot(group.t, group.dead_tuples, marker=".", color=colour_for(variant),
                linestyle=line_style_for(variant, series.variant), label=variant)
    ax.set(xlabel="seconds since run start (warmup included)", ylabel="dead tuples (queue tables)",
           title="Postgres queue health: dead tuples under churn (autovacuum naptime 10 s)")
    _finish(ax)
    return fig
