"""The ``harness_bench`` table: each system's own C tool on the queue's statements beside the
harness's burn-down at as many consumers, taken back to back on a queue in the same state.

pgbench's jobs/s are measured (logged transactions in the window × batch). redis-benchmark
measures each command alone; a job is LPUSH + LMOVE + LREM, so its per-job ceiling is derived,
1/Σ(1/rate_i) over the three (a job costs the sum of its commands' times: run back to back on
one connection, their times add), and the consume-only ceiling (what the harness's burn-down
does: LMOVE + LREM) likewise from two. Each row's ``derivation`` writes the sum out with its
own record's rates. Both tools are closed loop: clients send the next request when the last
returns.

Server CPU per job is the server's own process set as the host sampler records it (every
backend, parallel worker and autovacuum worker, children reaped in the window included): its
median % of one core × 10⁴ / jobs/s. A redis-benchmark record has one CPU median over its three
commands, so its per-job figure assumes the server's CPU share was the same in each (true when
the single-threaded server is saturated in every step). Where the harness and the tool ran the
same operation at the same clients, the server's work per job is the same work: the two figures
must agree within ``CPU_AGREEMENT`` (a check on the sampler's process set), and the table says
when they do not.
"""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.flags import any_verdict
from pglimits_core.analysis.runs import measured
from pglimits_core.workloads.queue.ceiling_tools import per_job_rate
from pglimits_core.workloads.queue.durability_tables import ensure_class, sort_by_class

HARNESS_BENCH_CAPTION = ("Harness benchmark on this machine: the harness's closed-loop burn-down, then the same "
                         "statements through the C tool on a queue in the same state, back to back "
                         "(redis-benchmark: per command; per job derived as 1/Σ(1/rate) of LPUSH, LMOVE, LREM, "
                         "consume only of LMOVE, LREM, written out in `derivation`); harness_over_tool is the "
                         "harness/C-tool ratio of these records' own machine; server CPU per consumed job must "
                         "agree within 25 % (`server_cpu_agrees`), else the sampler's process set is in doubt")
JOB_COMMANDS, CONSUME_COMMANDS = ("LPUSH", "LMOVE", "LREM"), ("LMOVE", "LREM")
#: harness and tool server CPU per job further apart than this (max/min − 1) do not agree
CPU_AGREEMENT = 0.25


def server_cpu_us_per_job(cpu_pct: pd.Series, jobs_per_s: pd.Series) -> pd.Series:
    """% of one core at a job rate -> server CPU µs per job (NaN where either is missing). A
    median of 0 % is no server CPU seen (SQLite has no server process), not free work: NaN."""
    rate = pd.to_numeric(jobs_per_s, errors="coerce")
    cpu = pd.to_numeric(cpu_pct, errors="coerce")
    return cpu.where(cpu > 0) * 1e4 / rate.where(rate > 0)


def cpu_us_per_job(cpu_pct, jobs_per_s) -> float | None:
    """``server_cpu_us_per_job`` of one run."""
    return _scalar(server_cpu_us_per_job(pd.Series([cpu_pct]), pd.Series([jobs_per_s])).iloc[0])


def tool_table(frame: pd.DataFrame, experiment: str, harness: str) -> pd.DataFrame:
    """One row per variant × clients (medians over the runs) of ``experiment``'s tool runs, each
    beside the harness's ``harness`` burn-down at as many consumers; empty without tool runs."""
    if frame.empty or "experiment" not in frame:
        return pd.DataFrame()
    rows = ensure_class(measured(frame))
    rows = rows[(rows.experiment == experiment) & (rows.get("tool", pd.Series(index=rows.index)).notna())]
    if rows.empty:
        return pd.DataFrame()
    runs = pd.DataFrame([tool_run_row(run) for _, run in rows.groupby("run_id")])
    table = pd.DataFrame([_point(point) for _, point in runs.groupby(["variant", "clients"])])
    found = harness_points(frame, harness)
    keys = list(zip(table.variant, table.clients, strict=True))
    table["harness_consume_per_s"] = [found.get(key, {}).get("rate") for key in keys]
    table["harness_over_tool"] = table.harness_consume_per_s / table.tool_consume_per_s
    table["harness_server_cpu_us_per_job"] = [found.get(key, {}).get("cpu") for key in keys]
    trusted = [found.get(key, {}).get("trusted", True) and tool for key, tool in zip(keys, table.cpu_trusted, strict=True)]
    table["server_cpu_agrees"] = [cpu_agreement(h, t, trusted=ok) for h, t, ok in
                                  zip(table.harness_server_cpu_us_per_job, table.tool_server_cpu_us_per_job, trusted,
                                      strict=True)]
    return sort_by_class(table, ["variant", "clients"])


