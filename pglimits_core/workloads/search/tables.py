"""Search study tables: load and index, correctness, throughput per stream and client count, the
crossover by match-set size, latency at matched rates, ranking agreement. Computed from run
records only (``manifest.json`` / ``summary.json``)."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from pglimits_core.analysis.flags import any_verdict, flag_set
from pglimits_core.analysis.runs import busy_neighbour, entry_rows, measured, runs_limit
from pglimits_core.experiments.writes_table import writes_columns, writes_table, writes_timeline
from pglimits_core.workloads.search.capacity import capacity_table_of
from pglimits_core.workloads.search.extensions import extension_table
from pglimits_core.workloads.search.head_to_head import cpu_columns, verdict_columns
from pglimits_core.workloads.search.mechanism import mechanism_table
from pglimits_core.workloads.search.systems.registry import system_class

MIB = 2 ** 20
STREAM_ORDER = ("frequent", "medium", "rare", "mixed")
COLUMNS = ("run_id", "experiment", "variant", "system", "stream", "clients")
LOAD_COLUMNS = ("bulk_load_s", "index_build_s", "vacuum_analyze_s", "settle_s", "total_s", "documents",
                "docs_per_s_bulk", "docs_per_s_total", "index_bytes", "table_bytes", "total_bytes", "segments",
                "gin_pending_pages", "server_rss_bytes", "server_rss_max_bytes", "server_pss_bytes",
                "server_cpu_s", "client_cpu_s", "bulk_requests")


def search_frame(records: list[dict]) -> pd.DataFrame:
    """One row per run × role × measured phase (load and correctness runs: one row each), with
    the search knobs, the CPU another process took in the same seconds, and — for load and
    correctness runs — their outcome (the correctness row keeps its per-query answers in
    ``answers``, for the ranking agreement)."""
    frame = entry_rows(records, search_run_columns)
    return frame if not frame.empty else pd.DataFrame(columns=list(COLUMNS))


def search_run_columns(manifest: dict) -> dict:
    params = manifest.get("params", {})
    outcome = params.get("outcome") or {}
    run_s = sum(phase.get("duration_s", 0) for phase in (params.get("spec") or {}).get("phases", []))
    columns: dict[str, Any] = {
        "stream": params.get("stream"), "clients": params.get("clients"), "run_s": run_s,
        "heap": (next(iter(manifest.get("servers", {}).values()), {}).get("settings") or {}).get("heap"),
        "server_version": next(iter(manifest.get("servers", {}).values()), {}).get("version"),
    }
    experiment = params.get("experiment")
    if experiment == "load":
        columns.update({key: outcome.get(key) for key in LOAD_COLUMNS})
    elif experiment == "correctness":
        columns.update({"checked": outcome.get("checked"), "disagreed": outcome.get("disagreed"),
                        "total_relation_gte": outcome.get("total_relation_gte"),
                        "track_total_hits": outcome.get("track_total_hits"),
                        "examples": outcome.get("examples") or [], "by_group": outcome.get("by_group") or {},
                        "answers": outcome.get("queries") or []})
    elif experiment == "mechanism":
        columns["buckets"] = outcome.get("buckets") or []
    return {**columns, **writes_columns(manifest)}


# --- load -----------------------------------------------------------------------------------------
def load_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per system: median over the load repetitions (min–max of the total time)."""
    rows = measured(frame)
    rows = rows[rows.experiment == "load"] if "experiment" in rows else rows
    if rows.empty:
        return pd.DataFrame()
    out = []
    for variant, runs in rows.groupby("variant", sort=False):
        median = {key: _med(runs[key]) for key in LOAD_COLUMNS if key in runs}
        out.append({"system": variant, "loads": len(runs), "documents": median["documents"],
                    "bulk load s": median["bulk_load_s"], "index build s": median["index_build_s"],
                    "VACUUM ANALYZE s": median.get("vacuum_analyze_s"),
                    "settle s (checkpoint / flush)": median["settle_s"],
                    "load + build, min–max s": _spread(runs.bulk_load_s + runs.index_build_s, "{:.1f}"),
                    "docs/s, bulk only": median["docs_per_s_bulk"],
                    "docs/s, bulk + build": median["docs_per_s_total"],
                    "index MiB": _mib(median["index_bytes"]),
                    "table + index MiB (all on disk)": _mib(median["total_bytes"]),
                    "segments": median.get("segments"), "GIN pending pages": median.get("gin_pending_pages"),
                    "server PSS MiB": _mib(median.get("server_pss_bytes")),
                    "server RSS MiB (sum)": _mib(median.get("server_rss_bytes")),
                    "JVM heap": runs.heap.iloc[0] if system_class(runs.system.iloc[0]).jvm_heap else None,
                    "server CPU s": median["server_cpu_s"], "client CPU s": median["client_cpu_s"]})
    return pd.DataFrame(out)


