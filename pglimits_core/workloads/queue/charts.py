"""The queue study's charts: throughput per consumer count, latency at matched rates,
the crash drills and dead tuples, each grouped by durability class."""

from __future__ import annotations

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from pglimits_core.analysis.flags import flag_set
from pglimits_core.plotting.figures import colour_for, line_style_for, marker_for, sustained_line
from pglimits_core.plotting.figures import finish as _finish
from pglimits_core.workloads.queue.durability_tables import classes_in, ensure_class, label
from pglimits_core.workloads.queue.latency_names import FROM, NAME, P50, P99


def class_panels(table: pd.DataFrame, width: float = 9, height: float = 4, sharex: bool = True):
    """One panel per durability class present (stacked; a shared x unless each panel names its
    own designs along it): variants are compared within a class. Returns the figure and (class,
    its rows, its axes) per panel."""
    table = ensure_class(table)
    classes = classes_in(table)
    fig, axes = plt.subplots(len(classes), 1, figsize=(width, height * len(classes)), sharex=sharex, squeeze=False)
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
        # log y: Redis's tens of thousands would flatten every batch-1 Postgres line on a linear axis
        ax.set(xscale="log", yscale="log", ylabel="jobs/s consumed (log)")
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
    # siblings of one system share its colour: a dash and a marker of their own tell them apart
    ax.errorbar(group.consumers.to_numpy(), group.jobs_per_s.to_numpy(), yerr=spread, capsize=3,
                marker=marker_for(variant, variants), color=colour_for(variant), label=variant,
                linestyle=line_style_for(variant, variants))
    bound = group[_flagged(group.client_bound)]
    ax.scatter(bound.consumers, bound.jobs_per_s, s=120, facecolors="none", edgecolors="black")
    if "lower_bound" in group:
        floor = group[_flagged(group.lower_bound)]
        ax.scatter(floor.consumers, floor.jobs_per_s, marker="^", s=110, color=colour_for(variant),
                   edgecolors="black", zorder=4)


def latency_chart(table: pd.DataFrame) -> plt.Figure:
    """Send → claim p99 from the scheduled send (median over repetitions, whiskers min–max) and
    p50 per design, open loop, one panel per durability class: a design per slot on the x axis
    (named there), its offered rates left to right inside its slot, joined only where sustained
    in every repetition (a hollow marker is a stall, not a latency)."""
    fig, panels = class_panels(table.assign(sustained=table.sustained.astype(bool)), height=4.5, sharex=False)
    rates = sorted(table.offered_per_s.unique())
    for index, (name, rows, ax) in enumerate(panels):
        per_rate = rows.groupby(["variant", "offered_per_s"]).agg(
            p99=(P99, "median"), p99_min=(P99, "min"), p99_max=(P99, "max"),
            p50=(P50, "median"), sustained=("sustained", "all")).reset_index()
        variants = sorted(per_rate.variant.unique())
        for slot, variant in enumerate(variants):
            group = per_rate[per_rate.variant == variant].sort_values("offered_per_s")
            x = slot + group.offered_per_s.map(lambda rate: _rate_offset(rate, rates))
            _latency_points(ax, x, group, variant, table.variant)
        at = " / ".join(f"{rate:,.0f}" for rate in rates)
        _panel_title(ax, f"Queue {NAME} latency, {FROM} to the claim's return, open loop at {at} msg/s", name, index == 0)
        ax.set(yscale="log", ylabel=f"{NAME} latency (ms)\n{FROM}", xlim=(-0.6, len(variants) - 0.4))
        ax.set_xticks(range(len(variants)), [v.replace(" ", "\n", 1) for v in variants], fontsize=7.5)
        _finish(ax)
    if len(rates) > 1:
        panels[-1][2].set_xlabel(f"design; inside each, the offered rates left to right ({at} msg/s)")
    return fig


