"""The pub/sub study's tables: fan-out, commit serialization, idle listeners, the
stuck subscriber and the largest payload — from run records only (``params.outcome`` holds each
point's accounting and delivery latency, the summary the publishers' and writers' own numbers).

Every table copes with an empty frame (a notebook opened before any results exist).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pglimits_core.analysis.runs import (
    box_saturated,
    busy_neighbour,
    entry_rows,
    measured,
    runs_limit,
    trusted,
)
from pglimits_core.workloads.pubsub.failures import COMMIT_MODES
from pglimits_core.workloads.pubsub.head_to_head import head_to_head_table
from pglimits_core.workloads.pubsub.ledger import lost_ranges_text
from pglimits_core.workloads.pubsub.server_cost import cpu_range_us, per_delivery_us
from pglimits_core.workloads.pubsub.terms import MIXED, recorded_settings

GROUP = ["variant", "subscribers", "publishers", "loop", "rate"]
#: a delivery p99 is "lag-dominated" when the publishers' own schedule lag (actual − intended
#: send) makes up at least this share of it: the tail was made in the publisher, not in delivery
LAG_DOMINATED = 0.5


def outcome_columns(manifest: dict[str, Any]) -> dict[str, Any]:
    """The point's accounting flattened (delivery latency in ms), plus the outcome itself."""
    outcome = manifest.get("params", {}).get("outcome") or {}
    delivery = outcome.get("delivery") or {}
    others = outcome.get("delivery_others") or {}
    watch = outcome.get("server_watch") or {}
    return {**{k: outcome.get(k) for k in ("published", "published_in_window", "after_run", "expected", "delivered",
                                           "lost", "not_received_by_cutoff", "duplicates", "reordered",
                                           "unexpected", "before_subscribe", "delivered_ratio", "published_per_s",
                                           "deliveries_per_s", "disconnects")},
            **{f"delivery_{k}": delivery.get(f"{k}_ms") for k in ("p50", "p99", "p999", "max")},
            "delivery_count": delivery.get("count"), "others_p99": others.get("p99_ms"),
            "max_queue_usage": watch.get("max_queue_usage"), "max_omem_bytes": watch.get("max_omem_bytes"),
            "server_rss_mib": watch.get("max_server_rss_mib"),
            "server_rss_largest_mib": watch.get("max_server_rss_largest_mib"),
            "listeners": outcome.get("listeners"), "received": outcome.get("received"),
            # the host's fsync-of-8 kB median when the study began: one WAL flush, the bound of
            # commits that flush one at a time
            "fsync_median_us": ((manifest.get("host") or {}).get("fsync_8k") or {}).get("median_us"),
            # what a publish waited for on disk (synchronous_commit, fsync; appendonly, save)
            "server_persistence": recorded_settings(manifest),
            "outcome": outcome}


