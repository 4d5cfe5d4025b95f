"""The search study's report sections, README lines and seed comparison (from its tables only)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pglimits_core.analysis.flags import flag_set
from pglimits_core.analysis.report import flag_points
from pglimits_core.analysis.runs import busy_neighbour
from pglimits_core.analysis.seed import AGREEMENT_SLACK, floor_could_move_it, verdict
from pglimits_core.analysis.verdict import LOAD
from pglimits_core.plotting.html_report import Section
from pglimits_core.workloads.search.extensions import CAPTION as EXTENSIONS_CAPTION
from pglimits_core.workloads.search.extensions import NOTE as EXTENSIONS_NOTE
from pglimits_core.workloads.search.extensions import extension_lines
from pglimits_core.workloads.search.mechanism import CAPTION as MECHANISM_CAPTION
from pglimits_core.workloads.search.writes_report import WRITES_CAPTION, writes_lines

SETUP = (
    "Postgres: a <code>tsvector</code> column generated with the <code>simple</code> configuration, a GIN index, "
    "<code>to_tsquery('simple', 'a &amp; b')</code>, ranked by <code>ts_rank</code> (top 10), and the unranked "
    "match (<code>@@ … LIMIT 10</code>) to show what ranking costs; <code>VACUUM ANALYZE</code> and a CHECKPOINT "
    "after the load. Elasticsearch 8.13.4 and OpenSearch 2.19.6, identical requests: 1 shard, 0 replicas, refresh "
    "off during the load, force-merged to 1 segment, request cache off, the standard tokenizer + lowercase (the "
    "tokens Postgres's <code>simple</code> reads on this corpus), <code>match</code> with <code>operator: and</code>, "
    "top 10 by BM25, <code>_source: false</code>. Every system gets the same documents and the same queries in the "
    "same seeded order; every settings value is in the run manifests.")
FAIRNESS = (
    "<b>Lucene may stop early, Postgres cannot.</b> The engines run with <code>track_total_hits</code> at their "
    "default (10,000, recorded): past it they stop counting, and their top-10 search skips documents that cannot "
    "make the top 10 (block-max WAND). Postgres's <code>ts_rank</code> query scores every matching row before it "
    "keeps 10 — that is part of the finding, not an artefact: the crossover figure shows where it starts to cost. "
    "The correctness table says how many queries had a count that was only a lower bound.")
CLIENT = (
    "<b>The client.</b> Client and servers share the box's cores. Postgres is queried with psycopg (C, prepared "
    "statements); the engines with a minimal keep-alive HTTP/1.1 client that sends pre-encoded requests (37–87 µs "
    "of client CPU per query in the full run, where elasticsearch-py spends ~300–400 µs) — the request bodies are the ones the "
    "vendor clients send. Each throughput row says the client CPU per query; <span class='flag'>client-bound</span> "
    "(ᶜ) marks a point where the Python workers, not the server, ran out of CPU: a floor for the server. "
    "<code>other_cpu_pct</code> is CPU used in the same seconds by processes that were neither client nor server "
    "(another tenant): a point with much of it measured a shared box.")
CORRECTNESS = (
    "<b>Correctness first.</b> Every query is run on every variant before anything is timed: its match count "
    "must equal the exact count from the corpus, and its top 10 must be min(10, matches) documents of the exact "
    "match set. A variant with one disagreement is not measured. Every measured answer is checked again for its "
    "hit count inside the load loop (a wrong one fails the run).")
RANKING = (
    "<b>Ranking agreement</b> (beyond the source): overlap of the top 10s, shared documents / min(10, matches), "
    "averaged per group. Against an exact BM25 top 10 computed offline from the corpus (k1 = 1.2, b = 0.75, "
    "Lucene's formula with exact document lengths; Lucene stores lengths in one byte, so near-ties may swap — "
    "\"ties counted\" accepts any document whose exact score reaches the exact 10th). <code>ts_rank</code> is not "
    "BM25 (no idf, its own length normalisation), so its overlap says how different the answers Postgres gives are.")

CAPTIONS = {
    "load": "Load and index (median over the loads): bulk load, index build (Postgres: CREATE INDEX; engines: "
            "refresh + force-merge to one segment), settle (Postgres: VACUUM ANALYZE + CHECKPOINT; engines: "
            "refresh interval back on + flush), size on disk, server memory after the load",
    "correctness": "Correctness: every query on every variant against the exact answer",
    "peak": "Throughput headline: qps at 1 client and at the best client count, per stream",
    "throughput": "Throughput per stream and client count (closed loop; service time percentiles; CPU per side)",
    "crossover": "The crossover: throughput and service time per bucket of match-set size",
    "latency": ("Latency at matched rates (open loop, from the intended start; the same offered rate for every "
                "system; the sweep's short windows: a p99 here holds each load worker's schedule lag too — one slow "
                "query delays the next on its worker — so it can exceed what the capacity's 30-s windows held)"),
    "ranking": "Ranking agreement of the top 10s",
    "mechanism": MECHANISM_CAPTION,
    "extensions": EXTENSIONS_CAPTION,
    "writes": WRITES_CAPTION,
}

SEED_FIGURE = "full-text search, ranked 2-term AND, 32 clients"
SEED_CLIENTS = 32
SEED_SOURCE = "seed 003 (the study this project implements)"
SEED_QPS = (22_900, 15_200)  # Postgres GIN, Elasticsearch (docs/SOURCES.md)
SEED_P99 = (4.6, 3.4)
SEED_NOTES = [f"Search: Postgres GIN (ranked, <code>ts_rank</code>) over Elasticsearch in the mixed query stream at "
              "the seed's 32 clients, closed loop (the seed's qps and p99 at 32 clients); our p99 is the service "
              "time of those closed-loop runs. Same verdict rule as the queue (within the seed's ratio ×"
              f"{AGREEMENT_SLACK} each way = agree). A client-bound side is a floor for that system and makes "
              "the verdict inconclusive where the floor could move the ratio into the seed's range. The seed "
              "does not state its query mix and ran on 7 vCPU: its 22,900 (Postgres) and 15,200 (Elasticsearch) "
              "queries/s are far beyond what our mixed stream reaches per core (GIN 512, the engines 2,200-2,400 "
              "on one), so its terms may be rarer than ours (on our rare stream GIN's ceiling is above the "
              "engines', as the seed's is); the p99 ratio of closed-loop runs largely restates the throughput "
              "ratio."]


def search_flags(table: pd.DataFrame) -> pd.DataFrame:
    """``flag_points`` plus a mark where another process took CPU in the run's seconds."""
    flagged = flag_points(table)
    if flagged.empty or "other_cpu_pct" not in flagged:
        return flagged
    runs = flagged.get("runs", pd.Series(1, index=flagged.index))
    busy = flagged.get("busy_runs", flagged.other_cpu_pct.map(busy_neighbour).astype(int))
    marks = ["; ".join(filter(None, [flag, f"busy neighbour in {b} of {n} runs (up to {other:.0f} % of a core)"
                                     if b else ""]))
             for flag, other, b, n in zip(flagged["flags"], flagged.other_cpu_pct, busy, runs, strict=True)]
    return flagged.assign(flags=marks)


