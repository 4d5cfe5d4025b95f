"""Vector study tables from run records only: difficulty, build, the recall–QPS sweep, matched recall.

QPS is the median over the repetitions that measured a point (min–max beside it); recall is the
value the index gave at that ef over every query of the dataset (scored at the first client
count, once: in the first repetition; records of runs that scored every repetition give
``recall_spread``, > 0 meaning the index answered differently between repetitions).
The headline is QPS at *matched recall*, never at matched ef: the same ef buys different recall
in different engines.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pglimits_core.analysis.runs import (
    busy_neighbour,
    entry_rows,
    measured,
    run_limits,
    trusted,
)
from pglimits_core.analysis.verdict import combined_limit
from pglimits_core.experiments.writes_table import writes_columns, writes_table, writes_timeline
from pglimits_core.workloads.vectors.matched import (
    matched_table,
    per_run_cpu,
)

MIB = 2**20

# outcome fields flattened into the frame (nested dicts one level deep: lid -> lid_median)
_OUTCOME_SCALARS = ("rows", "recall_mean", "recall_worst5_mean", "recall_p5", "recall_min", "recall_queries",
                    "rows_min", "rows_mean", "short_answers", "filter_violations", "filter_kept", "load_s", "build_s", "index_bytes", "table_bytes", "server_rss_bytes", "server_pss_bytes", "wal_bytes",
                    "indexed_vectors", "segments", "build_spilled", "pgvector_version", "server_version", "vectorscale_version",
                    "tag_index_bytes", "plan_path", "queries_sampled",
                    "lid_k", "share_gap_below_epsilon", "client", "load_method")
_OUTCOME_NESTED = ("lid", "rc", "gap_l2", "gap_ip", "nn_distance", "kth_distance")

SWEEP_COLUMNS = ["variant", "ef", "clients", "qps", "qps_min", "qps_max", "runs", "recall_mean",
                 "recall_worst5_mean", "recall_p5", "recall_spread", "rows_min", "p50_ms", "p99_ms",
                 "server_cpu_ms_per_query", "server_cpu_ms_min", "server_cpu_ms_max", "client_cpu_ms_per_query", "box_cpu_pct", "cores", "unaccounted_cpu_runs",
                 "client_bound", "limit"]


def _outcome_columns(manifest: dict[str, Any]) -> dict[str, Any]:
    params = manifest.get("params", {})
    outcome = params.get("outcome") or {}
    columns = {key: outcome.get(key) for key in _OUTCOME_SCALARS if key in outcome}
    for key in _OUTCOME_NESTED:
        for stat, value in (outcome.get(key) or {}).items():
            columns[f"{key}_{stat}"] = value
    columns.update(writes_columns(manifest))
    settings = outcome.get("build_settings") or {}
    columns["parallel_maintenance_workers"] = settings.get("max_parallel_maintenance_workers")
    columns["maintenance_work_mem"] = settings.get("maintenance_work_mem")
    dataset = params.get("dataset") or {}
    for key in ("count", "dim", "latent_dim", "clusters", "spread", "queries"):
        columns[f"dataset_{key}"] = dataset.get(key)
    return columns


def vectors_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per run (per role of a sweep run), with the outcome's recall, build and
    difficulty facts as columns."""
    return entry_rows(records, _outcome_columns)


def _true(value: Any) -> bool:
    """A recorded flag that is set (None and NaN — not recorded — are not)."""
    return isinstance(value, bool | np.bool_) and bool(value)


def _of(frame: pd.DataFrame, experiment: str) -> pd.DataFrame:
    rows = measured(frame)
    return rows[rows.experiment == experiment] if len(rows) and "experiment" in rows else pd.DataFrame()


def difficulty_table(frame: pd.DataFrame) -> pd.DataFrame:
    rows = _of(frame, "difficulty")
    if rows.empty:
        return pd.DataFrame()
    row = rows.iloc[-1]
    shown = {"dataset": row.get("dataset_id"), "vectors": row.get("dataset_count"), "dim": row.get("dataset_dim"),
             "latent_dim": row.get("dataset_latent_dim"), "clusters": row.get("dataset_clusters"),
             "spread": row.get("dataset_spread"), "queries_sampled": row.get("queries_sampled")}
    lid_k = row.get("lid_k")
    for key, label in (("lid", f"LID (MLE, k={lid_k:.0f})" if pd.notna(lid_k) else "LID (MLE)"), ("rc", "relative contrast RC@10"),
                       ("gap_ip", "10th-11th gap (inner product)"), ("gap_l2", "10th-11th gap (L2)")):
        shown[f"{label} median"] = _significant(row.get(f"{key}_median"))
        shown[f"{label} p5–p95"] = _range(row.get(f"{key}_p5"), row.get(f"{key}_p95"))
    shown["share of queries with gap < epsilon"] = row.get("share_gap_below_epsilon")
    shown["recall epsilon"] = row.get("recall_epsilon")
    return pd.DataFrame([shown])