def pubsub_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per run × role of the measured window."""
    return entry_rows(records, run_columns=outcome_columns)


def _role(frame: pd.DataFrame, experiment: str, role: str) -> pd.DataFrame:
    if frame.empty or "experiment" not in frame or "role" not in frame:
        return pd.DataFrame()
    rows = measured(frame)
    return rows[(rows.experiment == experiment) & (rows.role == role)].copy()


def _spread(values: pd.Series, digits: int = 2) -> str:
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        return "—"
    if len(values) == 1:
        return f"{values.iloc[0]:.{digits}f}"
    return f"{values.median():.{digits}f} ({values.min():.{digits}f}–{values.max():.{digits}f})"


def _any(values: pd.Series) -> bool | None:
    known = [bool(v) for v in values if v is not None and not pd.isna(v)]
    return any(known) if known else None


#: a not-measured row's text columns (its figures stay blank)
NOT_MEASURED_TEXTS = {"published_per_s_range": "—", "deliveries_per_s_range": "—", "delivery_p99_range_ms": "—",
                      "server_persistence": "—"}


def fanout_table(frame: pd.DataFrame, experiment: str = "fanout") -> pd.DataFrame:
    """Per variant × fan-out × publishers × rate (open loop) or flat out: medians over
    repetitions with their range, delivered/expected summed over every run, the publishers'
    schedule lag beside the delivery p99 (a lag-dominated tail was made in the publisher), runs
    that failed (kept out of the medians, counted here), busy-neighbour runs, and whether any run
    was client-bound."""
    pubs = _role(frame, experiment, "publisher")
    if pubs.empty:
        return pd.DataFrame()
    pubs["rate"] = _rate_labels(pubs["rate"])
    pubs = with_achieved_rates(pubs)
    failed = failed_runs(frame, experiment)
    rows = []
    for key, group in pubs.groupby(GROUP, sort=True, dropna=False):
        row = dict(zip(GROUP, key, strict=True))
        kept = group[measured_something(group)]
        failed_count = failed.get((row["variant"], row["subscribers"], row["publishers"], row["rate"]), 0)
        if kept.empty:  # every run stalled: the point is named as not measured, never dropped
            rows.append({**row, **NOT_MEASURED_TEXTS, "runs": 0, "failed_runs": failed_count + len(group),
                         "sustained": False, "lag_dominated": False, "busy_neighbour_runs": 0,
                         "not_measured": f"every run ({len(group)}) measured nothing: its publishers sent nothing "
                                         "on time inside the window (stalled)"})
            continue
        rows.append({**row, **fanout_row(kept, failed_count + len(group) - len(kept))})
    return pd.DataFrame(rows)


def fanout_row(group: pd.DataFrame, failed_runs: int) -> dict[str, Any]:
    """One fan-out row's figures from the runs that measured something (``group``)."""
    lag_p99 = _median(group, "schedule_lag_p99_ms")
    delivery_p99 = group.delivery_p99.median()
    return {"runs": len(group), "failed_runs": failed_runs,
            "published_per_s": group.achieved_published_per_s.median(),
            "published_per_s_range": _spread(group.achieved_published_per_s, 0),
            "deliveries_per_s": group.achieved_deliveries_per_s.median(),
            "deliveries_per_s_range": _spread(group.achieved_deliveries_per_s, 0),
            "behind_at_end_pct": _median(group, "behind_pct"),
            "delivery_p50_ms": group.delivery_p50.median(), "delivery_p99_ms": delivery_p99,
            "delivery_p99_range_ms": _spread(group.delivery_p99),
            "delivery_p999_ms": group.delivery_p999.median(),
            "publisher_lag_p99_ms": lag_p99,
            "lag_dominated": lag_dominated(lag_p99, delivery_p99),
            "publish_service_p99_ms": _median(group, "service_time_p99_ms"),
            "delivered": int(group.delivered.sum()), "expected": int(group.expected.sum()),
            "delivered_ratio": group.delivered.sum() / group.expected.sum() if group.expected.sum() else None,
            "lost": int(group.lost.sum()), "not_received_by_cutoff": _sum(group, "not_received_by_cutoff"),
            "duplicates": int(group.duplicates.sum()),
            "reordered": int(group.reordered.sum()),
            "sustained": _all_sustained(group),
            "server_cpu_ms_per_1k": _per_1k(group, "server_cpu_pct"),
            **cpu_range_us(group),
            "client_cpu_ms_per_1k": _per_1k(group, "client_cpu_pct"),
            "server_persistence": _texts(group, "server_persistence"),
            "server_rss_largest_mib": pd.to_numeric(group.get("server_rss_largest_mib"), errors="coerce").max(),
            "busy_neighbour_runs": int(group.other_cpu_pct.map(busy_neighbour).sum())
            if "other_cpu_pct" in group else 0,
            "client_bound": _any(group.client_bound), "limit": runs_limit(group),
            "box_saturated": box_saturated(group)}


#: subscribers still receiving this share of the expected deliveries after the publishers
#: stopped were behind: the row describes a growing backlog, not a delivery rate
BEHIND_PCT = 1.0