def tool_run_row(run: pd.DataFrame) -> dict:
    """One tool run: its jobs/s (measured or derived), consume-only jobs/s, latencies, server CPU."""
    first, rates = run.iloc[0], run.set_index("op").ops_per_s.to_dict()
    measure = run[run.phase == "measure"]
    if len(measure):  # pgbench: the measured window, items = transactions × batch
        jobs = consume = float(measure.items_per_s.iloc[0])
        how, p50, p99 = "measured", _first(measure, "service_time_p50_ms"), _first(measure, "service_time_p99_ms")
    else:  # redis-benchmark: one phase per command
        jobs = per_job_rate([rates.get(c) for c in JOB_COMMANDS])
        consume = per_job_rate([rates.get(c) for c in CONSUME_COMMANDS])
        how, p50, p99 = derivation(rates, jobs), None, None
    return {"variant": first.variant, "durability_class": first.durability_class, "tool": first.get("tool"),
            "tool_version": first.get("tool_version"), "loop": "closed", "clients": first.clients,
            "jobs_per_s": jobs, "tool_consume_per_s": consume, "jobs_per_s_is": how, "p50_ms": p50, "p99_ms": p99,
            **{f"{c.lower()}_per_s": rates.get(c) for c in JOB_COMMANDS},
            "client_bound": first.client_bound, "cpu_trusted": cpu_split_trusted(first.client_bound),
            "client_cpu_pct": first.client_cpu_pct,
            "server_cpu_pct": first.server_cpu_pct,
            "tool_server_cpu_us_per_job": cpu_us_per_job(first.server_cpu_pct, consume)}


def derivation(rates: dict, jobs: float | None) -> str:
    """The per-job ceiling written out from this record's command rates:
    "1/(1/85,000 + 1/80,000 + 1/90,000) = 28,100 jobs/s (LPUSH, LMOVE, LREM back to back)"."""
    found = [rates.get(c) for c in JOB_COMMANDS]
    if jobs is None or any(rate is None or pd.isna(rate) for rate in found):
        return "derived 1/Σ(1/rate): a command's rate is missing"
    terms = " + ".join(f"1/{rate:,.0f}" for rate in found)
    return f"derived 1/({terms}) = {jobs:,.0f} jobs/s ({', '.join(JOB_COMMANDS)} back to back)"


def _point(runs: pd.DataFrame) -> dict:
    first = runs.iloc[0]
    medians = {c: runs[c].median() for c in ("jobs_per_s", "tool_consume_per_s", "p50_ms", "p99_ms",
                                            "lpush_per_s", "lmove_per_s", "lrem_per_s",
                                            "client_cpu_pct", "server_cpu_pct", "tool_server_cpu_us_per_job")}
    return {**first.to_dict(), **medians, "client_bound": any_verdict(runs.client_bound),
            "cpu_trusted": bool(runs.cpu_trusted.all()), "runs": len(runs)}


def harness_points(frame: pd.DataFrame, experiment: str = "throughput") -> dict[tuple[str, int], dict]:
    """The harness's median consumed jobs/s and server CPU µs per job per (variant, consumers) of
    ``experiment``'s burn-down runs (the consumer rows of runs without a tool)."""
    rows = measured(frame)
    rows = rows[(rows.experiment == experiment) & (rows.role == "consumer")]
    if "tool" in rows:
        rows = rows[rows.tool.isna()]
    if rows.empty:
        return {}
    rows = rows.assign(cpu=server_cpu_us_per_job(rows.server_cpu_pct, rows.items_per_s),
                       trusted=rows.client_bound.map(cpu_split_trusted))
    grouped = rows.groupby(["variant", "consumers"]).agg(rate=("items_per_s", "median"),
                                                         cpu=("cpu", lambda cpu: cpu.dropna().median()),
                                                         trusted=("trusted", "all"))
    return {key: {"rate": float(row.rate), "cpu": None if pd.isna(row.cpu) else float(row.cpu),
                  "trusted": bool(row.trusted)}
            for key, row in grouped.iterrows()}


def cpu_split_trusted(client_bound) -> bool:
    """A run's client/server CPU split can be trusted when it drew a client-bound verdict: the
    verdict is "cannot tell" (None) where a busy neighbour or processes the sampler missed made
    the machine busier than client and server explain, or the tool's client went unseen."""
    return client_bound is not None and not pd.isna(client_bound)


def cpu_agreement(harness_us: float | None, tool_us: float | None, tolerance: float = CPU_AGREEMENT,
                  trusted: bool = True) -> str:
    """Whether the harness's and the tool's server CPU per job agree within ``tolerance``;
    "cannot tell" when either run's CPU split is untrusted (``cpu_split_trusted``): a figure
    read off a busy machine checks nothing about the sampler's process set."""
    if harness_us is None or tool_us is None or pd.isna(harness_us) or pd.isna(tool_us) or not harness_us or not tool_us:
        return "—"
    ratio = harness_us / tool_us
    if not trusted:
        return f"cannot tell (a run's CPU split is untrusted: busy machine or unseen client); read as it is, harness {ratio:.2f}× tool"
    within = max(ratio, 1 / ratio) - 1 <= tolerance
    verdict = "yes" if within else f"NO (beyond {tolerance:.0%}: check the sampler's process set)"
    return f"{verdict}; harness {ratio:.2f}× tool"


def harness_bench_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The ``harness_bench`` experiment's pairs (empty when these records have none)."""
    return tool_table(frame, "harness_bench", "harness_bench")


def _first(rows: pd.DataFrame, column: str) -> float | None:
    return float(rows[column].iloc[0]) if column in rows and pd.notna(rows[column].iloc[0]) else None


def _scalar(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)
