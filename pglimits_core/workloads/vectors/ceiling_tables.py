"""The ``ceiling`` table: each engine's own C load tool on the vector query, beside the harness's
closed-loop QPS at the same (ef, clients).

Both are closed loop; the tool's QPS is its measured window (pgbench: logged transactions;
vegeta: its requests in the window), the median over repetitions. Server CPU per query comes
from the server's own processes in each run (µs; the runs whose CPU split the box's busy CPU
explains), for the tool and for the harness's sweep point. ``tool_over_harness`` ≥ the tie band
means the Python harness, not the server, capped the sweep at that point; a client-bound tool
run sets no ceiling.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pglimits_core.analysis.flags import any_verdict
from pglimits_core.analysis.runs import measured
from pglimits_core.analysis.verdict import TIE_BAND

CAPTION = ("C-tool ceiling: the vector query through each engine's own load tool (pgbench on stored query "
           "vectors, ef by PGOPTIONS; vegeta on Qdrant's REST search, hnsw_ef in the body), closed loop, beside "
           "the harness's sweep QPS at the same ef and clients; server CPU µs per query from the server's own "
           "processes")
NOT_MEASURED = "C-tool ceiling: not measured in these records (no `ceiling` runs)."


def ceiling_table(frame: pd.DataFrame, sweep: pd.DataFrame) -> pd.DataFrame:
    """One row per variant × ef × clients; empty without ceiling runs."""
    from pglimits_core.workloads.vectors.tables import cpu_per_query

    rows = measured(frame) if len(frame) and "experiment" in frame else pd.DataFrame()
    rows = rows[(rows.experiment == "ceiling") & (rows.phase != "warmup")] if len(rows) else rows
    if rows.empty:
        return pd.DataFrame()
    out = []
    for (variant, ef, clients), runs in rows.groupby(["variant", "ef", "clients"], sort=True):
        cpu = cpu_per_query(runs)
        out.append({"variant": variant, "ef": int(ef), "clients": int(clients), "tool": runs.tool.iloc[0],
                    "tool_version": runs.get("tool_version", pd.Series([None])).iloc[0],
                    "ef_set_by": runs.get("ef_set_by", pd.Series([None])).iloc[0], "runs": len(runs),
                    "tool_qps": runs.ops_per_s.median(), "tool_qps_min": runs.ops_per_s.min(),
                    "tool_qps_max": runs.ops_per_s.max(), **_harness(sweep, variant, ef, clients),
                    "tool_server_cpu_us_per_query": _us(cpu["server_cpu_ms_per_query"]),
                    "p50_ms": _median(runs, "service_time_p50_ms"), "p99_ms": _median(runs, "service_time_p99_ms"),
                    "client_cpu_pct": _median(runs, "client_cpu_pct"), "server_cpu_pct": _median(runs, "server_cpu_pct"),
                    "client_bound": any_verdict(runs.client_bound)})
    table = pd.DataFrame(out)
    table["tool_over_harness"] = table.tool_qps / table.harness_qps
    table["reading"] = [reading(row) for _, row in table.iterrows()]
    return table


def _harness(sweep: pd.DataFrame, variant: str, ef: int, clients: int) -> dict[str, Any]:
    """The sweep's point at the same (variant, ef, clients), or Nones (not swept there)."""
    at = sweep[(sweep.variant == variant) & (sweep.ef == ef) & (sweep.clients == clients)] if len(sweep) else sweep
    if at.empty:
        return {"harness_qps": None, "harness_server_cpu_us_per_query": None, "harness_client_bound": None}
    row = at.iloc[0]
    return {"harness_qps": row.qps, "harness_server_cpu_us_per_query": _us(row.get("server_cpu_ms_per_query")),
            "harness_client_bound": row.get("client_bound")}


def reading(row: pd.Series) -> str:
    """What the pair says about the harness, by the tie band of ``analysis.verdict``."""
    ratio = row.tool_over_harness
    if row.client_bound is True:
        return "tool client-bound: no ceiling"
    if ratio is None or pd.isna(ratio):
        return "no harness point at this ef and client count"
    if ratio >= TIE_BAND:
        return f"tool ×{ratio:.2f} the harness: the harness capped the sweep here"
    if ratio <= 1 / TIE_BAND:
        return f"tool ×{ratio:.2f} the harness: below the harness"
    return f"tool ×{ratio:.2f} the harness: within the tie band, the harness was not the limit"


def _us(ms: Any) -> float | None:
    return None if ms is None or pd.isna(ms) else float(ms) * 1000


def _median(runs: pd.DataFrame, column: str) -> float | None:
    values = pd.to_numeric(runs[column], errors="coerce").dropna() if column in runs else pd.Series(dtype=float)
    return float(values.median()) if len(values) else None