def with_achieved_rates(pubs: pd.DataFrame) -> pd.DataFrame:
    """Publish and delivery rates as achieved: an open-loop publisher's own achieved rate in
    the window (messages meant for the window but sent late, in the drain, are not throughput),
    times the subscribers and the share delivered; closed loop, the window's counts. Plus the
    share of deliveries that arrived only after the run ended (a backlog)."""
    outcome_rate = pd.to_numeric(pubs.published_per_s, errors="coerce")
    achieved = pd.to_numeric(pubs.get("achieved_rate", pd.Series(index=pubs.index, dtype=float)), errors="coerce")
    batch = pd.to_numeric(pubs.get("batch", pd.Series(1, index=pubs.index)), errors="coerce").fillna(1)
    open_loop = pubs.loop.eq("open") & achieved.notna()
    published = outcome_rate.where(~open_loop, achieved * batch)
    ratio = pd.to_numeric(pubs.delivered_ratio, errors="coerce").fillna(0)
    deliveries = pd.to_numeric(pubs.deliveries_per_s, errors="coerce").where(
        ~open_loop, published * pd.to_numeric(pubs.subscribers, errors="coerce") * ratio)
    expected = pd.to_numeric(pubs.expected, errors="coerce").where(lambda e: e > 0)
    behind = 100.0 * pd.to_numeric(pubs.get("after_run", pd.Series(0, index=pubs.index)), errors="coerce") / expected
    return pubs.assign(achieved_published_per_s=published, achieved_deliveries_per_s=deliveries, behind_pct=behind)


def measured_something(runs: pd.DataFrame) -> pd.Series:
    """A run with no message meant for its window (all published in the warm-up), or whose
    open-loop publishers sent nothing on time in it (stalled), measured nothing: it is counted
    with the failed runs, never as a rate of 0."""
    kept = pd.Series(True, index=runs.index)
    if "published_in_window" in runs:
        kept &= pd.to_numeric(runs.published_in_window, errors="coerce").fillna(1) > 0
    if "achieved_rate" in runs and "loop" in runs:
        stalled = runs.loop.eq("open") & pd.to_numeric(runs.achieved_rate, errors="coerce").eq(0)
        kept &= ~stalled
    return kept


def _rate_labels(rates: pd.Series) -> pd.Series:
    return rates.astype(object).where(rates.notna(), "flat out")


def failed_runs(frame: pd.DataFrame, experiment: str) -> dict[tuple, int]:
    """Runs of ``experiment`` that did not complete (a worker lost, impossible CPU figures), per
    (variant, subscribers, publishers, rate): they are left out of the medians, never silently."""
    if frame.empty or "status" not in frame:
        return {}
    runs = frame[(frame.experiment == experiment) & (frame.status != "complete")].drop_duplicates("run_id")
    if runs.empty:
        return {}
    runs = runs.assign(rate=_rate_labels(runs["rate"]))
    return runs.groupby(["variant", "subscribers", "publishers", "rate"], dropna=False).size().to_dict()


def lag_dominated(lag_p99_ms: float | None, delivery_p99_ms: float | None) -> bool | None:
    if lag_p99_ms is None or delivery_p99_ms is None or pd.isna(lag_p99_ms) or pd.isna(delivery_p99_ms):
        return None  # closed loop: nothing scheduled
    return bool(delivery_p99_ms > 0 and lag_p99_ms >= LAG_DOMINATED * delivery_p99_ms)


def _median(group: pd.DataFrame, column: str) -> float | None:
    if column not in group:
        return None
    values = pd.to_numeric(group[column], errors="coerce").dropna()
    return float(values.median()) if len(values) else None


def _texts(group: pd.DataFrame, column: str) -> str | None:
    """The runs' distinct texts (one, unless the runs' servers were set up differently)."""
    values = sorted({str(v) for v in group[column] if v is not None and not pd.isna(v)}) if column in group else []
    return MIXED.join(values) or None


def _sum(group: pd.DataFrame, column: str) -> int | None:
    return int(pd.to_numeric(group[column], errors="coerce").fillna(0).sum()) if column in group else None


def _all_sustained(group: pd.DataFrame) -> bool | None:
    if "sustained" not in group or group.sustained.isna().all():
        return None  # closed loop: nothing offered
    return all(bool(v) for v in group.sustained if v is not None and not pd.isna(v))