def _med(values: pd.Series | None) -> float | None:
    """The median of the values there are (None when there is none: a percentile left blank for
    too few samples, a CPU figure not sampled)."""
    values = pd.to_numeric(values, errors="coerce").dropna() if values is not None else pd.Series(dtype=float)
    return float(values.median()) if len(values) else None


def _max(values: pd.Series) -> float | None:
    values = pd.to_numeric(values, errors="coerce").dropna()
    return float(values.max()) if len(values) else None


def _mib(value: float | None) -> float | None:
    return None if value is None or pd.isna(value) else value / MIB


def _spread(values: pd.Series, number: str) -> str:
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        return "—"
    low, high = values.min(), values.max()
    return number.format(values.median()) if high == low else \
        f"{number.format(values.median())} ({number.format(low)}–{number.format(high)})"


# --- correctness ----------------------------------------------------------------------------------
def correctness_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per variant: queries checked, how many disagreed with the exact answer (must be 0; a
    variant that disagrees is not measured), per group, and how often ``hits.total`` was only a
    lower bound (Lucene stops counting at ``track_total_hits``)."""
    rows = _correctness_rows(frame)
    if rows.empty:
        return pd.DataFrame()
    out = []
    for _, run in rows.iterrows():
        groups = run.by_group or {}
        out.append({"variant": run.variant, "queries checked": int(run.checked), "disagreed": int(run.disagreed),
                    "verdict": "measured" if run.disagreed == 0 else "NOT MEASURED: wrong answers",
                    "disagreed by group": "; ".join(f"{g} {v['disagreed']}/{v['checked']}" for g, v in groups.items()),
                    "hits.total a lower bound (queries)": None if pd.isna(run.total_relation_gte) else int(run.total_relation_gte),
                    "track_total_hits": None if pd.isna(run.track_total_hits) else int(run.track_total_hits),
                    "first problem": (run.examples[0]["query"] + ": " + run.examples[0]["problem"]) if run.examples else ""})
    return pd.DataFrame(out)


def _correctness_rows(frame: pd.DataFrame) -> pd.DataFrame:
    rows = measured(frame)
    if rows.empty or "experiment" not in rows:
        return pd.DataFrame()
    rows = rows[rows.experiment == "correctness"]
    # a rerun of the check (a resumed study) keeps its newest record per variant
    return rows.sort_values("run_id").drop_duplicates("variant", keep="last")


# --- throughput -----------------------------------------------------------------------------------
def _client_rows(frame: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """The load runs of ``experiment``. A run's CPU figures and client-bound verdict are its
    record's: blank when its measured window held no whole sampler second (the record says why,
    ``samplers.classify.window_verdict``), never shown as 0 %."""
    rows = measured(frame)
    if rows.empty or "experiment" not in rows:
        return pd.DataFrame()
    return rows[(rows.experiment == experiment) & (rows.role == "client")].copy()


def qps_table(frame: pd.DataFrame, experiment: str = "throughput") -> pd.DataFrame:
    """Per variant × stream × clients: median qps over the repetitions (min–max), the service
    time percentiles (median over repetitions of each run's own percentile), CPU per side, and
    the client-bound verdict (any repetition)."""
    rows = _client_rows(frame, experiment)
    if rows.empty:
        return pd.DataFrame()
    out = []
    for (variant, stream, clients), runs in rows.groupby(["variant", "stream", "clients"], sort=False):
        qps = runs.items_per_s
        client_us = 1e4 * runs.client_cpu_pct / runs.items_per_s  # % of one core -> CPU µs per query
        out.append({"variant": variant, "system": runs.system.iloc[0], "stream": stream, "clients": int(clients),
                    "median_matches": runs.median_matches.iloc[0], "queries": runs.queries.iloc[0],
                    "qps": _med(qps), "min_qps": qps.min(), "max_qps": qps.max(), "runs": len(runs),
                    "p50_ms": _med(runs.service_time_p50_ms), "p95_ms": _med(runs.get("service_time_p95_ms")),
                    "p99_ms": _med(runs.service_time_p99_ms),
                    "p99_min_ms": runs.service_time_p99_ms.min(), "p99_max_ms": runs.service_time_p99_ms.max(),
                    "p999_ms": _med(runs.get("service_time_p999_ms")),
                    "client_bound": any_verdict(runs.client_bound), "limit": runs_limit(runs),
                    "client_cpu_pct": _med(runs.client_cpu_pct), "server_cpu_pct": _med(runs.server_cpu_pct),
                    "client_cpu_us_per_query": _med(client_us),
                    **cpu_columns(runs),
                    "other_cpu_pct": _max(runs.other_cpu_pct), "busy_runs": int(runs.other_cpu_pct.map(busy_neighbour).sum()),
                    "errors": runs.errors.sum()})
    table = pd.DataFrame(out)
    table.insert(4, "qps_text", table.apply(qps_text, axis=1))
    return _ordered(table, ["stream", "clients", "variant"])


def qps_text(point) -> str:
    """"2,374 (2,289–2,442) ᶜ": the median, the spread of the runs behind it, ᶜ when any was
    client-bound."""
    if pd.isna(point.qps):
        return "—"
    spread = f" ({point.min_qps:,.0f}–{point.max_qps:,.0f})" if point.runs > 1 and point.max_qps > point.min_qps else ""
    return f"{point.qps:,.0f}{spread}" + (" ᶜ" if flag_set(point.client_bound) else "")


def _ordered(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    order = {name: i for i, name in enumerate(STREAM_ORDER)}
    if "stream" in keys:
        table = table.assign(_stream=table.stream.map(lambda s: order.get(s, len(order))))
        keys = ["_stream" if k == "stream" else k for k in keys]
    return table.sort_values(keys, kind="stable").drop(columns=["_stream"], errors="ignore").reset_index(drop=True)


def peak_table(throughput: pd.DataFrame) -> pd.DataFrame:
    """Per variant × stream: the best client count's median qps and its p99 there, and qps at
    1 client (latency-bound: one query at a time)."""
    if throughput.empty:
        return pd.DataFrame()
    groups = list(throughput.groupby(["variant", "stream"], sort=False))
    bests = verdict_columns(pd.DataFrame([rows.loc[rows.qps.idxmax()] for _, rows in groups]), ["stream"])
    out = []
    for ((variant, stream), rows), (_, best) in zip(groups, bests.iterrows(), strict=True):
        one = rows[rows.clients == rows.clients.min()].iloc[0]
        out.append({"variant": variant, "stream": stream, "median_matches": best.median_matches,
                    f"qps @{int(one.clients)}": one.qps_text, "peak qps": best.qps, "peak @clients": int(best.clients),
                    "peak qps_text": f"{best.qps_text} @{int(best.clients)}",
                    "p99 ms at peak": best.p99_ms, "client_bound at peak": best.client_bound,
                    "server CPU µs/query at peak": best.server_cpu_us_per_query,
                    "verdict vs pg_gin ranked": best.verdict_class, "ahead": best.verdict_ahead})
    return _ordered(pd.DataFrame(out), ["stream", "variant"])


def peak_qps(records: list[dict], stream: str, labels: list[str]) -> dict[str, float]:
    """Each of ``labels``' peak closed-loop qps in ``stream`` (best client count's median)."""
    table = qps_table(search_frame(records))
    if table.empty:
        return {}
    rows = table[(table.stream == stream) & table.variant.isin(labels)]
    return {variant: float(group.qps.max()) for variant, group in rows.groupby("variant")}


# --- latency at matched rates ------------------------------------------------------------------------
def latency_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per variant × stream × offered rate: latency from the intended start (open loop) and the
    service time, median over repetitions; ``sustained`` only when every repetition achieved 95 %
    of the offered rate."""
    rows = _client_rows(frame, "latency")
    if rows.empty:
        return pd.DataFrame()
    out = []
    for (variant, stream, fraction), runs in rows.groupby(["variant", "stream", "fraction"], sort=False):
        out.append({"variant": variant, "stream": stream, "fraction of slower peak": fraction,
                    "offered_per_s": _med(runs.offered_rate), "achieved_per_s": _med(runs.achieved_rate),
                    "sustained": bool(runs.sustained.astype(bool).all()), "runs": len(runs),
                    "latency_p50_ms": _med(runs.latency_p50_ms), "latency_p99_ms": _med(runs.latency_p99_ms),
                    "latency_p99_min_ms": runs.latency_p99_ms.min(), "latency_p99_max_ms": runs.latency_p99_ms.max(),
                    "latency_p999_ms": _med(runs.get("latency_p999_ms")),
                    "service_p99_ms": _med(runs.service_time_p99_ms),
                    "client_bound": any_verdict(runs.client_bound), "other_cpu_pct": _max(runs.other_cpu_pct),
                    "busy_runs": int(runs.other_cpu_pct.map(busy_neighbour).sum())})
    return _ordered(pd.DataFrame(out), ["stream", "fraction of slower peak", "variant"])