def report_sections(tables: dict[str, pd.DataFrame], figures: dict[str, list[Path]]
                    ) -> tuple[list[Section], list[Section]]:
    shown = [(CAPTIONS[k], search_flags(tables[k])) for k in ("load", "correctness", "peak", "latency", "crossover",
                                                            "mechanism", "ranking", "extensions", "writes")
             if k in tables]
    pngs = [path for paths in figures.values() for path in paths if path.suffix == ".png"]
    return ([Section("Full-text search: Postgres GIN vs Elasticsearch and OpenSearch",
                     [SETUP, CORRECTNESS, FAIRNESS, CLIENT, RANKING, EXTENSIONS_NOTE], shown),
             Section("Full-text search: figures", figures=pngs)],
            [Section("Full-text search: every throughput point", tables=[(CAPTIONS["throughput"],
                                                                        search_flags(tables["throughput"]))],
                     collapsed=True)])


HOW_TO_READ = (
    "Ranked 2-term AND, top 10 (Postgres `ts_rank` over a GIN index; Elasticsearch and OpenSearch BM25, "
    "`operator: and`, 1 shard, force-merged), every query checked against the exact answer first. qps: closed "
    "loop, median over repetitions (min–max); `@n` = at n clients; ᶜ = client-bound (the Python harness, not "
    "the server, ran out of CPU: a floor for the server). The engines stop counting at `track_total_hits` "
    "(10,000) and skip non-competitive documents; Postgres ranks every match.")