def _per_1k(group: pd.DataFrame, column: str) -> float | None:
    """CPU ms per 1,000 deliveries (= µs per delivery): the run's median CPU (% of one core) over
    its deliveries/s (median over runs)."""
    per = per_delivery_us(trusted(group), column)  # a busy neighbour's seconds are no CPU figure
    return per.median() if per.notna().any() else None


def commit_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The writers' transactions/s and p99 per mode; notifications published beside them."""
    writers = _role(frame, "commit_serialization", "writer")
    if writers.empty:
        return pd.DataFrame()
    rows = []
    for (label, mode), group in writers.groupby(["variant", "mode"], sort=False):
        rows.append({"variant": label, "mode": mode, "writers": group.workers.iloc[0], "runs": len(group),
                     "writer_tps": group.ops_per_s.median(), "writer_tps_range": _spread(group.ops_per_s, 0),
                     "writer_p50_ms": group.service_time_p50_ms.median(),
                     "writer_p99_ms": group.service_time_p99_ms.median(),
                     "notifications": int(group.published.sum()), "lost": int(group.lost.sum()),
                     "client_bound": _any(group.client_bound), "box_saturated": box_saturated(group)})
    table = pd.DataFrame(rows)
    table["tps_vs_alone"] = _relative_to(table, "alone")
    # the matched control: the same transaction shape and round trips, without the NOTIFY
    table["tps_vs_txn_without_notify"] = _relative_to(table, "txn_without_notify")
    order = {mode: i for i, mode in enumerate(COMMIT_MODES)}
    return table.sort_values(["variant", "mode"], key=lambda c: c.map(order) if c.name == "mode" else c,
                             ignore_index=True)


def _relative_to(table: pd.DataFrame, mode: str) -> list[float | None]:
    base = table[table["mode"] == mode].set_index("variant").writer_tps
    return [row.writer_tps / base[row.variant] if row.variant in base and base[row.variant] else None
            for row in table.itertuples()]


def idle_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Flat-out publishing per idle-listener count, and what the listeners cost the server in
    memory: its PSS with them connected (before the load), and per listener against none."""
    pubs = _role(frame, "idle_listeners", "publisher")
    if pubs.empty:
        return pd.DataFrame()
    pubs["server_pss_mib"] = pubs["outcome"].map(lambda o: ((o or {}).get("server_memory") or {}).get("pss_mib"))
    pubs["server_pss_mib"] = pd.to_numeric(pubs["server_pss_mib"], errors="coerce")
    table = (pubs.groupby(["variant", "idle_listeners"], sort=True)
             .agg(runs=("run_id", "size"), published_per_s=("published_per_s", "median"),
                  published_per_s_range=("published_per_s", lambda v: _spread(v, 0)),
                  published_per_s_min=("published_per_s", "min"), published_per_s_max=("published_per_s", "max"),
                  deliveries_per_s=("deliveries_per_s", "median"),
                  # a window of a few messages a second holds too few for a p99 (it needs 100): the
                  # count, median and slowest say what it does hold
                  deliveries_per_run=("delivery_count", "median"), delivery_p50_ms=("delivery_p50", "median"),
                  delivery_max_ms=("delivery_max", "max"), delivery_p99_ms=("delivery_p99", "median"),
                  publish_service_p99_ms=("service_time_p99_ms", "median"), lost=("lost", "sum"),
                  server_pss_mib=("server_pss_mib", "median"), client_bound=("client_bound", _any))
             .reset_index())
    table.insert(table.columns.get_loc("server_pss_mib") + 1, "pss_per_listener_kib", per_listener_kib(table))
    return table


def per_listener_kib(table: pd.DataFrame) -> list[float | None]:
    """(PSS with n idle listeners − PSS with none) ÷ n, in KiB, per variant; None without both."""
    none = table[table["idle_listeners"] == 0].set_index("variant")["server_pss_mib"]
    values = []
    for row in table.itertuples():
        base = none.get(row.variant)
        known = row.idle_listeners > 0 and base is not None and not pd.isna(base) and not pd.isna(row.server_pss_mib)
        values.append(round((row.server_pss_mib - base) * 1024 / row.idle_listeners, 1) if known else None)
    return values


def stuck_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The stuck subscriber's losses, the others' losses and p99, what the server held."""
    pubs = _role(frame, "stuck_subscriber", "publisher")
    if pubs.empty:
        return pd.DataFrame()
    rows = []
    for _, row in pubs.iterrows():
        per = {s["subscriber"]: s["lost"] for s in row.outcome.get("per_subscriber", [])}
        errors = row.outcome.get("subscriber_errors") or {}
        achieved = row.get("achieved_rate")
        rows.append({"variant": row.variant, "stall_s": row.stall_s, "rate": row.rate,
                     "achieved_rate": achieved, "sustained": row.get("sustained"),
                     "publisher_lag_p99_ms": row.get("schedule_lag_p99_ms"),
                     "payload_bytes": row.payload_bytes, "subscribers": row.subscribers,
                     "stuck_lost": per.get("s0"), "others_lost": sum(v for k, v in per.items() if k != "s0"),
                     "others_p99_ms": row.others_p99,
                     "others_p99_lag_dominated": lag_dominated(row.get("schedule_lag_p99_ms"), row.others_p99),
                     "disconnects": row.disconnects,
                     "max_queue_usage": row.max_queue_usage,
                     "queue_full_in_s_extrapolated": queue_full_in_s((row.outcome.get("server_watch") or {}).get("samples", []))
                     if row.stall_s else None,
                     "max_omem_bytes": row.max_omem_bytes,
                     "subscriber_error": "; ".join(f"{k}: {v}" for k, v in errors.items()),
                     "lost_ranges": lost_ranges_text(row.outcome.get("per_subscriber", [])),
                     "limit": (row.outcome.get("limits") or {}).get("client-output-buffer-limit", "")})
    return pd.DataFrame(rows)


