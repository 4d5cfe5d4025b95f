"""The interference study's tables, from run records only (``params.outcome`` holds each window's
evidence; the per-second rows stay in the record for anyone who wants more).

- ``inflation``: per side, tenant, mechanism and level, the p99 over the window (median over the
  repetitions, their min–max) against the side's own baseline (level 0: bystanders alone), the inflation
  in ms (each repetition's p99 minus the baseline median: median (min–max)) and the ratio, with
  the autovacuum cycles each window held; a window with fewer than ``min_cycles`` says so.
- ``alignment``: per mechanism, level and tenant, the repetitions pooled into one exact
  circular-shift permutation test of the per-second p99 inside the autovacuum and auto-ANALYZE
  spans vs outside (warm-up dropped), p = k/n, Benjamini–Hochberg across the rows (``aligned``).
- ``stalls``: held xmin and autovacuum off, before / during / after, and the recovery seconds.
- ``timeline``: the per-second series of the worst repetition of each mechanism and level (the
  Postgres side: the one with vacuum windows and dead tuples to draw).
- ``sides``: per tenant and churn level, p99 inflation on Postgres vs on the dedicated engines
  (OpenSearch, Qdrant, Redis) on the same box, and what that says: the tail removed by splitting
  the systems, moved (both inflate), or absent on both. Without records: each side's description.

Every table copes with an empty frame (a notebook opened before any results exist).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pglimits_core.workloads.interference import aligned, keeping_up, paired
from pglimits_core.workloads.interference.churn_capacity import (
    CAPACITY,
    capacity_row,
    capacity_table,
)
from pglimits_core.workloads.interference.evidence import JOB_TABLES
from pglimits_core.workloads.interference.mechanisms import is_act, order_column
from pglimits_core.workloads.interference.mitigations import mitigations_table, same_seconds_from
from pglimits_core.workloads.interference.plan import SIDES
from pglimits_core.workloads.interference.points import LOG_FILE, SUSTAINED_SHARE
from pglimits_core.workloads.interference.sides import durability_class
from pglimits_core.workloads.interference.stalls import run_stretches

TENANTS = ("fts", "vector", "oltp", "churn")


def run_row(record: dict[str, Any]) -> dict[str, Any]:
    manifest = record["manifest"]
    params = manifest.get("params", {})
    outcome = params.get("outcome") or {}
    vacuum = outcome.get("vacuum") or {}
    return {"run_id": manifest["run_id"], "status": manifest.get("status"), "error": manifest.get("error"),
            "side": params.get("side") or "postgres", "backlog": params.get("backlog", params.get("queue_depth")),
            "mechanism": params.get("mechanism"), "level": params.get("level"), "churn_rate": params.get("churn_rate"),
            "churn_base": (params.get("churn_base") or {}).get("source", "stated"),
            "repetition": params.get("repetition"), "window_s": params.get("window_s"),
            "min_cycles": params.get("min_cycles"), "cycles": vacuum.get("cycles"),
            "windows_source": vacuum.get("windows_source"), "jobs_per_s": (outcome.get("churn") or {}).get("jobs_per_s"),
            "server_cpu_pct": (manifest.get("cpu") or {}).get("server_cpu_pct_median"), "outcome": outcome,
            "load_cpu_pct": (manifest.get("cpu") or {}).get("client_cpu_pct_median"),
            "params": params, "client_bound": manifest.get("client_bound"),
            "durability": durability_class(params.get("side") or "postgres", manifest.get("servers") or {}),
            "path": record.get("path"), "log_entries": (entries := log_entries(record)),
            "removing_cycles": removing_cycles(entries, params),
            "churn_low_per_s": keeping_up.lowest_rate(record.get("path"), outcome, params),
            "load_cpus": len((manifest.get("placement") or {}).get("load_cpus") or []) or None}


def log_entries(record: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The run's parsed autovacuum log lines (``autovacuum-log.json``; None when not kept)."""
    path = Path(record["path"]) / LOG_FILE if record.get("path") else None
    if path is None or not path.exists():
        return None
    try:
        return list(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def removing_cycles(entries: list[dict[str, Any]] | None, params: dict[str, Any]) -> int | None:
    """Queue-table autovacuums after the warm-up that removed tuples (a vacuum under a held
    horizon that removed none is no cycle of the churn's); None without the log."""
    if entries is None:
        return None
    warmup = float(params.get("warmup_s") or 0.0)
    return sum(1 for e in entries if e.get("table") in JOB_TABLES and e.get("kind") == "vacuum"
               and (e.get("end_s") or 0) >= warmup and (e.get("tuples_removed") or 0) > 0)


def summary_entry(record: dict[str, Any], tenant: str) -> dict[str, Any]:
    """The tenant's ``load`` phase entry in summary.json ({} when missing)."""
    for entry in (record.get("summary") or {}).get("entries", []):
        if entry.get("role") == tenant and entry.get("phase", "load") == "load":
            return entry
    return {}


def summary_p99(record: dict[str, Any], tenant: str, kind: str) -> float | None:
    """A tenant's p99 (ms) of one latency kind from summary.json (schedule_lag, service_time)."""
    value = ((summary_entry(record, tenant).get("latencies") or {}).get(kind) or {}).get("p99_us")
    return None if value is None else round(value / 1000, 3)


def measured_s(record: dict[str, Any], tenant: str, params: dict[str, Any]) -> float | None:
    """The seconds the tenant's count covers: its load phase as measured (the warm-up is a phase
    of its own, not counted), else the window after the warm-up — the churn's always (its jobs
    are counted by completion inside [warm-up, window), whatever the bystanders' phase ran)."""
    duration = summary_entry(record, tenant).get("duration_s")
    if duration and tenant != "churn":
        return float(duration)
    window, warmup = params.get("window_s"), params.get("warmup_s") or 0.0
    return float(window) - float(warmup) if window else None


def interference_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per run × tenant (the tenant's p50/p99/max over the window and its alignment)."""
    rows = []
    for record in records:
        if (capacity := capacity_row(record)) is not None:
            rows.append(capacity)
            continue
        base = run_row(record)
        outcome = base["outcome"]
        params = record["manifest"].get("params", {})
        tenants = outcome.get("tenants") or {}
        if "churn" in tenants:  # one quantity: the churn's completed jobs over its measured seconds
            base["jobs_per_s"] = per_second(tenants["churn"].get("count"), measured_s(record, "churn", params))
        for tenant, stats in tenants.items():
            recorded = (outcome.get("alignment") or {}).get(tenant) or {}
            offered = params.get(OFFERED.get(tenant, "churn_rate"))
            rows.append({**base, "tenant": tenant, **{k: stats.get(k) for k in ("count", "p50_ms", "p99_ms", "max_ms")},
                         "offered_per_s": offered,
                         "achieved_per_s": per_second(stats.get("count"), measured_s(record, tenant, params)),
                         "service_p99_ms": summary_p99(record, tenant, "service_time"),
                         "lag_p99_ms": summary_p99(record, tenant, "schedule_lag"),
                         **{f"align_{k}": recorded.get(k) for k in ("inside_p99_ms", "outside_p99_ms", "observed_ms",
                                                                   "p_value", "reason")}})
    return pd.DataFrame(rows)


#: the record parameter holding each tenant's offered rate
OFFERED = {"fts": "fts_rate", "vector": "vector_rate", "oltp": "oltp_rate", "churn": "churn_rate"}


def per_second(count: Any, seconds: Any) -> float | None:
    return round(count / seconds, 2) if count is not None and seconds else None


def kept_up(rows: pd.DataFrame) -> bool | None:
    """Every window completed at least ``SUSTAINED_SHARE`` of the tenant's offered rate (None: no
    rate offered, e.g. the churn at level 0). A bystander that did not keep up measured its own
    queueing, not interference."""
    offered = pd.to_numeric(rows.get("offered_per_s"), errors="coerce")
    if offered is None or not (offered > 0).any():
        return None
    return bool((pd.to_numeric(rows.achieved_per_s, errors="coerce") >= SUSTAINED_SHARE * offered).all())


def _done(frame: pd.DataFrame) -> pd.DataFrame:
    """The complete windows (the churn's capacity run is not a window)."""
    if frame.empty or "tenant" not in frame:
        return pd.DataFrame()
    return frame[(frame.status == "complete") & (frame.mechanism != CAPACITY)]


def spread(values: pd.Series, digits: int = 2) -> str:
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        return "—"
    if len(values) == 1:
        return f"{values.iloc[0]:.{digits}f}"
    return f"{values.median():.{digits}f} ({values.min():.{digits}f}–{values.max():.{digits}f})"


def cycles_note(rows: pd.DataFrame) -> str:
    """What the windows' autovacuum count says about their length (the control has no dead
    tuples: no cycle is expected; an act's windows count only the vacuums that removed tuples)."""
    mechanism = rows.mechanism.iloc[0]
    if mechanism == "baseline":
        return "no churn"
    if mechanism == "control":
        return "no dead tuples: no cycle expected"
    cycles = pd.to_numeric(counted_cycles(rows), errors="coerce").dropna()
    need = pd.to_numeric(rows.min_cycles, errors="coerce").dropna()
    if cycles.empty or need.empty:
        return "cycles not measured"
    what = " that removed tuples" if removing_counted(rows) else ""
    short = int((cycles < need.iloc[0]).sum())
    return (f"{short} of {len(cycles)} windows < {int(need.iloc[0])} autovacuum cycles{what}" if short
            else f"ok (autovacuum cycles{what})" if what else "ok")


def removing_counted(rows: pd.DataFrame) -> bool:
    """An act's windows count the vacuums that removed tuples (when their log is kept)."""
    return bool(is_act(rows.mechanism.iloc[0]) and "removing_cycles" in rows
                and rows.removing_cycles.notna().all())


def counted_cycles(rows: pd.DataFrame) -> pd.Series:
    return rows.removing_cycles if removing_counted(rows) else rows.cycles


def queueing(rows: pd.DataFrame) -> bool | None:
    """The tenant waited for a worker at least as long as it was served (median schedule-lag p99
    ≥ median service-time p99): its p99 is mostly its own queue, so any extra load inflates it
    more than it would a tenant with headroom. None: not recorded."""
    lag = pd.to_numeric(rows.get("lag_p99_ms"), errors="coerce").dropna()
    service = pd.to_numeric(rows.get("service_p99_ms"), errors="coerce").dropna()
    return None if lag.empty or service.empty else bool(lag.median() >= service.median())


def unknown_bound(rows: pd.DataFrame) -> str:
    """Runs whose CPU verdict could not say whether the client bound them (kept, marked)."""
    unknown = int(rows.drop_duplicates("run_id").client_bound.isna().sum()) if "client_bound" in rows else 0
    return f"{unknown} of {rows.run_id.nunique()} runs: client-bound unknown" if unknown else "none"


def _by_repetition(group: pd.DataFrame) -> pd.DataFrame:
    return group.sort_values("repetition", kind="stable")


def _median_of(values: pd.Series) -> float | None:
    values = pd.to_numeric(values, errors="coerce")
    return round(float(values.median()), 3) if values.notna().any() else None


def one_statistic(group: pd.DataFrame, compared: pd.Series, base: pd.Series, base_window: pd.Series) -> dict[str, Any]:
    """``p99_ms`` / ``baseline_p99_ms`` are the window p99 on every row; an act row's compared
    statistic (the median per-second p99) goes in its own columns (blank on plain rows)."""
    act = group.compared_on.iloc[0] != paired.WINDOW_P99
    return {"p99_ms": spread(group.p99_ms), "baseline_p99_ms": _median_of(base_window if act else base),
            "median_second_p99_ms": spread(compared) if act else "—",
            "baseline_median_second_p99_ms": _median_of(base) if act else None}


def paired_columns(group: pd.DataFrame, base_window: pd.Series) -> dict[str, Any]:
    """Each repetition against its same-seed baseline (``paired``): the window p99s, the compared
    value and the baseline's (``one_statistic``), the paired ratios (median, min, max, each
    repetition; on the compared value) and the per-second paired differences."""
    group = _by_repetition(group)
    compared, base = (pd.to_numeric(group[c], errors="coerce") for c in ("compared_ms", "base_ms"))
    ratio = (compared / base).where(base > 0)
    known = ratio.dropna()
    return {**one_statistic(group, compared, base, base_window.reindex(group.index)),
            "compared_on": group.compared_on.iloc[0],
            "inflation_ms": spread(compared - base) if base.notna().any() else "—",
            "ratio": round(float(known.median()), 2) if len(known) else None,
            # rounded outward: the band test reads these, and 1.2543 rounded to 1.25 would sit inside ×1.25
            "ratio_min": math.floor(round(float(known.min()) * 100, 6)) / 100 if len(known) else None,
            "ratio_max": math.ceil(round(float(known.max()) * 100, 6)) / 100 if len(known) else None,
            "paired_ratios": paired.ratios(ratio),
            "per_second_diff_ms": spread(group.s_diff_ms),
            "seconds_higher": " · ".join(str(v) for v in group.s_higher if v) or "—",
            "during_vs_churn": paired.ratios(group.during_vs_churn)}


#: a repetition whose server CPU differs from the median of its group's (the same side, mechanism
#: and level: the same offered load) by more than this factor either way ran on a box in another
#: state (a cold engine, a noisy neighbour gone quiet): its p99 is not comparable with its siblings'
UNLIKE_CPU = 1.25


def unlike_windows(group: pd.DataFrame) -> str:
    """The repetitions of one group whose server CPU is out of line with their siblings', said as
    "baseline window of repetition 0 ran at 58 % server CPU against 36–38 % ..." (empty: none; fewer than 3 windows
    cannot single one out)."""
    cpu = pd.to_numeric(group.server_cpu_pct, errors="coerce")
    if cpu.notna().sum() < 3:
        return ""
    typical = float(cpu.median())
    said = []
    for index, value in cpu.dropna().items():
        if typical > 0 and not 1 / UNLIKE_CPU <= value / typical <= UNLIKE_CPU:
            siblings = cpu.drop(index).dropna()
            mechanism = group.mechanism.loc[index]
            said.append(f"{mechanism} window of repetition {group.repetition.loc[index]} ran at {value:.0f} % server "
                        f"CPU against {siblings.min():.0f}–{siblings.max():.0f} % for the same offered load")
    return "; ".join(said)


def baseline_windows(rows: pd.DataFrame) -> pd.Series:
    """Each row's same-seed baseline window p99 (NaN without a baseline)."""
    found = {(r.side, r.tenant, r.seed): r.p99_ms for r in rows[rows.mechanism == "baseline"].itertuples()}
    return pd.Series([found.get((r.side, r.tenant, r.seed), np.nan) for r in rows.itertuples()],
                     index=rows.index, dtype=float)


def inflation_table(frame: pd.DataFrame) -> pd.DataFrame:
    rows = paired.with_pairs(_done(frame))
    if rows.empty:
        return pd.DataFrame()
    base_window = baseline_windows(rows)
    out = []
    for (side, mechanism, level, tenant), group in rows.groupby(["side", "mechanism", "level", "tenant"], sort=False):
        out.append({"side": side, "mechanism": mechanism, "level": level, "churn_rate": group.churn_rate.iloc[0],
                    "churn_base": group.churn_base.iloc[0],
                    "backlog": group.backlog.iloc[0], "tenant": tenant, "runs": len(group), **paired_columns(group, base_window),
                    "p99_worst_ms": pd.to_numeric(group.p99_ms, errors="coerce").max(),
                    "service_p99_ms": spread(group.service_p99_ms), "lag_p99_ms": spread(group.lag_p99_ms),
                    "max_ms": spread(group.max_ms), "achieved_per_s": spread(group.achieved_per_s, 1),
                    "kept_up": kept_up(group), "jobs_per_s": spread(group.jobs_per_s, 1),
                    "churn_sustained": keeping_up.sustained(group), "churn_low_per_s": spread(group.churn_low_per_s, 1),
                    "server_cpu_pct": spread(group.server_cpu_pct, 0), "load_cpu_pct": spread(group.load_cpu_pct, 0),
                    "load_cpu_median": pd.to_numeric(group.load_cpu_pct, errors="coerce").median(),
                    "unlike_windows": unlike_windows(group),
                    "autovacuum_cycles": spread(counted_cycles(group), 0),
                    "cycles_note": cycles_note(group), "client_bound_unknown": unknown_bound(group),
                    "queueing": queueing(group), "durability": group.durability.iloc[0]})
    table = pd.DataFrame(out)
    return table.sort_values(["side", "mechanism", "level", "tenant"], key=_order, ignore_index=True)


def _order(column: pd.Series) -> pd.Series:
    if column.name == "mechanism":
        return order_column(column)
    if column.name == "tenant":
        return column.map({t: i for i, t in enumerate(TENANTS)}).fillna(9)
    if column.name == "side":
        return column.map({s: i for i, s in enumerate(SIDES)}).fillna(9)
    return column


def postgres_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The Postgres side's runs (vacuum windows, acts and dead tuples exist only there)."""
    rows = _done(frame)
    return rows if rows.empty else rows[rows.side == "postgres"]


def alignment_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Pooled over repetitions, BH across rows (see ``aligned``)."""
    return aligned.alignment_table(postgres_rows(frame))


def stalls_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Held xmin and autovacuum off: before / during / after each act (``stalls``)."""
    rows = _done(frame)
    if rows.empty:
        return pd.DataFrame()
    out = []
    for _, run in rows.drop_duplicates("run_id").iterrows():
        events = run.outcome.get("events") or {}
        for stretch in run_stretches(run, run.get("log_entries")):
            out.append({"mechanism": run.mechanism, "level": run.level, "repetition": run.repetition, **stretch,
                        "holder_gone": events.get("holder_gone"),
                        "autovacuum_restored": events.get("autovacuum_restored")})
    return pd.DataFrame(out)


def worst_runs(rows: pd.DataFrame) -> pd.DataFrame:
    """Per mechanism and level, the run whose worst bystander p99 is the highest."""
    bystanders = rows[rows.tenant.isin(["fts", "vector"])]
    worst = bystanders.groupby("run_id").p99_ms.max()
    runs = rows.drop_duplicates("run_id").set_index("run_id").assign(worst=worst)
    return runs.sort_values("worst", ascending=False).groupby(["mechanism", "level"], sort=False).head(1)


def act_span(outcome: dict[str, Any]) -> dict[str, Any]:
    events = outcome.get("events") or {}
    return {"act_start_s": events.get("act_start_s"), "act_end_s": events.get("act_end_s")}


def timeline_table(frame: pd.DataFrame) -> pd.DataFrame:
    rows = postgres_rows(frame)
    if rows.empty:
        return pd.DataFrame()
    out = []
    for _, run in worst_runs(rows).iterrows():
        series = run.outcome.get("series") or {}
        windows = (run.outcome.get("vacuum") or {}).get("windows") or []
        for i, second in enumerate(series.get("second", [])):
            out.append({"mechanism": run.mechanism, "level": run.level, "repetition": run.repetition,
                        "second": second, **{f"{t}_p99_ms": (series.get(f"{t}_p99_ms") or [None] * (i + 1))[i]
                                             for t in TENANTS},
                        **{name: (series.get(name) or [None] * (i + 1))[i]
                           for name in ("dead_tuples", "wal_mb_per_s", "checkpoints")},
                        "in_vacuum": any(start <= second + 1 and end > second for start, end in windows),
                        "vacuum_windows": windows, **act_span(run.outcome)})
    table = pd.DataFrame(out)
    return table.sort_values(["mechanism", "level", "second"], key=_order, ignore_index=True) if out else table


def sides_table(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per tenant and churn level, each side's p99 inflation against its own baseline."""
    from pglimits_core.workloads.interference.sides import split_table

    table = split_table(inflation_table(frame)) if frame is not None else pd.DataFrame()
    if table.empty:
        return pd.DataFrame([{"side": side, "status": status} for side, status in SIDES.items()])
    return table


def all_tables(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    inflation, stalls = inflation_table(frame), stalls_table(frame)
    runs = _done(frame).drop_duplicates("run_id") if not frame.empty else frame
    mitigations = mitigations_table(inflation, stalls, same_seconds_from(runs[runs.side == "postgres"]) if "side" in runs else None)
    return {"capacities": capacity_table(frame), "inflation": inflation, "alignment": alignment_table(frame),
            "stalls": stalls, "mitigations": mitigations, "timeline": timeline_table(frame),
            "sides": sides_table(frame)}
