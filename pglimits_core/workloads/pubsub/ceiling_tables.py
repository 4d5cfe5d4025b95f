"""The pub/sub ``ceiling`` table: each system's own C tool publishing, beside the harness's
flat-out rate at the same publishers and fan-out.

pgbench's publishes/s are measured (logged transactions in the window × batch); redis-benchmark's
are its requests over its run (closed loop only: each client sends its next PUBLISH when the
last reply is in). Deliveries/s = publishes/s × listeners × the share of published messages the
listeners received; the server's CPU per publish and per delivery is the run's median server CPU
(its own processes) over those rates. With 0 listeners nothing is delivered: that row is the
publish ceiling with nobody listening, a different number from a fan-out.
"""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.flags import any_verdict
from pglimits_core.analysis.runs import measured

CAPTION = ("C-tool ceiling: pgbench publishing with the harness's pg_notify statement (one transaction per publish), "
           "redis-benchmark PUBLISH (closed loop only: the next request when the reply is in), payloads of the "
           "harness's size and shape; listeners = the study's own subscribers attached for the run (0: nobody "
           "listening — the publish ceiling, not a fan-out); harness = the fan-out study's flat-out published/s at "
           "the same publishers and subscribers; received/published counts every listener")
POINT = ["variant", "publishers", "listeners"]


def ceiling_table(frame: pd.DataFrame, fanout: pd.DataFrame) -> pd.DataFrame:
    """One row per variant × publishers × listeners (medians over the runs); empty without ceiling runs."""
    if frame.empty or "experiment" not in frame:
        return pd.DataFrame()
    rows = measured(frame)
    rows = rows[rows.experiment == "ceiling"]
    if rows.empty:
        return pd.DataFrame()
    runs = pd.DataFrame([tool_run_row(run) for _, run in rows.groupby("run_id")])
    table = pd.DataFrame([_point(point) for _, point in runs.groupby(POINT, sort=True)])
    harness = _harness_rates(fanout)
    table["harness_published_per_s"] = [harness.get(key) for key in zip(*(table[c] for c in POINT), strict=True)]
    table["harness_over_tool"] = pd.to_numeric(table.harness_published_per_s) / table.tool_published_per_s
    return table


def tool_run_row(run: pd.DataFrame) -> dict:
    """One tool run: publishes/s, deliveries/s, the listeners' counts, the server's cost."""
    measure = run[run.phase == "measure"]
    first = (measure if len(measure) else run).iloc[0]
    publish = float(first.items_per_s if pd.notna(first.get("items_per_s")) else first.ops_per_s)
    listeners, expected = int(first.listeners or 0), first.get("expected") or 0
    share = min(1.0, (first.get("received") or 0) / expected) if expected else 0.0
    deliveries = publish * listeners * share
    server = first.server_cpu_pct if pd.notna(first.server_cpu_pct) else None
    outcome = first.outcome if isinstance(first.outcome, dict) else {}
    return {**{c: first[c] for c in (*POINT, "system", "batch", "fsync_median_us", "client_bound")},
            "tool": first.get("tool"), "tool_version": first.get("tool_version"),
            "publish": publish, "achieved_published_per_s": publish, "deliveries": deliveries,
            "us_per_publish": None if server is None or not publish else server / 100 * 1e6 / publish,
            "us_per_delivery": None if server is None or not deliveries else server / 100 * 1e6 / deliveries,
            "published": outcome.get("published", 0), "expected": expected, "received": first.get("received") or 0,
            "lost": outcome.get("lost", 0), "lost_where": _lost_where(outcome)}


def _lost_where(outcome: dict) -> str:
    parts = []
    for listener in outcome.get("per_listener", []):
        gaps = listener.get("lost_ranges") or {}
        if listener.get("lost"):
            ranges = "; ".join(f"{p} {', '.join(f'{a}–{b}' for a, b in g)}" for p, g in gaps.items())
            parts.append(f"{listener['subscriber']}: {listener['lost']}" + (f" ({ranges})" if ranges else "")
                         + f", reconnects {listener.get('reconnects')}")
    return " | ".join(parts)


def _point(runs: pd.DataFrame) -> dict:
    first = runs.iloc[0]
    publish = runs.publish
    spread = f"{publish.median():.0f}" if len(runs) == 1 else \
        f"{publish.median():.0f} ({publish.min():.0f}–{publish.max():.0f})"
    return {**{c: first[c] for c in (*POINT, "tool", "tool_version")}, "loop": "closed", "runs": len(runs),
            "tool_published_per_s": float(publish.median()), "tool_published_per_s_range": spread,
            "deliveries_per_s": float(runs.deliveries.median()),
            "server_cpu_us_per_publish": _median(runs.us_per_publish),
            "server_cpu_us_per_delivery": _median(runs.us_per_delivery),
            "client_bound": any_verdict(runs.client_bound),
            "received/published": f"{int(runs.received.sum())}/{int(runs.expected.sum())}",
            "lost": int(runs.lost.sum()), "lost_where": " | ".join(w for w in runs.lost_where if w)}


def _median(values: pd.Series) -> float | None:
    """The median of the runs that have the figure (none at 0 listeners: nothing delivered)."""
    known = pd.to_numeric(values, errors="coerce").dropna()
    return float(known.median()) if len(known) else None


def _harness_rates(fanout: pd.DataFrame) -> dict[tuple, float]:
    """The fan-out table's flat-out published/s per (variant, publishers, subscribers)."""
    if fanout is None or fanout.empty:
        return {}
    flat = fanout[fanout.rate == "flat out"]
    return {(r.variant, r.publishers, r.subscribers): float(r.published_per_s) for r in flat.itertuples()}
