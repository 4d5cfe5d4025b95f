"""The ``ceiling`` table: each system's own C tool on the queue's statements, beside the
harness's throughput at as many consumers.

pgbench's jobs/s are measured (logged transactions in the window × batch). redis-benchmark
measures each command alone; a job is LPUSH + LMOVE + LREM, so its per-job ceiling is derived,
1/Σ(1/rate_i) over the three (a job costs the sum of its commands' times), and the consume-only
ceiling (what the harness's burn-down does: LMOVE + LREM) likewise from two. Both tools are
closed loop: clients send the next request when the last returns.
"""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.flags import any_verdict
from pglimits_core.analysis.runs import measured
from pglimits_core.workloads.queue.ceiling_tools import per_job_rate
from pglimits_core.workloads.queue.durability_tables import ensure_class, sort_by_class

CAPTION = ("C-tool ceiling: the queue's statements through pgbench (measured) and its commands through "
           "redis-benchmark (per command; per job derived as 1/Σ(1/rate) of LPUSH, LMOVE, LREM, consume only "
           "of LMOVE, LREM); both closed loop; harness = the throughput burn-down at as many consumers")
JOB_COMMANDS, CONSUME_COMMANDS = ("LPUSH", "LMOVE", "LREM"), ("LMOVE", "LREM")


def ceiling_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per variant × clients (medians over the runs); empty without ceiling runs."""
    if frame.empty or "experiment" not in frame:
        return pd.DataFrame()
    rows = ensure_class(measured(frame))
    rows = rows[rows.experiment == "ceiling"]
    if rows.empty:
        return pd.DataFrame()
    runs = pd.DataFrame([tool_run_row(run) for _, run in rows.groupby("run_id")])
    table = pd.DataFrame([_point(point) for _, point in runs.groupby(["variant", "clients"])])
    harness = _harness_rates(frame)
    table["harness_consume_per_s"] = [harness.get((v, c)) for v, c in zip(table.variant, table.clients, strict=True)]
    table["harness_over_tool"] = table.harness_consume_per_s / table.tool_consume_per_s
    return sort_by_class(table, ["variant", "clients"])


def tool_run_row(run: pd.DataFrame) -> dict:
    """One tool run: its jobs/s (measured or derived), consume-only jobs/s and latencies."""
    first, rates = run.iloc[0], run.set_index("op").ops_per_s.to_dict()
    measure = run[run.phase == "measure"]
    if len(measure):  # pgbench: the measured window, items = transactions × batch
        jobs = consume = float(measure.items_per_s.iloc[0])
        how, p50, p99 = "measured", _first(measure, "service_time_p50_ms"), _first(measure, "service_time_p99_ms")
    else:  # redis-benchmark: one phase per command
        jobs = per_job_rate([rates.get(c) for c in JOB_COMMANDS])
        consume = per_job_rate([rates.get(c) for c in CONSUME_COMMANDS])
        how, p50, p99 = "derived 1/Σ(1/rate)", None, None
    return {"variant": first.variant, "durability_class": first.durability_class, "tool": first.get("tool"),
            "tool_version": first.get("tool_version"), "loop": "closed", "clients": first.clients,
            "jobs_per_s": jobs, "tool_consume_per_s": consume, "jobs_per_s_is": how, "p50_ms": p50, "p99_ms": p99,
            **{f"{c.lower()}_per_s": rates.get(c) for c in JOB_COMMANDS},
            "client_bound": first.client_bound, "client_cpu_pct": first.client_cpu_pct,
            "server_cpu_pct": first.server_cpu_pct}


def _point(runs: pd.DataFrame) -> dict:
    first = runs.iloc[0]
    medians = {c: runs[c].median() for c in ("jobs_per_s", "tool_consume_per_s", "p50_ms", "p99_ms",
                                            "lpush_per_s", "lmove_per_s", "lrem_per_s",
                                            "client_cpu_pct", "server_cpu_pct")}
    return {**first.to_dict(), **medians, "client_bound": any_verdict(runs.client_bound), "runs": len(runs)}


def _harness_rates(frame: pd.DataFrame) -> dict[tuple[str, int], float]:
    """The harness's median consumed jobs/s per (variant, consumers) of the throughput burn-down."""
    rows = measured(frame)
    rows = rows[(rows.experiment == "throughput") & (rows.role == "consumer")]
    if rows.empty:
        return {}
    return {key: float(rate) for key, rate in rows.groupby(["variant", "consumers"]).items_per_s.median().items()}


def _first(rows: pd.DataFrame, column: str) -> float | None:
    return float(rows[column].iloc[0]) if column in rows and pd.notna(rows[column].iloc[0]) else None
