"""The search study's correctness points, and the gate they put before every timed point.

Each variant's correctness point checks every query of the study (match count against the exact
count, the top-10 against the exact match set) and how its top-10 agrees with the exact BM25
top-10 (also tie-aware). A variant with any disagreement is not measured: its throughput and
latency points fail with that reason (``verified``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from pglimits_core.errors import PGLimitsError
from pglimits_core.studies.causes import NotMeasured
from pglimits_core.studies.runner import Context, RecordedRun
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.search.bm25 import agreement, tie_aware_agreement
from pglimits_core.workloads.search.loading import ensure_loaded
from pglimits_core.workloads.search.prepared import Prepared, Setup, prepared
from pglimits_core.workloads.search.queries import K, SearchQuery
from pglimits_core.workloads.search.records import STUDY, recorded
from pglimits_core.workloads.search.systems.base import SearchSystem
from pglimits_core.workloads.search.variant import SearchVariant

MAX_EXAMPLES = 5
BM25_REFERENCE = {"k1": 1.2, "b": 0.75, "what": "exact BM25 over the corpus (Lucene's formula, exact lengths)"}


def check_answer(q: SearchQuery, truth: np.ndarray, count: int, ids: list[int]) -> str:
    """Why an answer is wrong ("" when it is right): the count must equal the exact match count;
    the ids must be min(10, matches) distinct documents of the exact match set."""
    problems = []
    if count != q.matches:
        problems.append(f"count {count} != exact {q.matches}")
    if len(ids) != q.expected_hits or len(set(ids)) != len(ids):
        problems.append(f"{len(ids)} ids returned, a correct top-{K} has {q.expected_hits}")
    outside = [doc for doc in ids if not _holds(truth, doc)]
    if outside:
        problems.append(f"{len(outside)} returned ids do not match (e.g. {outside[0]})")
    return "; ".join(problems)


def _holds(sorted_ids: np.ndarray, doc: int) -> bool:
    at = int(np.searchsorted(sorted_ids, doc))
    return at < len(sorted_ids) and int(sorted_ids[at]) == doc


def correctness_point(run: StudyRun, v: SearchVariant, setup: Setup) -> RecordedRun:
    """Every query of the study on ``v``: match count vs the exact count, top-10 within the
    exact match set; and how the top-10 agrees with the exact BM25 top-10 (also tie-aware)."""
    ctx = run.ctx
    params = {"experiment": "correctness", "variant": v.label, "options": v.options, **setup.params(),
              "query": v.query_template()}

    def measure() -> dict[str, Any]:
        data = prepared(setup)
        ensure_loaded(ctx, setup, v)
        with v.engine().open(ctx.endpoints[v.server].url) as engine:
            return check_all(engine, data)

    return recorded(ctx, v.system, v.server, f"correctness:{v.label}", params, run.seed, measure)


def check_all(engine: SearchSystem, data: Prepared) -> dict[str, Any]:
    """The correctness outcome of an opened ``engine`` (with its variant's options) over every
    query of ``data`` (see ``correctness_point``)."""
    started = time.perf_counter()
    per_query, examples, by_group = [], [], {}
    for q in data.queries.queries:
        row, problem = check_query(engine, data, q)
        per_query.append(row)
        group = by_group.setdefault(q.group, {"checked": 0, "disagreed": 0})
        group["checked"] += 1
        if problem:
            group["disagreed"] += 1
            if len(examples) < MAX_EXAMPLES:
                examples.append({"query": f"{q.term_a} {q.term_b}", "group": q.group, "problem": problem})
    disagreed = sum(not row["ok"] for row in per_query)
    inexact = sum(1 for row in per_query if (row.get("total") or {}).get("relation") == "gte")
    return {"checked": len(per_query), "disagreed": disagreed, "examples": examples, "by_group": by_group,
            "total_relation_gte": inexact if engine.reports_total else None,
            "track_total_hits": engine.options.get("track_total_hits"), "bm25": dict(BM25_REFERENCE),
            "queries": per_query, "seconds": round(time.perf_counter() - started, 3)}


def check_query(engine: SearchSystem, data: Prepared, q: SearchQuery) -> tuple[dict[str, Any], str]:
    """One query's row of the outcome, and why its answer is wrong ("" when it is right)."""
    truth = data.queries.truth[q.index]
    ids, total = engine.search(q.term_a, q.term_b)
    count = engine.count(q.term_a, q.term_b)
    problem = check_answer(q, truth, count, ids)
    exact_top, scores = data.bm25.top((q.term_a, q.term_b), truth, K)
    row = {"i": q.index, "group": q.group, "matches": q.matches, "count": count, "top": ids,
           "ok": not problem,
           "bm25_overlap": agreement(ids, exact_top, q.expected_hits),
           "bm25_tie_aware": tie_aware_agreement(ids, truth, scores, q.expected_hits)}
    if total is not None:
        row["total"] = total
    return row, problem


_VERIFIED: set[tuple[str, str, str]] = set()


def verified(ctx: Context, setup: Setup, v: SearchVariant) -> None:
    """Raise unless ``v``'s correctness record in this run found no disagreement (read once per
    study process and runs directory)."""
    from pglimits_core.record.records import load_records

    key = (str(ctx.runs_root), v.label, setup.dataset)
    if key in _VERIFIED:
        return
    for record in load_records(STUDY, ctx.runs_root):
        manifest = record["manifest"]
        params = manifest.get("params", {})
        if (params.get("experiment"), params.get("variant"), params.get("dataset")) == \
                ("correctness", v.label, setup.dataset) and manifest.get("status") == "complete":
            outcome = params.get("outcome", {})
            if outcome.get("disagreed", 1) == 0:
                _VERIFIED.add(key)
                return
            # the study's own validity check declined it: listed, not a failed run
            raise NotMeasured(f"{v.label} answered {outcome.get('disagreed')} of {outcome.get('checked')} "
                                f"queries wrongly in the correctness check: not measured",
                                "see its correctness record (a match with OR semantics, another analyzer?)")
    raise PGLimitsError(f"{v.label} has no complete correctness record: not measured",
                        "its correctness point failed or was not run; see the study's failures")
