"""The search study's writes-while-querying caption, README table and agreement figure."""

from __future__ import annotations

import pandas as pd

from pglimits_core.experiments.writes_table import shown_lines
from pglimits_core.plotting.writes import quality_chart

WRITES_CAPTION = (
    "Writes while querying, two runs a point on a freshly loaded index: each system runs the mixed stream open "
    "loop at one offered rate (a share of the slower system's closed-loop peak in it), `before`, `writing` and "
    "`after` phases, `writers` processes rewriting `write_pct_per_min` % of the corpus per minute in `writing` "
    "only — a new version of the same document (Postgres: DELETE + INSERT in one transaction, fsynced at commit, "
    "GIN's new entries into its pending list; the Lucene engines: an index request under the same id, the "
    "translog fsynced before the reply, searchable at the next 1-s refresh), so every timed answer is still "
    "checked against its exact hit count; then a cleanup run of the same stream with the system's cleanup from "
    "its start (`cleanup_kind`: Postgres VACUUM; the engines a force-merge that only expunges deletes, which "
    "leaves a segment whose deleted share is under the merge policy's 10 %). The answers to the first "
    "`quality_queries` queries compared with the system's own before the writes (`agreement_mean`: mean "
    "overlap@10), at the end of the writes run and after the cleanup: GIN ranked by `ts_rank` uses no corpus "
    "statistics, so its answers cannot move; BM25's statistics count deleted documents until a merge, so the "
    "engines' and pg_search's scores, and tied orders, can — a changed answer, not necessarily a worse one. p99 "
    "from the intended start per phase; `write_p99_ms` a write's own time, `write_p99_from_intended_ms` from its "
    "scheduled start (a writer that fell behind waits in it); `writes_sustained`: ≥ 95 % of the "
    "offered rate achieved; `load_cpu_pct_writing`: the load's core busy while writing (100: saturated); "
    "dead versions as each counts them (Postgres `n_dead_tup`; the engines: deleted "
    "documents)")


def writes_lines(writes: pd.DataFrame) -> list[str]:
    """The README's writes-while-querying table, agreement with its own answers in the middle."""
    return shown_lines(writes, WRITES_CAPTION, ("agreement_mean_after_writes", "agreement_mean_after_cleanup"))


def writes_agreement_chart(writes: pd.DataFrame):
    return quality_chart(writes, "agreement_mean", "top 10 = its own before the writes (mean overlap)")