def queue_full_in_s(samples: list[dict[str, Any]]) -> float | None:
    """Postgres: seconds until the notification queue would be full at the growth measured while
    the subscriber was stuck (first sample to the highest), None when it did not grow."""
    usage = [(s["t_s"], s["queue_usage"]) for s in samples if s.get("queue_usage") is not None]
    if len(usage) < 2:
        return None
    peak = max(range(len(usage)), key=lambda i: usage[i][1])
    (t0, u0), (t1, u1) = usage[0], usage[peak]
    return (1.0 - u1) / ((u1 - u0) / (t1 - t0)) + t1 - t0 if u1 > u0 and t1 > t0 else None


def payload_table(frame: pd.DataFrame) -> pd.DataFrame:
    pubs = _role(frame, "payload_limit", "publisher")
    if pubs.empty:
        return pd.DataFrame()
    rows = []
    for _, row in pubs.iterrows():
        probes = row.outcome.get("payload_sizes", [])
        accepted = [p["bytes"] for p in probes if p["accepted"]]
        refused = [p for p in probes if not p["accepted"]]
        largest = max(accepted, default=None)
        rows.append({"variant": row.variant, "largest_accepted": largest,
                     "smallest_refused": refused[0]["bytes"] if refused else None,
                     "limit": payload_limit_text(largest, refused[0]["bytes"] if refused else None),
                     "error": refused[0]["error"] if refused else "",
                     "tried": ", ".join(str(p["bytes"]) for p in probes)})
    return pd.DataFrame(rows)


def payload_limit_text(largest: int | None, refused: int | None) -> str:
    """What the probes prove: a bracket when a size was refused, a lower bound when none was."""
    if refused is None:
        return "—" if largest is None else f"≥ {largest:,} (largest tried; none refused)"
    return f"< {refused:,}" if largest is None else f"{largest:,} ≤ limit < {refused:,}"


def all_tables(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    fanout = fanout_table(frame)
    return {"fanout": fanout, "fanout_head_to_head": head_to_head_table(fanout),
            "commit_serialization": commit_table(frame), "idle_listeners": idle_table(frame),
            "stuck_subscriber": stuck_table(frame), "payload_limit": payload_table(frame)}