def _significant(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(f"{value:.4g}")


def _range(low: Any, high: Any) -> str | None:
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return None
    return f"{low:.4g}–{high:.4g}"


def build_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per engine: the plain build, and Qdrant's build with the filter attribute (payload +
    payload index) for the filtered search, apart."""
    rows = pd.concat([_of(frame, "build"), _of(frame, "build_tagged").assign(
        variant=lambda t: t.variant + " + filter payload index")]) if len(frame) else pd.DataFrame()
    if rows.empty:
        return pd.DataFrame()
    out = []
    for variant, group in rows.groupby("variant", sort=False):
        out.append({"variant": variant, "builds": len(group), "rows": _median(group, "rows"),
                    "load_s": _median(group, "load_s"), "build_s": _median(group, "build_s"),
                    "build_s_range": _range(group.build_s.min(), group.build_s.max()),
                    "index_mib": _median(group, "index_bytes", MIB), "table_mib": _median(group, "table_bytes", MIB),
                    "server_pss_mib": _median(group, "server_pss_bytes", MIB),
                    "server_rss_mib": _median(group, "server_rss_bytes", MIB),
                    "parallel_maintenance_workers": group.get("parallel_maintenance_workers", pd.Series([None])).iloc[-1],
                    "maintenance_work_mem": group.get("maintenance_work_mem", pd.Series([None])).iloc[-1],
                    "build_spilled": group.get("build_spilled", pd.Series([None])).iloc[-1],
                    "segments": group.get("segments", pd.Series([None])).iloc[-1], "versions": versions(group)})
    return pd.DataFrame(out)


def versions(group: pd.DataFrame) -> str | None:
    """"PostgreSQL 17.9, pgvector 0.8.2, pgvectorscale 0.9.0" from a build's record (what an
    older record holds of it; None for a system that records none)."""
    last = group.iloc[-1]
    named = (("server_version", "PostgreSQL"), ("pgvector_version", "pgvector"), ("vectorscale_version", "pgvectorscale"))
    found = [f"{name} {last.get(column)}" for column, name in named
             if column in group and last.get(column) is not None and not pd.isna(last.get(column))]
    return ", ".join(found) or None


def _median(group: pd.DataFrame, column: str, scale: float = 1.0) -> float | None:
    if column not in group:
        return None
    values = pd.to_numeric(group[column], errors="coerce").dropna()
    return float(values.median() / scale) if len(values) else None


def sweep_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (variant, ef, clients): median QPS (min–max over repetitions), recall at that ef,
    service-time p50/p99 (ms, median over repetitions), client-bound in any repetition."""
    rows = _of(frame, "sweep")
    if rows.empty:
        return pd.DataFrame(columns=SWEEP_COLUMNS)
    rows = rows.assign(ef=rows.ef.astype("float"))
    recall = _recall_by_ef(rows)
    out = []
    for (variant, ef, clients), group in rows.groupby(["variant", "ef", "clients"], sort=False, dropna=False):
        got = recall.get((variant, None if pd.isna(ef) else ef), {})
        out.append({"variant": variant, "ef": None if pd.isna(ef) else int(ef), "clients": int(clients),
                    "qps": group.ops_per_s.median(), "qps_min": group.ops_per_s.min(), "qps_max": group.ops_per_s.max(),
                    "runs": len(group), **got,
                    "p50_ms": _median(group, "service_time_p50_ms"), "p99_ms": _median(group, "service_time_p99_ms"),
                    **cpu_per_query(group), "unaccounted_cpu_runs": _unaccounted(group),
                    "client_bound": _client_bound(trusted(group)), "limit": _limit(group)})
    table = pd.DataFrame(out, columns=SWEEP_COLUMNS)
    table = table.assign(ef=table.ef.astype("Int64"))  # the exact scan has none
    return table.sort_values(["variant", "clients", "ef"], na_position="first").reset_index(drop=True)


def _limit(group: pd.DataFrame) -> str | None:
    """The limit of the figure the runs give together: a run whose CPU split is not trusted (a
    busy neighbour) still counts in the figure, so its unknown limit makes the figure's unknown."""
    known = trusted(group)
    return combined_limit([*run_limits(known), *([None] * (len(group) - len(known)))])