def _rate_offset(rate: float, rates: list[float]) -> float:
    """Where a rate sits inside its design's slot: the lowest left, the highest right."""
    return 0.0 if len(rates) == 1 else -0.3 + 0.6 * rates.index(rate) / (len(rates) - 1)


def _latency_points(ax, x: pd.Series, group: pd.DataFrame, variant: str, variants: pd.Series) -> None:
    spread = np.vstack([(group.p99 - group.p99_min).to_numpy(), (group.p99_max - group.p99).to_numpy()])
    ax.errorbar(x.to_numpy(), group.p99.to_numpy(), yerr=spread, fmt="none", capsize=2, ecolor=colour_for(variant))
    sustained_line(ax, x, group.p99, group.sustained, color=colour_for(variant),
                   linestyle=line_style_for(variant, variants), label=f"{variant} p99")
    ax.plot(x, group.p50, marker=".", linestyle="none", color=colour_for(variant))


CLASS_MARKERS = {"per_commit": "o", "periodic": "s", "none": "^"}


def recovery_chart(drills: pd.DataFrame) -> plt.Figure:
    """Per design (a row each, grouped by durability class), one point per drill: left, the time
    from the restart call to the first answered claim (log); right, the acknowledged jobs the kill
    lost (symlog, so 0 sits on the axis beside thousands). Colour = engine, marker = durability
    class. The WAL Postgres replayed is written beside its rows; a system that records none gets
    no figure there (never a 0), and a drill with no recovery time is named, not drawn."""
    drills = ensure_class(drills).assign(recovery_s=lambda d: pd.to_numeric(d.recovery_s, errors="coerce"),
                                         lost=lambda d: pd.to_numeric(d.lost, errors="coerce"))
    order = [v for name in classes_in(drills) for v in sorted(drills.variant[drills.durability_class == name].unique())]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 0.42 * len(order) + 1.8), sharey=True)
    untimed = []
    for row, variant in enumerate(reversed(order)):
        group = drills[drills.variant == variant]
        style = {"marker": CLASS_MARKERS.get(group.durability_class.iloc[0], "D"), "s": 50,
                 "color": colour_for(variant)}
        timed = group[group.recovery_s.notna()]
        left.scatter(timed.recovery_s, [row] * len(timed), **style)
        right.scatter(group.lost, [row] * len(group), **style)
        _replay_note(left, row, group)
        if timed.empty:
            untimed.append(variant)
    left.set_yticks(range(len(order)), [f"{v} ({label(n)})" for v, n in _classes_of(drills, order[::-1])], fontsize=7.5)
    left.set(xscale="log", xlabel="restart call → first answered claim (s, log)")
    right.set_xscale("symlog", linthresh=1)
    right.set(xlabel="acknowledged jobs lost per drill (0, then log)")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.suptitle("Crash drill (SIGKILL), one point per drill (SIGKILL keeps the OS page cache: "
                 "zero lost does not separate durability classes)", fontsize=10)
    if untimed:
        left.text(0.0, -0.12, "No recovery time recorded: " + ", ".join(untimed), transform=left.transAxes,
                  fontsize=7.5, va="top")
    fig.tight_layout()
    return fig


def _classes_of(drills: pd.DataFrame, variants: list[str]) -> list[tuple[str, str]]:
    return [(v, drills.durability_class[drills.variant == v].iloc[0]) for v in variants]


def _replay_note(ax, row: int, group: pd.DataFrame) -> None:
    """"WAL 6.6–6.7 MB" beside a design's points where its drills recorded a replay size."""
    sizes = pd.to_numeric(group.wal_to_replay_mb, errors="coerce").dropna()
    if sizes.empty or group.recovery_s.isna().all():
        return
    said = f"{sizes.min():g}" if sizes.min() == sizes.max() else f"{sizes.min():g}–{sizes.max():g}"
    ax.annotate(f"WAL {said} MB", (group.recovery_s.max(), row), xytext=(8, 0), textcoords="offset points",
                va="center", fontsize=7, color="dimgray")


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
