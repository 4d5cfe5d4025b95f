"""The vector study's charts, report sections and README lines (from its tables only)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pglimits_core.analysis.vectors import headline
from pglimits_core.plotting.figures import ENGINE_COLOURS
from pglimits_core.plotting.html_report import Section

COLOURS = {"pgvector hnsw": ENGINE_COLOURS["postgres"], "pgvector exact": "#7f7f7f", "qdrant hnsw": ENGINE_COLOURS["qdrant"]}

HOW_TO_READ = (
    "Recall@10 counts a returned id as correct when its exact inner product with the query is within "
    "epsilon of the true 10th (ties); it is the mean over every query of the dataset, and `worst 5 %` is "
    "the mean recall of the 5 % worst-served queries. QPS is closed loop, the median over repetitions. "
    "Engines are compared at matched recall: for each target, the smallest ef whose mean recall reaches "
    "it, and the QPS there (no interpolation; \"not reached\" is a result). ᶜ = client-bound (the Python "
    "client, not the server, was the limit).")


def pareto_chart(sweep: pd.DataFrame):
    """Recall (x) against QPS (y, log), one panel per client count, a line per engine along ef;
    the exact scan is one point at recall 1."""
    clients = sorted(sweep.clients.unique())
    fig, axes = plt.subplots(1, len(clients), figsize=(6 * len(clients), 4.2), squeeze=False)
    for ax, count in zip(axes[0], clients, strict=True):
        for variant, group in sweep[sweep.clients == count].groupby("variant", sort=False):
            group = group.sort_values("ef")
            exact = group.ef.isna().all()
            ax.plot(group.recall_mean, group.qps, marker="*" if exact else "o", markersize=10 if exact else 4,
                    linestyle="none" if exact else "-", color=COLOURS.get(variant, "#595959"), label=variant)
            for _, row in group.dropna(subset=["ef"]).iterrows():
                ax.annotate(f"{row.ef:.0f}", (row.recall_mean, row.qps), fontsize=6, xytext=(2, 2),
                            textcoords="offset points")
        ax.set_yscale("log")
        ax.set(xlabel="recall@10 (mean, ties counted)", ylabel="queries per second (log)",
               title=f"{count} client{'s' if count > 1 else ''}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Vectors: QPS against recall (labels: ef); up and right is better")
    fig.tight_layout()
    return fig


def recall_chart(sweep: pd.DataFrame):
    """Recall (mean, and the worst 5 % of queries) against ef, per engine."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    scored = sweep.dropna(subset=["ef", "recall_mean"]).drop_duplicates(["variant", "ef"])
    for variant, group in scored.groupby("variant", sort=False):
        group = group.sort_values("ef")
        colour = COLOURS.get(variant, "#595959")
        ax.plot(group.ef, group.recall_mean, marker="o", color=colour, label=f"{variant}: mean")
        ax.plot(group.ef, group.recall_worst5_mean, marker=".", linestyle="--", color=colour,
                label=f"{variant}: worst 5 % of queries")
    ax.set_xscale("log")
    ax.set(xlabel="ef (hnsw.ef_search / hnsw_ef)", ylabel="recall@10", title="Vectors: recall against ef")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def build_chart(build: pd.DataFrame):
    """Load time, index build time, index size and server memory (PSS) per engine."""
    panels = [("load_s", "load (s)"), ("build_s", "index build (s)"), ("index_mib", "index size (MiB)"),
              ("server_pss_mib", "server memory after build (PSS, MiB)")]
    fig, axes = plt.subplots(1, len(panels), figsize=(13, 3.4))
    for ax, (column, title) in zip(axes, panels, strict=True):
        values = pd.to_numeric(build[column], errors="coerce")
        ax.bar(build.variant, values, color=[COLOURS.get(v, "#595959") for v in build.variant])
        ax.set_title(title, fontsize=10)
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle("Vectors: build cost")
    fig.tight_layout()
    return fig


