"""Engine colours fixed across every figure, the queue charts, and ``save_figure`` (PNG + SVG)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.ticker  # noqa: E402

matplotlib.use("Agg")  # headless: papermill and CI have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from pglimits_core.config import FIGURES_DIR  # noqa: E402

# One colour per system family, the same in every figure (variants differ by line style).
ENGINE_COLOURS = {
    "pg_skiplocked": "#1f4e79", "pg_delete": "#2e75b6", "pgmq": "#5b9bd5", "postgres": "#2e75b6",
    "redis_reliable": "#c00000", "redis": "#c00000", "sqlite_wal": "#548235", "sqlite": "#548235",
    "opensearch": "#bf9000", "qdrant": "#7030a0",
}
LINE_STYLES = ["-", "--", "-.", ":"]


def colour_for(variant: str) -> str:
    return ENGINE_COLOURS.get(variant.split()[0], "#595959")


def line_style_for(variant: str, variants) -> str:
    """Variants of one system share its colour and differ by line style, in a stable order."""
    family = variant.split()[0]
    siblings = sorted(v for v in set(variants) if v.split()[0] == family)
    return LINE_STYLES[siblings.index(variant) % len(LINE_STYLES)]


def _finish(ax) -> None:
    """The look every chart shares: light grid, small legend beside the plot (ten variants'
    lines would hide under a legend drawn inside it)."""
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def save_figure(fig: plt.Figure, name: str, directory: Path | None = None) -> list[Path]:
    """Write ``name``.png (150 dpi) and ``name``.svg; returns both paths."""
    directory = Path(directory or FIGURES_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{name}.png", directory / f"{name}.svg"]
    fig.savefig(paths[0], dpi=150, bbox_inches="tight")
    # no date and fixed element ids: the same records give the same SVG bytes, so a regenerated
    # figure shows up in git only when its data changed
    with matplotlib.rc_context({"svg.hashsalt": "pglimits"}):
        fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None})
    return paths


def consumer_sweep_chart(table: pd.DataFrame, title: str = "Queue throughput vs consumers") -> plt.Figure:
    """Jobs/s (median, whiskers min–max) per consumer count; hollow markers = client-bound."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for variant, group in table.groupby("variant"):
        group = group.sort_values("consumers")
        # one (2, n) array: a list of two arrays makes matplotlib test truth of an array
        spread = np.vstack([(group.jobs_per_s - group.min_jobs_per_s).to_numpy(),
                            (group.max_jobs_per_s - group.jobs_per_s).to_numpy()])
        ax.errorbar(group.consumers.to_numpy(), group.jobs_per_s.to_numpy(), yerr=spread,
                    marker="o", capsize=3, color=colour_for(variant), label=variant,
                    linestyle=line_style_for(variant, table.variant))
        bound = group[group.client_bound]
        ax.scatter(bound.consumers, bound.jobs_per_s, s=120, facecolors="none", edgecolors="black")
    ax.set(xscale="log", xlabel="consumers (worker processes)", ylabel="jobs/s consumed",
           title=f"{title}\n(black rings: client-bound — the harness, not the server, was the limit)")
    ticks = sorted(int(c) for c in table.consumers.unique())
    ax.set_xticks(ticks, labels=[str(c) for c in ticks])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    _finish(ax)
    return fig


def latency_chart(table: pd.DataFrame) -> plt.Figure:
    """End-to-end p99 (median over repetitions, whiskers min–max) and p50 per offered rate, open
    loop; × = not sustained in some repetition. Variants are nudged apart along x so their
    markers at the same rate stay readable."""
    fig, ax = plt.subplots(figsize=(9, 5))
    per_rate = table.groupby(["variant", "offered_per_s"]).agg(
        p99=("e2e_p99_ms", "median"), p99_min=("e2e_p99_ms", "min"), p99_max=("e2e_p99_ms", "max"),
        p50=("e2e_p50_ms", "median"), sustained=("sustained", "all")).reset_index()
    variants = sorted(per_rate.variant.unique())
    for index, (variant, group) in enumerate(per_rate.groupby("variant")):
        x = group.offered_per_s * (1 + 0.025 * (index - (len(variants) - 1) / 2))
        spread = np.vstack([(group.p99 - group.p99_min).to_numpy(), (group.p99_max - group.p99).to_numpy()])
        ax.errorbar(x.to_numpy(), group.p99.to_numpy(), yerr=spread, marker="o", capsize=2,
                    color=colour_for(variant), linestyle=line_style_for(variant, table.variant), label=f"{variant} p99")
        ax.plot(x, group.p50, marker=".", linestyle="none", color=colour_for(variant))
        failed = ~group.sustained.astype(bool)
        ax.scatter(x[failed], group.p99[failed], marker="x", s=100, color="black", zorder=3)
    rates = sorted(per_rate.offered_per_s.unique())
    ax.set(xscale="log", yscale="log", xlabel="offered rate (msg/s, open loop)", ylabel="end-to-end latency (ms)",
           title="Queue latency at matched rates\n(lines: p99 median over repetitions, whiskers min–max; "
                 "dots: p50; ×: not sustained)")
    ax.set_xticks(rates, labels=[f"{r:,.0f}" for r in rates])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    _finish(ax)
    return fig


def cliff_chart(points: pd.DataFrame) -> plt.Figure:
    """Achieved vs offered per rate-search probe; red rings = probes that broke the SLO."""
    fig, ax = plt.subplots(figsize=(8, 5))
    top = points[["offered_per_s", "consumed_per_s"]].max().max() * 1.1
    ax.plot([0, top], [0, top], color="grey", linewidth=0.8, label="achieved = offered")
    for variant, group in points.groupby("variant"):
        group = group.sort_values("offered_per_s")
        ax.plot(group.offered_per_s, group.consumed_per_s, marker="o", color=colour_for(variant),
                linestyle=line_style_for(variant, points.variant), label=variant)
        failed = group[group.failed != ""]
        ax.scatter(failed.offered_per_s, failed.consumed_per_s, s=140, facecolors="none", edgecolors="red")
    ax.set(xlabel="offered rate (msg/s)", ylabel="consumed rate (msg/s)",
           title="The cliff: highest sustainable rate per system (red rings: SLO broken)")
    _finish(ax)
    return fig


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
