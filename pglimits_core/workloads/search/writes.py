"""Search's writes while querying (``experiments.writes``): each system runs the mixed stream open
loop at the latency section's matched rate (a share of the slower system's closed-loop peak, the
same offered rate for all) while writer processes rewrite a share of the corpus per minute.

A rewrite replaces a document by a new version of itself (``SearchSystem.rewrite``: Postgres a
DELETE and INSERT in one transaction, committed with its fsync; the Lucene engines an index
request under the same id, the translog fsynced before the reply, searchable at the next 1-s
refresh), so every query's correct hit count stays what it was — each timed query is still
checked against it (``ops.SearchOp``), during the writes too. The answers to the stream's first
queries are compared with the system's own before the writes run, at its end (``after_s`` after
the writes stopped) and after the cleanup run (Postgres's VACUUM; the engines' merge of their
deleted documents), whose cleanup ran under the same queries. GIN ranked by ``ts_rank`` uses no
corpus statistics, so its answers cannot move; BM25's statistics count deleted documents until a
merge, so the engines' and pg_search's scores, and the order of tied ones, can: a changed answer,
not necessarily a worse one. With ``rebuild`` each point starts from a fresh load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pglimits_core.experiments.writes import EXPERIMENT, WritesTiming, rewrite_order, run_point
from pglimits_core.load.operation import current_worker
from pglimits_core.samplers.memory import server_memory
from pglimits_core.studies.runner import Context, RecordedRun
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.search.correctness import verified
from pglimits_core.workloads.search.loading import ensure_loaded, load_index
from pglimits_core.workloads.search.points import (
    matched_rate,
    stream_operation,
    stream_params,
    warm_up,
)
from pglimits_core.workloads.search.prepared import Setup, prepared
from pglimits_core.workloads.search.queries import SearchQuery
from pglimits_core.workloads.search.records import STUDY
from pglimits_core.workloads.search.systems.registry import make_system
from pglimits_core.workloads.search.variant import SearchVariant


class RewriteDocOp:
    """One write per call: the next document of the worker's share of the corpus, in its own seeded
    order (``experiments.writes.rewrite_order``), replaced by a new version of itself."""

    name = "rewrite"

    def __init__(self, system: str, url: str, options: dict, dataset_path: str):
        self.system, self.url, self.options, self.dataset_path = system, url, dict(options), dataset_path

    def __repr__(self) -> str:  # the manifest keeps the first 300 characters
        return f"RewriteDocOp({self.system}, {self.options})"

    def open(self) -> None:
        from pathlib import Path

        from pglimits_core.datasets.store import load_corpus

        self.corpus = load_corpus(Path(self.dataset_path))
        self.order = rewrite_order(self.corpus.num_documents, current_worker())
        self.position = 0
        self.engine = make_system(self.system, self.options).open(self.url)

    def __call__(self) -> None:
        doc = int(self.order[self.position % len(self.order)])
        self.position += 1
        self.engine.rewrite(doc, self.corpus.text(doc))

    def close(self) -> None:
        self.engine.close()


class CleanupDocsOp:
    """The system's own cleanup after writes (``SearchSystem.cleanup``), one call: the cleanup run
    times it as its queries go on."""

    name = "cleanup"

    def __init__(self, system: str, url: str, options: dict):
        self.system, self.url, self.options = system, url, dict(options)

    def open(self) -> None:
        self.engine = make_system(self.system, self.options).open(self.url)

    def __call__(self) -> None:
        self.engine.cleanup()

    def close(self) -> None:
        self.engine.close()


@dataclass
class SearchWrites:
    """``experiments.writes.WritesDesign`` for one search variant; the answers' quality is their
    agreement with the variant's own answers to the first ``quality_queries`` queries of the
    stream before the run (``agreement_mean``: mean overlap@10; ``identical_share``: the share
    answered with the same ten ids in the same order)."""

    ctx: Context
    setup: Setup
    variant: SearchVariant
    queries: list[SearchQuery]
    quality_queries: int
    reference: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.items = prepared(self.setup).corpus.num_documents
        self.cleanup_kind = make_system(self.variant.system, self.variant.options).cleanup_kind

    def query_op(self):
        return stream_operation(self.ctx, self.variant, self.queries)

    def rewrite_op(self) -> RewriteDocOp:
        return RewriteDocOp(self.variant.system, self.url, self.variant.options, str(prepared(self.setup).path))

    @property
    def url(self) -> str:
        return self.ctx.endpoints[self.variant.server].url

    def quality(self) -> dict[str, Any]:
        with make_system(self.variant.system, self.variant.options).open(self.url) as engine:
            answers = [engine.search(q.term_a, q.term_b)[0] for q in self.queries[:self.quality_queries]]
        if not self.reference:
            self.reference = answers
        return agreement(self.reference, answers)

    def state(self) -> dict[str, Any]:
        with make_system(self.variant.system, self.variant.options).open(self.url) as engine:
            found = engine.write_state()
        readings = server_memory(self.ctx.endpoints[self.variant.server].pids, with_pss=True)
        return {**found, "server_pss_bytes": sum(r.pss_bytes or r.rss_bytes for r in readings) or None}

    def cleanup_op(self) -> CleanupDocsOp:
        return CleanupDocsOp(self.variant.system, self.url, self.variant.options)


def agreement(reference: list[list[int]], answers: list[list[int]]) -> dict[str, Any]:
    """Mean overlap@10 of ``answers`` with ``reference`` (query by query, over the larger of the
    two lists), and the share of queries answered identically."""
    overlaps = [len(set(a) & set(r)) / max(1, len(a), len(r)) for a, r in zip(answers, reference, strict=True)]
    same = [a == r for a, r in zip(answers, reference, strict=True)]
    return {"agreement_mean": float(np.mean(overlaps)) if overlaps else None,
            "identical_share": float(np.mean(same)) if same else None, "queries": len(answers)}


def writes_point(run: StudyRun, v: SearchVariant, setup: Setup, stream: str, fraction: float, labels: list[str],
                 timing: WritesTiming, repetition: int, quality_queries: int, rebuild: bool = True) -> RecordedRun:
    """One writes-while-querying point of ``v`` at ``timing``'s write rate (see the module): its
    writes run and its cleanup run. Each point's writers take their own order (the seed)."""
    rate, peaks = matched_rate(run.ctx, stream, fraction, labels)
    queries, params = stream_params(setup, v, stream)
    design = SearchWrites(run.ctx, setup, v, queries, quality_queries)
    params = {"experiment": EXPERIMENT, "variant": v.label, "rate": round(rate, 1), **params,
              "repetition": repetition, "fraction": fraction, "quality_queries": quality_queries, "rebuild": rebuild,
              **timing.params()}
    warmed: dict[str, Any] = {}

    def ready() -> None:
        verified(run.ctx, setup, v)
        if rebuild:  # the index as the load leaves it (the engines: one segment; Postgres: vacuumed)
            data = prepared(setup)
            with make_system(v.system).open(design.url) as engine:
                load_index(engine, data.chunks(engine), setup.dataset, data.corpus.num_documents)
        ensure_loaded(run.ctx, setup, v)
        warmed.update(warm_up(run.ctx, setup, v, again=rebuild))

    seed = run.seed * 1000 + repetition * 100 + int(timing.write_pct_per_min)
    return run_point(run.ctx, STUDY, v, design, timing, round(rate, 1), seed, params, ready,
                     tables=v.engine().sampled_tables,
                     extra={"peaks": {k: round(p, 1) for k, p in peaks.items()}, "warmup_before": warmed})
