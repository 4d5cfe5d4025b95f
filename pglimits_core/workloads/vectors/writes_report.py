"""The vector study's writes-while-querying caption, README table and recall figure."""

from __future__ import annotations

import pandas as pd

from pglimits_core.experiments.writes_table import shown_lines
from pglimits_core.plotting.writes import quality_chart

WRITES_CAPTION = (
    "Writes while querying, two runs a point on a freshly built index: each engine queried open loop at one "
    "offered rate (the latency section's: a share of the lowest engine's closed-loop QPS at the recall target, "
    "each at its own ef), `before`, `writing` and `after` phases, `writers` processes rewriting "
    "`write_pct_per_min` % of the vectors per minute in `writing` only — a new version of the same vector, so "
    "recall keeps its exact truth (Postgres: DELETE + INSERT in one transaction, fsynced at commit; Qdrant: a gRPC "
    "upsert of the same point, `wait=true`: applied before the reply, not a promise that its WAL reached the disk); "
    "then a cleanup run of the same queries with the engine's cleanup from its start (`cleanup_kind`: Postgres "
    "VACUUM; Qdrant, which has no vacuum to call, waited for until its optimizer is done — it rewrites a segment "
    "only past its `deleted_threshold`). Recall before the writes, at the end of the writes run (`after_s` after "
    "the writes stopped, each engine left to its background upkeep: Postgres's autovacuum does not start below a "
    "fifth of the table dead) and after the cleanup. p99 from the intended start per phase; `write_p99_ms` a "
    "write's own time (a commit, an acknowledged upsert), `write_p99_from_intended_ms` from its scheduled start "
    "(a writer that fell behind waits in it); `writes_sustained`: the writers achieved ≥ 95 % of the "
    "offered rate; `load_cpu_pct_writing`: the load's core busy while writing (100: saturated, a client effect); "
    "dead versions as each system counts them (Postgres `n_dead_tup`, and `versions_made_dead`, the `n_tup_del` delta; Qdrant: deleted vectors in its segments)")


def writes_lines(writes: pd.DataFrame) -> list[str]:
    """The README's writes-while-querying table, recall at the three moments in the middle."""
    return shown_lines(writes, WRITES_CAPTION,
                       ("recall_mean_before", "recall_mean_after_writes", "recall_mean_after_cleanup"))


def writes_recall_chart(writes: pd.DataFrame):
    return quality_chart(writes, "recall_mean", "recall@10 (mean over the queries scored)")