# --- ranking agreement -------------------------------------------------------------------------------
def ranking_table(frame: pd.DataFrame) -> pd.DataFrame:
    """How alike the top-10s are, per query group: each variant against the exact BM25 top-10
    (plain overlap and tie-aware), and each pair of ranked variants against each other. Overlap =
    shared documents / min(10, matches), averaged over the group's queries that match anything."""
    rows = _correctness_rows(frame)
    if rows.empty:
        return pd.DataFrame()
    answers = {run.variant: pd.DataFrame(run.answers) for _, run in rows.iterrows() if run.answers}
    out = []
    for variant, per_query in answers.items():
        for group, queries in _by_group(per_query):
            out.append({"compared": f"{variant} vs exact BM25", "group": group, "queries": len(queries),
                        "mean overlap@10": _mean(queries.bm25_overlap),
                        "mean overlap@10, ties counted": _mean(queries.bm25_tie_aware),
                        "queries in full agreement": int((queries.bm25_tie_aware >= 1 - 1e-9).sum())})
    ranked = [v for v in answers if "unranked" not in v]
    for a, b in combinations(ranked, 2):
        both = answers[a].merge(answers[b], on=["i", "group", "matches"], suffixes=("_a", "_b"))
        overlap = [len(set(x) & set(y)) / min(10, m) if m else np.nan
                   for x, y, m in zip(both.top_a, both.top_b, both.matches, strict=True)]
        both = both.assign(overlap=overlap)
        for group, queries in _by_group(both):
            out.append({"compared": f"{a} vs {b}", "group": group, "queries": len(queries),
                        "mean overlap@10": _mean(queries.overlap), "mean overlap@10, ties counted": None,
                        "queries in full agreement": int((queries.overlap >= 1 - 1e-9).sum())})
    return pd.DataFrame(out)


