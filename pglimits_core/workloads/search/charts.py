"""The search study's charts: qps vs clients per stream, the crossover (qps and p99 against
match-set size), latency at matched rates."""

from __future__ import annotations

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from pglimits_core.analysis.flags import flag_set
from pglimits_core.plotting.figures import colour_for, line_style_for, sustained_line
from pglimits_core.workloads.search.tables import STREAM_ORDER

RING = "black rings: client-bound (the Python harness, not the server, ran out of CPU: a floor for the server)"


def _streams(table: pd.DataFrame) -> list[str]:
    present = list(dict.fromkeys(table.stream))
    return [s for s in STREAM_ORDER if s in present] + [s for s in present if s not in STREAM_ORDER]


def _line(ax, x, group: pd.DataFrame, y: str, low: str, high: str, variant: str, variants,
          sustained: pd.Series | None = None) -> None:
    """Median with min–max whiskers; a point not ``sustained`` is hollow and not joined."""
    spread = np.vstack([(group[y] - group[low]).to_numpy(), (group[high] - group[y]).to_numpy()])
    ax.errorbar(np.asarray(x, dtype=float), group[y].to_numpy(), yerr=np.clip(spread, 0, None), fmt="none",
                capsize=3, ecolor=colour_for(variant))
    held = np.ones(len(group), dtype=bool) if sustained is None else sustained.eq(True).to_numpy(dtype=bool)
    sustained_line(ax, x, group[y], held, color=colour_for(variant), linestyle=line_style_for(variant, variants),
                   label=variant)
    marked = group.client_bound.map(flag_set).astype(bool).to_numpy()
    if marked.any():
        ax.scatter(np.asarray(x, dtype=float)[marked], group[y].to_numpy()[marked], s=130, facecolors="none",
                   edgecolors="black", zorder=4)


def throughput_chart(table: pd.DataFrame) -> plt.Figure:
    """Median qps (whiskers min–max over repetitions) against clients, one panel per stream."""
    streams = _streams(table)
    fig, axes = plt.subplots(1, len(streams), figsize=(4.6 * len(streams), 4.4), squeeze=False, sharey=False)
    for ax, stream in zip(axes[0], streams, strict=True):
        rows = table[table.stream == stream]
        for variant, group in rows.groupby("variant", sort=False):
            group = group.sort_values("clients")
            _line(ax, group.clients, group, "qps", "min_qps", "max_qps", variant, table.variant)
        median = rows.median_matches.iloc[0]
        ax.set(xscale="log", title=f"{stream} (median match set {median:,.0f})", xlabel="clients (worker processes)")
        ticks = sorted(int(c) for c in rows.clients.unique())
        ax.set_xticks(ticks, labels=[str(c) for c in ticks])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("queries per second (closed loop)")
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Search throughput: ranked 2-term AND, top 10, per term-frequency class and the mixed stream\n"
                 f"(median over repetitions, whiskers min–max; {RING})", fontsize=10)
    fig.tight_layout()
    return fig


def crossover_chart(table: pd.DataFrame) -> plt.Figure:
    """Against each bucket's median match-set size (log): qps, and the service-time p99 — or the
    p95 (hollow marker) where a bucket's window held fewer than the 100 queries a p99 needs."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    clients = int(table.clients.iloc[0])
    for variant, group in table.groupby("variant", sort=False):
        group = group.sort_values("median_matches")
        _line(left, group.median_matches, group, "qps", "min_qps", "max_qps", variant, table.variant)
        tail = group.assign(tail_ms=group.p99_ms.fillna(group.get("p95_ms")),
                            tail_low=group.p99_min_ms.fillna(group.get("p95_ms")),
                            tail_high=group.p99_max_ms.fillna(group.get("p95_ms")))
        _line(right, tail.median_matches, tail, "tail_ms", "tail_low", "tail_high", variant, table.variant)
        fallback = tail[group.p99_ms.isna() & tail.tail_ms.notna()]
        right.scatter(fallback.median_matches, fallback.tail_ms, s=60, facecolors="white",
                      edgecolors=colour_for(variant), zorder=5)
    for ax, label in ((left, "queries per second"), (right, "service time p99 (ms; hollow: p95, < 100 queries)")):
        ax.set(xscale="log", yscale="log", xlabel="documents matching both terms (median of the bucket)", ylabel=label)
        ax.grid(alpha=0.3, which="both")
    right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"The crossover: where Postgres's ranked query stops keeping up as match sets grow\n"
                 f"(closed loop, {clients} clients; buckets of match-set size; median over repetitions, "
                 f"whiskers min–max; {RING})", fontsize=10)
    fig.tight_layout()
    return fig


def latency_chart(table: pd.DataFrame) -> plt.Figure:
    """Latency from the intended start (open loop) at the matched offered rates: p99 (whiskers
    min–max over repetitions) and p50 dots, one panel per stream; a rate not sustained is a
    hollow marker the line does not join."""
    streams = _streams(table)
    fig, axes = plt.subplots(1, len(streams), figsize=(6 * len(streams), 4.4), squeeze=False)
    for ax, stream in zip(axes[0], streams, strict=True):
        rows = table[table.stream == stream]
        for variant, group in rows.groupby("variant", sort=False):
            group = group.sort_values("offered_per_s")
            _line(ax, group.offered_per_s, group, "latency_p99_ms", "latency_p99_min_ms", "latency_p99_max_ms",
                  variant, table.variant, sustained=group.sustained)
            ax.plot(group.offered_per_s, group.latency_p50_ms, marker=".", linestyle="none", color=colour_for(variant))
        ax.set(yscale="log", title=f"stream {stream}", xlabel="offered rate (queries/s, open loop, same for every system)",
               ylabel="latency from intended start (ms)")
        ax.grid(alpha=0.3, which="both")
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Search latency at matched rates (fractions of the slower system's closed-loop peak)\n"
                 "lines: p99, median over repetitions, whiskers min–max; dots: p50; hollow, not joined: not sustained\n"
                 f"({RING})", fontsize=9)
    fig.tight_layout()
    return fig