def _client_bound(runs: pd.DataFrame) -> bool | None:
    """Client-bound in any run; None when no run has a trustworthy CPU split."""
    return any(_true(value) for value in runs.client_bound) if len(runs) else None


def _unaccounted(runs: pd.DataFrame) -> int:
    return int(runs.other_cpu_pct.map(busy_neighbour).sum()) if "other_cpu_pct" in runs else 0


def cpu_per_query(runs: pd.DataFrame) -> dict[str, float | None]:
    """Server and client CPU per query (ms; each run's median CPU over its QPS, median over the
    runs) and the box's CPU the two took together (% of one core): on a box the client shares
    with the server, a heavier client takes CPU the server could have used."""
    # a run whose machine was busier than client + server explain (a neighbour, or server
    # processes too short-lived for the sampler to see) has no trustworthy CPU split: NaN here
    cpu = per_run_cpu(runs)
    server, client, box = cpu.server_cpu_ms.dropna(), cpu.client_cpu_ms.dropna(), cpu.box_cpu_pct.dropna()

    def of(values: pd.Series, how: str = "median") -> float | None:
        return float(getattr(values, how)()) if len(values) else None

    return {"server_cpu_ms_per_query": of(server), "server_cpu_ms_min": of(server, "min"),
            "server_cpu_ms_max": of(server, "max"), "client_cpu_ms_per_query": of(client), "box_cpu_pct": of(box),
            "cores": pd.to_numeric(trusted(runs).get("cores"), errors="coerce").max() if "cores" in runs else None}


def _recall_by_ef(rows: pd.DataFrame) -> dict[tuple[str, float | None], dict[str, Any]]:
    scored = rows.dropna(subset=["recall_mean"]) if "recall_mean" in rows else rows.iloc[0:0]
    found = {}
    for (variant, ef), group in scored.groupby(["variant", "ef"], dropna=False):
        found[(variant, None if pd.isna(ef) else ef)] = {
            "recall_mean": group.recall_mean.median(), "recall_worst5_mean": group.recall_worst5_mean.median(),
            "recall_p5": group.recall_p5.median(), "recall_spread": group.recall_mean.max() - group.recall_mean.min(),
            "rows_min": int(group.rows_min.min())}
    return found


FILTERED_COLUMNS = ["variant", "selectivity_pct", "ef", "clients", "qps", "qps_min", "qps_max", "runs",
                    "recall_mean", "recall_worst5_mean", "recall_queries", "rows_mean", "rows_min", "short_answers_pct",
                    "filter_violations", "plan", "p50_ms", "p99_ms", "client_bound"]
#: a filtered point recorded before plans were: pgvector then filtered on mod(id, 100) (no column)
PLAN_NOT_RECORDED = "not recorded (mod(id, 100) filter, no column)"