def filtered_chart(filtered: pd.DataFrame):
    """Recall against the exact filtered top 10, and rows returned, against selectivity; a line
    per (engine, ef)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for (variant, ef), group in filtered.groupby(["variant", "ef"], sort=False):
        group = group.sort_values("selectivity_pct")
        style = {"color": COLOURS.get(variant, "#595959"), "marker": "o",
                 "linestyle": "-" if ef == filtered.ef.max() else "--", "label": f"{variant}, ef {ef}"}
        axes[0].plot(group.selectivity_pct, group.recall_mean, **style)
        axes[1].plot(group.selectivity_pct, group.rows_mean, **style)
    for ax, ylabel in zip(axes, ("recall@10 vs the exact filtered top 10", "rows returned per query (mean)"),
                          strict=True):
        ax.set_xscale("log")
        ax.set(xlabel="selectivity: % of vectors passing the filter", ylabel=ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Vectors: filtered search (pgvector 0.6.2 filters the rows its HNSW scan returns)")
    fig.tight_layout()
    return fig


CAPTIONS = {"difficulty": "Dataset difficulty (LID, relative contrast, 10th/11th gap)",
            "matched": "QPS at matched recall (the headline)", "build": "Build cost",
            "sweep": "Recall–QPS sweep: every (engine, ef, clients) point",
            "latency": "Latency at one offered rate, each engine at its smallest ef reaching the target recall",
            "filtered": "Filtered search: recall against the exact filtered top 10, rows returned, QPS"}


def report_sections(tables: dict[str, pd.DataFrame], figures: dict[str, list[Path]]
                    ) -> tuple[list[Section], list[Section]]:
    shown = [(CAPTIONS[k], tables[k]) for k in ("difficulty", "matched", "build", "latency", "filtered")
             if k in tables and not tables[k].empty]
    pngs = [path for paths in figures.values() for path in paths if path.suffix == ".png"]
    return ([Section("Vectors: pgvector HNSW vs Qdrant at matched recall", [HOW_TO_READ], shown),
             Section("Vectors: figures", figures=pngs)],
            [Section("Vectors: every sweep point", tables=[(CAPTIONS["sweep"], tables.get("sweep", pd.DataFrame()))],
                     collapsed=True)])


def readme_lines(tables: dict[str, pd.DataFrame], links: str) -> list[str]:
    lines = [f"{HOW_TO_READ} {links}", ""]
    top = headline(tables)
    if not top.empty:
        lines += [top.to_markdown(index=False), ""]
    build = tables.get("build", pd.DataFrame())
    if not build.empty:
        cols = [c for c in ("variant", "rows", "load_s", "build_s", "index_mib", "server_pss_mib") if c in build]
        lines += [build[cols].round(2).to_markdown(index=False), ""]
    latency = tables.get("latency", pd.DataFrame())
    if not latency.empty:
        cols = ["variant", "target_recall", "ef", "offered_rate", "sustained", "latency_p50_ms", "latency_p99_ms"]
        lines += [f"{CAPTIONS['latency']} (open loop, from the intended start):", "",
                  latency[cols].round(3).to_markdown(index=False), ""]
    filtered = tables.get("filtered", pd.DataFrame())
    if not filtered.empty:
        cols = ["variant", "selectivity_pct", "ef", "qps", "recall_mean", "rows_mean", "short_answers_pct"]
        lines += ["Filtered search (recall against the exact filtered top 10; rows returned per query):", "",
                  filtered[cols].round(3).to_markdown(index=False), ""]
    difficulty = tables.get("difficulty", pd.DataFrame())
    if not difficulty.empty:
        lines += [difficulty.T.reset_index().rename(columns={"index": "dataset", 0: "value"}).to_markdown(index=False), ""]
    return lines


# The source's figures (docs/SOURCES.md): 200k x 384, 7 vCPU, client count not stated.
SEED_QPS = {"qdrant hnsw": (4_700, 0.968), "pgvector hnsw": (3_600, 0.949)}
SEED_SLACK = 1.25  # a ratio "agrees" inside the seed's widened by this factor each way
SEED_NOTES = ["Vectors: the source measured 200k × 384 on 7 vCPU (client count not stated): pgvector 3.6k qps at "
              "recall 0.949 and never reached 0.97; Qdrant 4.7k qps at 0.968 and 3.9k at 0.994. Its recalls were "
              "not matched (0.949 vs 0.968); ours are, at the smallest ef reaching 0.95, at our highest client "
              "count. Our data differ (a latent dimension of 48 instead of isotropic noise), so the recall each ef "
              "buys differs too: the QPS ratio at matched recall is what compares, and whether each engine reaches "
              "0.97 / 0.99 at all."]


def seed_comparison(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Qdrant/pgvector QPS near recall 0.95, and whether each engine reached 0.97 and 0.99."""
    matched = tables.get("matched", pd.DataFrame())
    sweep = tables.get("sweep", pd.DataFrame())
    if matched.empty or sweep.empty:
        return pd.DataFrame()
    clients = int(matched.clients.max())
    at = matched[(matched.clients == clients) & (matched.target_recall == 0.95)].set_index("variant")
    qd, pg = at.qps.get("qdrant hnsw"), at.qps.get("pgvector hnsw")
    ours = qd / pg if qd and pg and pd.notna(qd) and pd.notna(pg) else None
    seed = SEED_QPS["qdrant hnsw"][0] / SEED_QPS["pgvector hnsw"][0]
    bound = bool(at.get("qps_text", pd.Series(dtype=str)).astype(str).str.contains("ᶜ").any())
    rows = [{"source": "vectors 200k × 384 (7 vCPU)", "figure": f"QPS at recall ≥ 0.95 ({clients} clients here)",
             "A / B": "qdrant hnsw / pgvector hnsw", "seed A": 4_700, "seed B": 3_600, "seed ratio A/B": round(seed, 2),
             "ours A": _round(qd), "ours B": _round(pg), "our ratio A/B": _round(ours, 2),
             "verdict": _verdict(seed, ours, bound)}]
    best = sweep.groupby("variant").recall_mean.max()
    for target, seed_pg in ((0.97, "no (best 0.949)"), (0.99, "no")):
        reached = {v: bool(best.get(v, 0) >= target) for v in ("qdrant hnsw", "pgvector hnsw")}
        same = reached["qdrant hnsw"] and not reached["pgvector hnsw"]
        rows.append({"source": "vectors 200k × 384 (7 vCPU)", "figure": f"reaches recall {target} within the sweep",
                     "A / B": "qdrant hnsw / pgvector hnsw", "seed A": "yes", "seed B": seed_pg,
                     "seed ratio A/B": None, "ours A": "yes" if reached["qdrant hnsw"] else "no",
                     "ours B": "yes" if reached["pgvector hnsw"] else "no", "our ratio A/B": None,
                     "verdict": "agree" if same else "differ"})
    return pd.DataFrame(rows)


def _round(value, digits: int = 0):
    return None if value is None or pd.isna(value) else round(float(value), digits)


def _verdict(seed: float, ours: float | None, client_bound: bool) -> str:
    if ours is None:
        return "not measured on both sides"
    if client_bound:
        return "inconclusive: client-bound"
    if seed / SEED_SLACK <= ours <= seed * SEED_SLACK:
        return "agree"
    return "same direction, different size" if (ours > 1) == (seed > 1) else "differ"