def _by_group(per_query: pd.DataFrame):
    """(group, its rows) for every group in study order, then ``all``; queries with no match
    (nothing to rank) are left out."""
    per_query = per_query[per_query.matches > 0]
    yield from per_query.groupby("group", sort=False)
    yield "all", per_query


def _mean(values: pd.Series) -> float | None:
    values = pd.to_numeric(values, errors="coerce").dropna()
    return float(values.mean()) if len(values) else None


def all_tables(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    throughput = qps_table(frame)
    tables = {"load": load_table(frame), "correctness": correctness_table(frame), "throughput": throughput,
            "peak": peak_table(throughput), "crossover": crossover_table(frame),
            "latency": latency_table(frame), "ranking": ranking_table(frame),
            "mechanism": mechanism_table(frame)}
    if not (capacity := capacity_table_of(frame)).empty:  # only where the capacity experiment was run
        tables["capacity"] = capacity
    if not (writes := writes_table(frame, "agreement_mean")).empty:  # only where writes while querying ran
        tables["writes"], tables["writes_timeline"] = writes, writes_timeline(frame)
    return {**tables, "extensions": extension_table(frame, tables)}


def crossover_table(frame: pd.DataFrame) -> pd.DataFrame:
    """``qps_table`` of the crossover with the verdict of Postgres GIN ranked against each engine
    in the same bucket at the same clients (``head_to_head``)."""
    table = qps_table(frame, "crossover")
    return table if table.empty else verdict_columns(table, ["stream", "clients"])
