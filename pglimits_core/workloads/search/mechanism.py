"""The ``mechanism`` experiment: why Postgres's ranked query falls behind as match sets grow,
measured with ``EXPLAIN (ANALYZE, BUFFERS)`` instead of asserted.

For every query of every crossover bucket, the ranked and the unranked statement each run as the
harness runs them (prepared, ``plan_cache_mode = force_generic_plan``) under ``EXPLAIN (ANALYZE,
BUFFERS, TIMING OFF, FORMAT JSON)`` — TIMING OFF: the executor's total time without a clock read
per row — ``repeats`` times; the fastest run counts (a warm cache, as in the timed points). Each
run records the execution time, the rows the Bitmap Heap Scan returned (every match for the
ranked query: ``ts_rank`` needs each matching row's tsvector before the top 10 is known; the
unranked one stops at the 10th) and the shared buffers touched. Per bucket: medians, and the
per-match cost (execution time / exact matches). The server is idle but for this one session:
no load driver, no samplers (the record holds the outcome only, like a correctness record).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from psycopg import sql

from pglimits_core.studies.runner import RecordedRun
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.search.loading import ensure_loaded
from pglimits_core.workloads.search.prepared import Setup, prepared
from pglimits_core.workloads.search.records import recorded
from pglimits_core.workloads.search.systems.postgres import RANKED_SQL, UNRANKED_SQL, pg_terms
from pglimits_core.workloads.search.variant import SearchVariant

EXPERIMENT = "mechanism"
SYSTEM = "pg_gin"  # the probe reads Postgres's own plans
CAPTION = ("The crossover's mechanism on Postgres: EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) of the ranked and unranked "
           "statements per match-set bucket (median over the bucket's queries of each query's fastest of the "
           "repeats; heap rows = rows the Bitmap Heap Scan returned; µs per match = execution time / exact matches)")
STATEMENTS = {"ranked": RANKED_SQL, "unranked": UNRANKED_SQL}
EXPLAIN = "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) EXECUTE {}({})"


def mechanism_point(run: StudyRun, v: SearchVariant, setup: Setup, repeats: int) -> RecordedRun:
    """Every crossover bucket's queries through both statements (``v``: the pg_gin load variant)."""
    ctx = run.ctx
    params = {"experiment": EXPERIMENT, "variant": v.label, "repeats": repeats, **setup.params(),
              "statements": STATEMENTS, "explain": EXPLAIN.format("<statement>", "<terms>")}

    def measure() -> dict[str, Any]:
        import psycopg

        ensure_loaded(ctx, setup, v)
        data = prepared(setup)
        with psycopg.connect(ctx.endpoints[v.server].url, autocommit=True) as conn:
            conn.execute("SET plan_cache_mode = force_generic_plan")
            for name, statement in STATEMENTS.items():
                conn.execute(f"PREPARE {name}(text) AS {statement.replace('%s', '$1')}")
            buckets = [bucket_outcome(conn, bucket, data.queries.group(bucket), repeats)
                       for bucket in data.queries.decades]
        return {"buckets": buckets}

    return recorded(ctx, v.system, v.server, f"{EXPERIMENT}:{v.label}", params, run.seed, measure)


def explain(conn: Any, name: str, terms: str) -> dict[str, float]:
    """One EXPLAIN ANALYZE of prepared statement ``name``: time, heap rows, shared buffers."""
    query = sql.SQL(EXPLAIN).format(sql.Identifier(name), sql.Literal(terms))
    plan = conn.execute(query).fetchone()[0][0]
    heap = find_node(plan["Plan"], "Bitmap Heap Scan")
    return {"ms": float(plan["Execution Time"]), "heap_rows": heap["Actual Rows"] if heap else None,
            "buffers": plan["Plan"].get("Shared Hit Blocks", 0) + plan["Plan"].get("Shared Read Blocks", 0)}


def find_node(node: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The first plan node of ``kind`` (depth first)."""
    if node.get("Node Type") == kind:
        return node
    for child in node.get("Plans", []):
        if (found := find_node(child, kind)) is not None:
            return found
    return None


def bucket_outcome(conn: Any, bucket: str, queries: list, repeats: int) -> dict[str, Any]:
    """Medians over the bucket's queries of each statement's fastest run, and per-match cost."""
    outcome: dict[str, Any] = {"bucket": bucket, "queries": len(queries),
                               "median_matches": float(np.median([q.matches for q in queries]))}
    for name in STATEMENTS:
        runs = [min((explain(conn, name, pg_terms(q.term_a, q.term_b)) for _ in range(repeats)),
                    key=lambda r: r["ms"]) for q in queries]
        per_match = [1000 * r["ms"] / q.matches for r, q in zip(runs, queries, strict=True) if q.matches]
        outcome.update({f"{name}_ms": _median([r["ms"] for r in runs]),
                        f"{name}_us_per_match": _median(per_match),
                        f"{name}_heap_rows": _median([r["heap_rows"] for r in runs]),
                        f"{name}_buffers": _median([r["buffers"] for r in runs])})
    return outcome


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def mechanism_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per bucket of the newest complete mechanism record; empty without one (records
    made before the experiment existed: not measured in them)."""
    if frame.empty or "experiment" not in frame or "buckets" not in frame:
        return pd.DataFrame()
    rows = frame[(frame.experiment == EXPERIMENT) & (frame.status == "complete")]
    if rows.empty:
        return pd.DataFrame()
    buckets = pd.DataFrame(rows.sort_values("run_id").iloc[-1].buckets)
    if buckets.empty:
        return buckets
    return buckets.assign(ranked_over_unranked_ms=buckets.ranked_ms / buckets.unranked_ms)