def readme_lines(tables: dict[str, pd.DataFrame], links: str) -> list[str]:
    """How to read it, correctness, load and index, the throughput headline, the crossover,
    latency at matched rates and ranking agreement — each from its table."""
    lines = [f"{HOW_TO_READ} {links}", ""]
    if not tables["correctness"].empty:
        checked = tables["correctness"]
        lines += ["Correctness, before anything was timed: " + "; ".join(
            f"{r.variant} {r['disagreed']} of {r['queries checked']} queries disagreed" for _, r in checked.iterrows())
            + ".", ""]
    if not tables["load"].empty:
        lines += ["Load and index (median of the loads):", "", load_summary(tables["load"]).to_markdown(index=False), ""]
    head = headline_table(tables)
    if not head.empty:
        lines += [f"Throughput, closed loop, best of the measured client counts ({_client_counts(tables)}):", "",
                  head.to_markdown(index=False), ""]
    crossover = crossover_summary(tables.get("crossover", pd.DataFrame()))
    if not crossover.empty:
        clients = int(tables["crossover"].clients.iloc[0])
        lines += [f"The crossover (closed loop, {clients} clients; qps, and service-time p99 in ms — p95 where marked "
                  "`p95`, the bucket's window holding fewer than 100 queries):", "",
                  crossover.to_markdown(index=False), ""]
    latency = latency_summary(tables.get("latency", pd.DataFrame()))
    if not latency.empty:
        lines += ["Latency at matched rates (open loop, p99 ms from the intended start; the same offered rate for "
                  "every system; short sweep windows whose p99 holds each load worker's schedule lag — one slow "
                  "query delays the next on its worker — so it can exceed what the capacity's 30-s windows "
                  "held):", "", latency.to_markdown(index=False), ""]
    ranking = ranking_summary(tables.get("ranking", pd.DataFrame()))
    if ranking:
        lines += [ranking, ""]
    lines += writes_lines(tables.get("writes", pd.DataFrame()))
    return lines + extension_lines(tables.get("extensions", pd.DataFrame()))


def load_summary(load: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "system": load.system, "docs/s (bulk + build)": load["docs/s, bulk + build"].map("{:,.0f}".format),
        "bulk load s": load["bulk load s"].map("{:.1f}".format),
        "index build s": load["index build s"].map("{:.1f}".format),
        "load + build s (min–max)": load["load + build, min–max s"],
        "index MiB": load["index MiB"].map("{:.1f}".format),
        "all on disk MiB": load["table + index MiB (all on disk)"].map("{:.1f}".format),
        "server memory MiB (PSS)": load["server PSS MiB"].map("{:,.0f}".format),
        "JVM heap": load["JVM heap"].fillna("—")})


def crossover_summary(crossover: pd.DataFrame) -> pd.DataFrame:
    """Per bucket (its median match count): each variant's qps (p99 ms)."""
    if crossover.empty:
        return pd.DataFrame()
    cell = crossover.apply(lambda r: f"{r.qps:,.0f} ({_tail(r)})", axis=1)
    table = crossover.assign(cell=cell).pivot_table(index=["stream", "median_matches"], columns="variant",
                                                     values="cell", aggfunc="first", sort=False)
    table = table.reset_index().sort_values("median_matches")
    table.insert(1, "median matches", table.pop("median_matches").map("{:,.0f}".format))
    return table.rename(columns={"stream": "match-set bucket"}).fillna("—")


def _tail(row) -> str:
    if pd.notna(row.p99_ms):
        return f"{row.p99_ms:.1f}"
    return f"p95 {row.p95_ms:.1f}" if pd.notna(row.get("p95_ms")) else "—"


