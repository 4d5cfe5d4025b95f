"""Postgres GIN against a Lucene engine, row by row: the rate verdict (``analysis.verdict``: which
side set the limit, floors, the tie band) and, printed beside it, the server's own CPU per query.

Server CPU per query = the server process set's CPU (the host sampler's steady median, % of one
core) over the run's queries/s: ``pct / 100 × 10⁶ / qps`` µs. The core has no helper for it
(the queue computes its own per message in ``queue/health.py``): this is the search study's.

The compared pair is the one the decision matrix compares (``decision.py``): Postgres GIN with
ranking (``ts_rank``: the same work a Lucene engine's BM25 top 10 is) against each Lucene engine
(and against each Postgres BM25 extension, whose row says whether it beats GIN),
in the same stream (or match-set bucket) — at the same client count in the crossover, each at
its own best client count in the peak table. The verdict goes on the engine's row.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pglimits_core.analysis.runs import box_saturated, trusted
from pglimits_core.analysis.verdict import (
    DECIDED,
    INSIDE_BAND,
    Side,
    decide,
    limit_from_record,
    sweep_class,
)
from pglimits_core.workloads.search.systems.registry import SERVER_FOR, system_class


def server_us_per_query(cpu_pct: Any, qps: Any) -> float | None:
    """µs of server CPU per query from a CPU share (% of one core) and queries/s."""
    if cpu_pct is None or qps is None or pd.isna(cpu_pct) or pd.isna(qps) or not qps:
        return None
    return float(cpu_pct) * 1e4 / float(qps)


def cpu_columns(runs: pd.DataFrame) -> dict[str, float | None]:
    """The server µs per query of the runs whose CPU split can be trusted (``analysis.runs.trusted``,
    the rule the queue, pub/sub and vector comparisons use): median, lowest and highest, and how
    many runs they come from (None where no run is trusted or none was sampled)."""
    believed = trusted(runs)
    per_run = pd.Series([server_us_per_query(c, q) for c, q in zip(believed.server_cpu_pct, believed.items_per_s,
                                                                    strict=True)], dtype=float).dropna()
    saturated = {"box_saturated": box_saturated(runs)}
    counted = {**saturated, "server_cpu_runs": len(per_run)}
    if per_run.empty:
        return {"server_cpu_us_per_query": None, "server_cpu_us_min": None, "server_cpu_us_max": None, **counted}
    return {"server_cpu_us_per_query": float(per_run.median()), "server_cpu_us_min": float(per_run.min()),
            "server_cpu_us_max": float(per_run.max()), **counted}


def family(system: str) -> str:
    """``postgres`` (the GIN baseline), ``extension`` or ``engine`` (``SearchSystem.family``);
    "" for a system this code does not know."""
    return system_class(system).family if system in SERVER_FOR else ""


def on_postgres(system: str) -> bool:
    """The GIN baseline's side (Postgres with a BM25 extension is a side of its own)."""
    return family(system) == "postgres"


def is_engine(system: str) -> bool:
    return family(system) == "engine"


def is_postgres_ranked(row: pd.Series) -> bool:
    """Postgres GIN with ``ts_rank`` at the study's defaults (not the unranked match, not a
    plan-cache variant): the side that does the work a Lucene engine does."""
    return on_postgres(str(row["system"])) and str(row["variant"]).split()[-1] == "ranked"


def side_of(row: pd.Series) -> Side:
    """One table row as a side of ``decide``: qps (runs' range), which side set the limit, and
    the server µs per query to print beside it."""
    cpu = row["server_cpu_us_per_query"] if "server_cpu_us_per_query" in row else \
        server_us_per_query(row.get("server_cpu_pct"), row["qps"])  # a table without the runs' figure
    return Side(str(row["variant"]), float(row["qps"]), limit=limit_from_record(row),
                server_cpu_us_per_op=None if cpu is None or pd.isna(cpu) else float(cpu),
                value_range=(float(row["min_qps"]), float(row["max_qps"])))


def verdict_columns(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``table`` with ``verdict_class`` and ``verdict_ahead`` on each Lucene engine's row (and on
    each Postgres-extension row: does the BM25 index beat GIN?): Postgres GIN ranked (same
    ``keys``) against it; blank where there is no such pair."""
    classes: list[str | None] = []
    ahead: list[str | None] = []
    for _, row in table.iterrows():
        pg = _postgres_ranked(table, row, keys)
        if pg is None or on_postgres(str(row["system"])) or pd.isna(row["qps"]):
            classes.append(None)
            ahead.append(None)
            continue
        verdict = decide(side_of(pg), side_of(row))
        classes.append(sweep_class(verdict.klass))
        ahead.append(_ahead(verdict, "engine" if is_engine(str(row["system"])) else str(row["variant"])))
    return table.assign(verdict_class=classes, verdict_ahead=ahead)


def _postgres_ranked(table: pd.DataFrame, row: pd.Series, keys: list[str]) -> pd.Series | None:
    same = table[(table[keys] == row[keys]).all(axis=1)]
    same = same[same.apply(is_postgres_ranked, axis=1)].dropna(subset=["qps"]) if len(same) else same
    return None if same.empty else same.iloc[0]


def _ahead(verdict, other: str = "engine") -> str | None:
    """"pg_gin ranked ×1.90" (the winner and by how much), "no measurable difference (Postgres /
    engine ×1.10)" (``other`` names the compared side; the runs overlap), "opensearch ahead in
    every run, inside the tie band", or None (undecided)."""
    if verdict.klass == INSIDE_BAND:
        return f"{verdict.ahead} ahead in every run, inside the tie band"
    if verdict.klass not in DECIDED or verdict.ratio is None:
        return None
    if verdict.winner is None:
        return f"no measurable difference (Postgres / {other} ×{verdict.ratio:.2f})"
    factor = verdict.ratio if verdict.ratio >= 1 else 1 / verdict.ratio
    return f"{verdict.winner} ×{factor:.2f}"