def filtered_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (engine, selectivity, ef): recall against the exact filtered top 10 (over the
    ``recall_queries`` queries scored), rows returned (mean, fewest, share of queries answered
    with fewer than 10), QPS."""
    rows = _of(frame, "filtered")
    if rows.empty:
        return pd.DataFrame(columns=FILTERED_COLUMNS)
    out = []
    for (variant, pct, ef), group in rows.groupby(["variant", "selectivity_pct", "ef"], sort=False):
        queries = group.recall_queries.max()
        out.append({"variant": variant, "selectivity_pct": int(pct), "ef": int(ef), "clients": int(group.clients.iloc[0]),
                    "qps": group.ops_per_s.median(), "qps_min": group.ops_per_s.min(), "qps_max": group.ops_per_s.max(),
                    "runs": len(group), "recall_mean": group.recall_mean.median(),
                    "recall_worst5_mean": group.recall_worst5_mean.median(), "recall_queries": queries,
                    "rows_mean": group.rows_mean.median(), "rows_min": int(group.rows_min.min()),
                    "short_answers_pct": 100 * group.short_answers.median() / queries if queries else None,
                    "filter_violations": int(group.filter_violations.max()), "plan": _plan(group),
                    "p50_ms": _median(group, "service_time_p50_ms"), "p99_ms": _median(group, "service_time_p99_ms"),
                    "client_bound": any(_true(value) for value in group.client_bound)})
    table = pd.DataFrame(out, columns=FILTERED_COLUMNS)
    return table.sort_values(["variant", "selectivity_pct", "ef"]).reset_index(drop=True)


def _plan(group: pd.DataFrame) -> str | None:
    """The path the point's recorded plan names (the last repetition's; they share settings)."""
    paths = group.plan_path.dropna() if "plan_path" in group else pd.Series(dtype=object)
    if len(paths):
        return str(paths.iloc[-1])
    return PLAN_NOT_RECORDED if str(group.system.iloc[-1]) == "pgvector" else None


LATENCY_COLUMNS = ["variant", "target_recall", "ef", "recall_mean", "workers", "offered_rate", "achieved_rate",
                   "sustained", "runs", "latency_p50_ms", "latency_p99_ms", "latency_p999_ms", "client_bound"]


def latency_table(frame: pd.DataFrame, sweep: pd.DataFrame) -> pd.DataFrame:
    """Open loop at one offered rate for every engine, each at its own smallest ef reaching the
    target recall: latency from the intended start (median over repetitions); ``sustained`` is
    false when any repetition achieved < 95 % of the offered rate (then it is no latency claim)."""
    rows = _of(frame, "latency")
    if rows.empty:
        return pd.DataFrame(columns=LATENCY_COLUMNS)
    out = []
    for (variant, ef), group in rows.groupby(["variant", "ef"], sort=False):
        scored = sweep[(sweep.variant == variant) & (sweep.ef == ef)].recall_mean if len(sweep) else pd.Series(dtype=float)
        out.append({"variant": variant, "target_recall": group.target_recall.iloc[0], "ef": int(ef),
                    "recall_mean": scored.iloc[0] if len(scored) else None, "workers": int(group.clients.iloc[0]),
                    "offered_rate": group.offered_rate.median(), "achieved_rate": group.achieved_rate.median(),
                    "sustained": all(_true(value) for value in group.sustained), "runs": len(group),
                    "latency_p50_ms": _median(group, "latency_p50_ms"), "latency_p99_ms": _median(group, "latency_p99_ms"),
                    "latency_p999_ms": _median(group, "latency_p999_ms"),
                    "client_bound": any(_true(value) for value in group.client_bound)})
    return pd.DataFrame(out, columns=LATENCY_COLUMNS)


def all_tables(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every table by key; an empty frame (no records yet) gives empty tables."""
    if frame is None or frame.empty:
        return {"difficulty": pd.DataFrame(), "build": pd.DataFrame(),
                "sweep": pd.DataFrame(columns=SWEEP_COLUMNS), "matched": pd.DataFrame(),
                "filtered": pd.DataFrame(columns=FILTERED_COLUMNS), "latency": pd.DataFrame(columns=LATENCY_COLUMNS)}
    from pglimits_core.workloads.vectors.capacity import capacity_table_of

    sweep = sweep_table(frame)
    tables = {"difficulty": difficulty_table(frame), "build": build_table(frame), "sweep": sweep,
              "matched": matched_table(sweep, _of(frame, "sweep")), "latency": latency_table(frame, sweep), "filtered": filtered_table(frame)}
    if not (capacity := capacity_table_of(frame)).empty:  # only where the capacity experiment was run
        tables["capacity"] = capacity
    if not (writes := writes_table(frame, "recall_mean")).empty:  # only where writes while querying ran
        tables["writes"], tables["writes_timeline"] = writes, writes_timeline(frame)
    return tables


def headline(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The README's rows: QPS at each matched recall per client count, both engines side by side,
    the ef values it was read between, the server's CPU µs per query and the verdict class."""
    matched = tables.get("matched", pd.DataFrame())
    if matched.empty:
        return pd.DataFrame()
    keys = ["target_recall", "clients"]
    shown = matched.assign(ef_text=[_ef_text(row) for _, row in matched.iterrows()],
                           server_us=pd.to_numeric(matched.get("server_cpu_us_per_query"), errors="coerce").round(0))
    both = None
    for column, prefix in (("qps_text", ""), ("ef_text", "ef "), ("server_us", "server µs/query ")):
        wide = shown.pivot_table(index=keys, columns="variant", values=column, aggfunc="first").add_prefix(prefix)
        both = wide if both is None else both.join(wide, how="left")
    both = both.reset_index()
    if "verdict" in shown:
        both = both.merge(shown.dropna(subset=["verdict"])[[*keys, "verdict"]], on=keys, how="left")
    both.columns.name = None
    return both.replace({np.nan: None})


def _ef_text(row: pd.Series) -> str | None:
    """"24–32" where the QPS was interpolated between two ef values, "10" where measured."""
    if pd.isna(row.get("ef")):
        return None
    low = row.get("ef_low")
    return f"{row.ef:.0f}" if low is None or pd.isna(low) else f"{low:.0f}–{row.ef:.0f}"