def number(fmt: str):
    """A formatter for ``Series.map``: ``fmt`` of the value, "—" where there is none."""
    return lambda value: "—" if value is None or pd.isna(value) else fmt.format(value)


def latency_summary(latency: pd.DataFrame) -> pd.DataFrame:
    """Per offered rate: each variant's p99 (× when a repetition fell short of the rate)."""
    if latency.empty:
        return pd.DataFrame()
    cell = latency.apply(lambda r: f"{r.latency_p99_ms:.1f}" + ("" if r.sustained else " (not sustained)"), axis=1)
    table = latency.assign(cell=cell, rate=latency.apply(
        lambda r: f"{r.offered_per_s:,.0f}/s ({r['fraction of slower peak']:.0%} of the slower peak, {r.stream})",
        axis=1)).pivot_table(index="rate", columns="variant", values="cell", aggfunc="first", sort=False)
    return table.reset_index().rename(columns={"rate": "offered rate"}).fillna("—")


def ranking_summary(ranking: pd.DataFrame) -> str:
    """One line: each ranked system's mean top-10 overlap with the exact BM25, overall and on the
    frequent class."""
    if ranking.empty:
        return ""
    rows = ranking[ranking.compared.str.endswith("vs exact BM25") & ~ranking.compared.str.contains("unranked")]
    parts = []
    for compared, group in rows.groupby("compared", sort=False):
        overall = group[group.group == "all"]["mean overlap@10"]
        frequent = group[group.group == "frequent"]["mean overlap@10"]
        parts.append(f"{compared.removesuffix(' vs exact BM25')} {overall.iloc[0]:.2f}"
                     + (f" (frequent class {frequent.iloc[0]:.2f})" if len(frequent) else ""))
    return ("Ranking: mean overlap of the top 10 with an exact BM25 (k1 = 1.2, b = 0.75), all queries: "
            + "; ".join(parts) + ".")


def headline_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per variant: peak qps @clients per stream, and 1-client qps in the mixed stream."""
    peak = tables.get("peak", pd.DataFrame())
    if peak.empty:
        return pd.DataFrame()
    head = peak.pivot(index="variant", columns="stream", values="peak qps_text")
    head.columns = [f"{stream}: peak qps @clients" for stream in head.columns]
    order = [c for s in ("frequent", "medium", "rare", "mixed") for c in head.columns if c.startswith(f"{s}:")]
    return head[order].reset_index().fillna("—")


# --- the seed's ratios -------------------------------------------------------------------------------
def seed_comparison(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The seed's Postgres-GIN / Elasticsearch qps and p99 ratios at 32 clients beside ours."""
    throughput = tables.get("throughput", pd.DataFrame())
    capacity = tables.get("capacity")
    rows = []
    for metric, seed, unit in (("qps", SEED_QPS, "qps"), ("p99_ms", SEED_P99, "ms p99")):
        a, b = (_seed_side(capacity, throughput, v) for v in ("pg_gin ranked", "elasticsearch"))
        ratio, judged = _judge(metric, seed, a, b)
        rows.append({"source": SEED_SOURCE, "figure": f"{SEED_FIGURE} ({'throughput' if metric == 'qps' else 'p99'})",
                     "durability class (ours, both sides)": "not applicable (read-only)",
                     "A / B": "Postgres GIN (ts_rank) / Elasticsearch", "seed durability": "not applicable",
                     "seed A": f"{seed[0]:g} {unit}", "seed B": f"{seed[1]:g} {unit}",
                     "seed ratio A/B": f"{seed[0] / seed[1]:.2f}×", "ours A": _ours(a, metric, unit),
                     "ours B": _ours(b, metric, unit), "our ratio A/B": None if ratio is None else round(ratio, 2),
                     "verdict": judged})
    return pd.DataFrame(rows)


def _side(table: pd.DataFrame, variant: str) -> pd.Series | None:
    if table.empty:
        return None
    rows = table[(table.variant == variant) & (table.stream == "mixed")]
    if rows.empty:
        return None
    at = rows[rows.clients == SEED_CLIENTS]
    return (at if len(at) else rows[rows.clients == rows.clients.max()]).iloc[0]


