"""The ``ceiling`` table: the search query through each system's own load tool (pgbench, vegeta),
beside the harness's throughput at as many clients in the same stream.

Both tools are closed loop here, as the harness is. ``harness / tool`` below 1 says the Python
harness reached less than the tool did (the harness, not the server, was the limit by that
much); near 1, the harness measured the server. Server CPU per query (the server's own process
set, ``head_to_head.server_us_per_query``) is shown for both: if it is the same, the server did
the same work per query under either client.
"""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.flags import any_verdict
from pglimits_core.analysis.runs import measured
from pglimits_core.workloads.search.head_to_head import server_us_per_query

EXPERIMENT = "ceiling"
CAPTION = ("Load-tool ceiling: the same query through pgbench (Postgres: the adapter's statement, -M prepared, "
           "the same plan_cache_mode) and vegeta (the engines: the adapter's request bodies, closed loop), beside the "
           "harness's throughput at as many clients in the same stream; server CPU per query from the server's own "
           "processes")
KEYS = ["variant", "stream", "clients"]


def ceiling_table(frame: pd.DataFrame, throughput: pd.DataFrame) -> pd.DataFrame:
    """One row per variant × stream × clients (medians over the tool runs); empty without
    ceiling runs (records made before the experiment existed: not measured in them)."""
    if frame.empty or "experiment" not in frame:
        return pd.DataFrame()
    rows = measured(frame)
    rows = rows[(rows.experiment == EXPERIMENT) & (rows.phase == "measure")]
    if rows.empty:
        return pd.DataFrame()
    table = pd.DataFrame([_point(runs) for _, runs in rows.groupby(KEYS, sort=False)])
    harness = _harness(throughput)
    table = table.merge(harness, on=KEYS, how="left") if not harness.empty else table.assign(
        harness_qps=None, harness_server_cpu_us_per_query=None, harness_client_bound=None)
    table["harness_over_tool"] = pd.to_numeric(table.harness_qps, errors="coerce") / table.tool_qps
    return table.sort_values(["stream", "clients", "variant"], kind="stable").reset_index(drop=True)


def _point(runs: pd.DataFrame) -> dict:
    """The tool runs of one point: qps, latency, CPU per side and the client-bound verdict."""
    first = runs.iloc[0]
    per_run = [server_us_per_query(c, q) for c, q in zip(runs.server_cpu_pct, runs.items_per_s, strict=True)]
    cpu = pd.Series(per_run, dtype=float).dropna()
    return {"variant": first.variant, "system": first.system, "stream": first.stream, "clients": int(first.clients),
            "tool": first.get("tool"), "tool_version": first.get("tool_version"),
            "loop": first.get("tool_loop"), "tool_qps": float(runs.items_per_s.median()),
            "p50_ms": _median(runs, "service_time_p50_ms"), "p99_ms": _median(runs, "service_time_p99_ms"),
            "server_cpu_us_per_query": float(cpu.median()) if len(cpu) else None,
            "client_cpu_pct": _median(runs, "client_cpu_pct"), "server_cpu_pct": _median(runs, "server_cpu_pct"),
            "client_bound": any_verdict(runs.client_bound), "runs": len(runs)}


def _harness(throughput: pd.DataFrame) -> pd.DataFrame:
    """The harness's median qps, server µs per query and client-bound verdict per point."""
    if throughput is None or throughput.empty:
        return pd.DataFrame()
    return throughput[[*KEYS, "qps", "server_cpu_us_per_query", "client_bound"]].rename(columns={
        "qps": "harness_qps", "server_cpu_us_per_query": "harness_server_cpu_us_per_query",
        "client_bound": "harness_client_bound"})


def _median(rows: pd.DataFrame, column: str) -> float | None:
    values = pd.to_numeric(rows[column], errors="coerce").dropna() if column in rows else pd.Series(dtype=float)
    return float(values.median()) if len(values) else None