def _seed_side(capacity: pd.DataFrame | None, throughput: pd.DataFrame, variant: str) -> pd.Series | None:
    """The capacity ceiling at 32 clients where there is one, else the sweep's point."""
    ceiling = _ceiling_side(capacity, variant)
    return ceiling if ceiling is not None else _side(throughput, variant)


def _ceiling_side(capacity: pd.DataFrame | None, variant: str) -> pd.Series | None:
    """The capacity experiment's ceiling at the seed's 32 clients on the mixed stream (steady
    windows, the system's own load tool), in the throughput table's shape; None without one."""
    if capacity is None or capacity.empty or "ceiling_by_clients" not in capacity:
        return None
    rows = capacity[(capacity.variant == variant) & (capacity.get("stream", "mixed") == "mixed")]
    by_clients = rows.ceiling_by_clients.iloc[0] if len(rows) else None  # NaN: no ceiling ran to the end
    at = [c for c in (by_clients if isinstance(by_clients, list) else []) if c["clients"] == SEED_CLIENTS]
    if not at or at[0]["p99_ms"] is None:
        return None
    row = rows.iloc[0]
    tool = row.get("ceiling_by") if isinstance(row.get("ceiling_by"), str) else "the harness"
    return pd.Series({"variant": variant, "clients": SEED_CLIENTS, "qps": at[0]["per_s"], "p99_ms": at[0]["p99_ms"],
                      "runs": at[0]["runs"], "client_bound": at[0]["limit"] == LOAD,
                      "via": f"capacity ceiling, {tool}, {_window(row)}"})


def _window(row: pd.Series) -> str:
    seconds = row.get("ceiling_s")
    return "steady windows" if seconds is None or pd.isna(seconds) else f"{float(seconds):g}-s windows"


def _judge(metric: str, seed: tuple[float, float], a, b) -> tuple[float | None, str]:
    if a is None or b is None:
        return None, "not measured here"
    if a.clients != SEED_CLIENTS or b.clients != SEED_CLIENTS:
        return None, f"not comparable: no 32-client point here (ours at {int(a.clients)} clients)"
    ratio = a[metric] / b[metric] if b[metric] else None
    low = high = seed[0] / seed[1]
    bound_a, bound_b = flag_set(a.client_bound), flag_set(b.client_bound)
    floors = [name for name, bound in (("A", bound_a), ("B", bound_b)) if bound]
    # client-bound: that side's qps is a floor (the true A/B can only be higher for A, lower for B)
    # and its p99 holds the harness's own queueing (the true A/B can only be lower for A, higher for B)
    could_move = (floor_could_move_it(ratio, low, high, bound_a, bound_b) if metric == "qps"
                  else floor_could_move_it(ratio, low, high, bound_b, bound_a)) if ratio is not None else False
    if could_move:
        return ratio, f"inconclusive: ours {' and '.join(floors)} client-bound, the true ratio may reach the seed's"
    return ratio, verdict(ratio, low, high) + (f" (ours {' and '.join(floors)} client-bound)" if floors else "")


def _ours(side, metric: str, unit: str) -> str:
    if side is None:
        return "no usable point (not run, or wrong answers)"
    value = f"{side[metric]:,.0f}" if metric == "qps" else f"{side[metric]:.2f}"
    via = side.get("via")
    notes = [f"{int(side.clients)} clients, mixed stream, median of {int(side.runs)}"
             + (f" ({via})" if isinstance(via, str) else "")]
    notes += ["client-bound"] if flag_set(side.client_bound) else []
    return f"{value} {unit} — {side.variant} ({'; '.join(notes)})"


def _client_counts(tables: dict[str, pd.DataFrame]) -> str:
    """"1, 8, 16": the client counts the throughput sweep measured (a peak is the best of these)."""
    sweep = tables.get("throughput", pd.DataFrame())
    if sweep.empty or "clients" not in sweep:
        return "not recorded"
    return ", ".join(str(int(c)) for c in sorted(sweep["clients"].dropna().unique()))
