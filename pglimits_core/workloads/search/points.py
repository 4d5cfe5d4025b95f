"""Search study points: load + index, correctness (and ranking agreement), closed-loop throughput
per query stream, open-loop latency at matched rates.

Every point is a run record. Load and correctness run no load driver (an empty summary and time
series keep them valid, as a crash drill's); throughput, crossover and latency points run the
load driver through ``runner.run_recorded``. The corpus, its queries with exact match sets and the
bulk payloads are prepared once per study process (``prepared``); the dataset is checked against
its manifest first, and a dataset that fails is one line naming the fix.

Correctness comes first: each variant's correctness point checks every query (match count
against the exact count, the top-10 against the exact match set) and a variant with any
disagreement is not measured — its throughput and latency points fail with that reason.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from pglimits_core.datasets.corpus import Corpus, CorpusSpec
from pglimits_core.datasets.store import (
    dataset_dir,
    dataset_id,
    ensure_dataset,
    load_corpus,
    verify_dataset,
)
from pglimits_core.errors import PGLimitsError
from pglimits_core.load import ClosedLoop, OpenLoop, Phase, Role, RunSpec
from pglimits_core.record.manifest import new_manifest
from pglimits_core.record.rundir import (
    RunDirectory,
    atomic_write_bytes,
    atomic_write_model,
    new_run_id,
)
from pglimits_core.record.summary import Summary
from pglimits_core.record.timeseries import KEY_COLUMNS
from pglimits_core.studies.runner import Context, RecordedRun, run_recorded
from pglimits_core.workloads.search import engines
from pglimits_core.workloads.search.bm25 import Bm25, agreement, tie_aware_agreement
from pglimits_core.workloads.search.engines import SearchVariant
from pglimits_core.workloads.search.ops import SearchOp
from pglimits_core.workloads.search.queries import K, QuerySet, SearchQuery, build_query_set

STUDY = "search"
LOAD_LABELS = {"pg_gin": "pg_gin", "elasticsearch": "elasticsearch", "opensearch": "opensearch"}
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Setup:
    """What every point of one study run shares: the corpus spec, the seed, the crossover's
    query draw and the bulk batch size."""

    spec: CorpusSpec
    profile: str
    seed: int
    per_decade: int | None = None
    top_fraction: float = 0.2
    batch_docs: int = 5000
    warmup_s: float = 5.0

    @property
    def dataset(self) -> str:
        return dataset_id(self.spec)

    def params(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "documents": self.spec.documents}


@dataclass
class Prepared:
    """The corpus and everything derived from it, built once per study process."""

    setup: Setup
    path: Path
    corpus: Corpus
    queries: QuerySet
    _chunks: dict[str, list[bytes]] = field(default_factory=dict)

    @cached_property
    def bm25(self) -> Bm25:
        return Bm25.of(self.corpus)

    def chunks(self, system: str) -> list[bytes]:
        """The bulk payloads for ``system``, encoded before any clock starts."""
        kind = "copy" if system == "pg_gin" else "bulk"
        if kind not in self._chunks:
            texts = (self.corpus.text(d) for d in range(self.corpus.num_documents))
            encode = engines.copy_chunks if kind == "copy" else engines.bulk_chunks
            self._chunks[kind] = encode(texts, self.setup.batch_docs)
        return self._chunks[kind]


_PREPARED: dict[tuple[Setup, Path], Prepared] = {}


def prepared(setup: Setup) -> Prepared:
    """The verified dataset and its queries (built now if missing; a damaged dataset stops the
    study with the fix). Verified once per study process and dataset directory."""
    key = (setup, dataset_dir(setup.spec))
    if key in _PREPARED:
        return _PREPARED[key]
    path = ensure_dataset(setup.spec, progress=lambda message: print(f"search: {message}", file=sys.stderr))
    problems = verify_dataset(path)
    if problems:
        raise PGLimitsError(f"dataset {path.name} fails verification: {problems[0]}",
                            f"delete {path} and rebuild it: make datasets PROFILE={setup.profile}")
    corpus = load_corpus(path)
    queries = build_query_set(corpus, setup.per_decade, setup.top_fraction, setup.seed)
    _PREPARED.clear()  # one study's corpus at a time: the bulk payloads of the full corpus are large
    _PREPARED[key] = Prepared(setup, path, corpus, queries)
    return _PREPARED[key]


# --- records without a load driver -------------------------------------------------------------
def _recorded(ctx: Context, system: str, server: str, name: str, params: dict[str, Any], seed: int,
              measure) -> RecordedRun:
    """A record of ``measure() -> outcome``; a point measured before an interruption is reused.
    An exception leaves the record failed, with its reason."""
    if reused := ctx.reuse(STUDY, system, name, params):
        return reused
    description = ctx.describe_now(server)
    manifest = new_manifest(new_run_id(STUDY, system, name), STUDY, system, name, seed=seed, params=params,
                            servers={server: description}, host=ctx.host,
                            tuning_ledger=description.get("settings", {}).get("tuning_ledger", []),
                            harness_ceiling=ctx.ceilings.get(server, {}))
    with RunDirectory.create(manifest, ctx.runs_root) as run_dir:
        outcome = measure()
        run_dir.manifest = run_dir.manifest.model_copy(update={"params": {**params, "outcome": outcome}})
        atomic_write_model(run_dir.path / "summary.json",
                           Summary(run_id=run_dir.manifest.run_id, status="complete", entries=[]))
        import pandas as pd

        atomic_write_bytes(run_dir.path / "timeseries.parquet", pd.DataFrame(columns=KEY_COLUMNS).to_parquet(index=False))
        return RecordedRun(run_dir.finish("complete"), None, "complete", None, outcome)


# --- load and index ------------------------------------------------------------------------------
def load_point(ctx: Context, setup: Setup, system: str, repetition: int, seed: int) -> RecordedRun:
    """Drop and rebuild ``system``'s index from the corpus, timed: bulk load, index build,
    settle; then documents, sizes on disk, server memory, and CPU spent by server and client."""
    server = engines.SERVERS[system]
    params = {"experiment": "load", "variant": LOAD_LABELS[system], **setup.params(),
              "batch_docs": setup.batch_docs, "repetition": repetition}
    name = f"load:{LOAD_LABELS[system]}"
    reused = ctx.reuse(STUDY, system, name, params)
    if reused:
        ensure_loaded(ctx, setup, system)
        return reused

    def measure() -> dict[str, Any]:
        data = prepared(setup)
        url = ctx.endpoints[server].url
        if system in engines.LUCENE:
            product_check(system, url)
        chunks = data.chunks(system)
        engine = engines.open_engine(system, url)
        try:
            before = _cpu_seconds(ctx.endpoints[server].pids), time.process_time()
            started = time.perf_counter()
            times = engine.load(chunks, setup.dataset, data.corpus.num_documents)
            total_s = time.perf_counter() - started
            server_cpu_s = _cpu_seconds(ctx.endpoints[server].pids) - before[0]
            client_cpu_s = time.process_time() - before[1]
            documents = engine.documents()
            if documents != data.corpus.num_documents:
                raise PGLimitsError(f"{system} holds {documents} documents after the load, "
                                    f"the corpus has {data.corpus.num_documents}", "check the server log")
            return {**{k: round(v, 4) for k, v in times.items()}, "total_s": round(total_s, 4),
                    "documents": documents, "bulk_requests": len(chunks),
                    "bulk_bytes": sum(len(c) for c in chunks),
                    "docs_per_s_bulk": documents / times["bulk_load_s"],
                    "docs_per_s_total": documents / (times["bulk_load_s"] + times["index_build_s"]),
                    "server_cpu_s": round(server_cpu_s, 3), "client_cpu_s": round(client_cpu_s, 3),
                    **engine.sizes(), **server_memory(ctx.endpoints[server].pids),
                    "index": engine.describe(), "client": "study process, one connection, payloads encoded before timing"}
        finally:
            engine.close()

    return _recorded(ctx, system, server, name, params, seed, measure)


def product_check(system: str, url: str) -> None:
    """The vendor's own client accepts the server (elasticsearch-py refuses OpenSearch)."""
    from pglimits_core.servers.search_clients import search_client_for

    search_client_for(system, url).close()


def ensure_loaded(ctx: Context, setup: Setup, system: str) -> None:
    """The index this point queries holds the study's corpus (a resumed study starts from fresh
    servers): if not, load it now, untimed."""
    data = prepared(setup)
    engine = engines.open_engine(system, ctx.endpoints[engines.SERVERS[system]].url)
    try:
        if not engine.loaded(setup.dataset, data.corpus.num_documents):
            print(f"search: loading {system} (untimed: its load record exists)", file=sys.stderr)
            engine.load(data.chunks(system), setup.dataset, data.corpus.num_documents)
    finally:
        engine.close()


def _process_tree(pids) -> list[Any]:
    import psutil

    found = []
    for pid in pids:
        try:
            root = psutil.Process(pid)
            found += [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
    return found


def _cpu_seconds(pids) -> float:
    import psutil

    total = 0.0
    for process in _process_tree(pids):
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            continue
    return total


def server_memory(pids) -> dict[str, Any]:
    """Resident memory of the server's processes: RSS summed, the largest one, and PSS summed
    (shared pages split between the processes sharing them: Postgres backends all map
    shared_buffers, so their RSS sum overstates it)."""
    import psutil

    rss, pss = [], []
    for process in _process_tree(pids):
        try:
            info = process.memory_full_info()
            rss.append(info.rss)
            pss.append(getattr(info, "pss", 0))
        except psutil.Error:
            continue
    return {"server_rss_bytes": sum(rss) or None, "server_rss_max_bytes": max(rss, default=0) or None,
            "server_pss_bytes": sum(pss) or None, "server_processes": len(rss)}


# --- correctness and ranking agreement -----------------------------------------------------------
def answer(engine: Any, v: SearchVariant, q: SearchQuery) -> tuple[int, list[int], dict[str, Any] | None]:
    """The match count and the measured query's ids (+ ``hits.total`` for the Lucene engines)."""
    if v.lucene:
        found = engine.search(q.term_a, q.term_b, v.options["operator"], v.options["track_total_hits"])
        return engine.count(q.term_a, q.term_b, v.options["operator"]), found["ids"], found["total"]
    return engine.count(q.term_a, q.term_b), engine.top(q.term_a, q.term_b, v.ranked), None


def measured_query(engine: Any, v: SearchVariant, q: SearchQuery) -> list[int]:
    """The ids of the query ``v`` runs in its timed points."""
    if v.lucene:
        return engine.search(q.term_a, q.term_b, v.options["operator"], v.options["track_total_hits"])["ids"]
    return engine.top(q.term_a, q.term_b, v.ranked)


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


def correctness_point(ctx: Context, setup: Setup, v: SearchVariant, seed: int) -> RecordedRun:
    """Every query of the study on ``v``: match count vs the exact count, top-10 within the
    exact match set; and how the top-10 agrees with the exact BM25 top-10 (also tie-aware)."""
    params = {"experiment": "correctness", "variant": v.label, "options": v.options, **setup.params(),
              "query": v.query_template()}
    name = f"correctness:{v.label}"

    def measure() -> dict[str, Any]:
        data = prepared(setup)
        ensure_loaded(ctx, setup, v.system)
        engine = engines.open_engine(v.system, ctx.endpoints[v.server].url, v.options)
        try:
            return check_all(engine, v, data)
        finally:
            engine.close()

    return _recorded(ctx, v.system, v.server, name, params, seed, measure)


def check_all(engine: Any, v: SearchVariant, data: Prepared) -> dict[str, Any]:
    """The correctness outcome over every query of ``data`` (see ``correctness_point``)."""
    started = time.perf_counter()
    per_query, examples, by_group = [], [], {}
    for q in data.queries.queries:
        truth = data.queries.truth[q.index]
        count, ids, total = answer(engine, v, q)
        problem = check_answer(q, truth, count, ids)
        exact_top, scores = data.bm25.top((q.term_a, q.term_b), truth, K)
        row = {"i": q.index, "group": q.group, "matches": q.matches, "count": count, "top": ids,
               "ok": not problem,
               "bm25_overlap": agreement(ids, exact_top, q.expected_hits),
               "bm25_tie_aware": tie_aware_agreement(ids, truth, scores, q.expected_hits)}
        if total is not None:
            row["total"] = total
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
            "total_relation_gte": inexact if v.lucene else None,
            "track_total_hits": v.options.get("track_total_hits"),
            "bm25": {"k1": 1.2, "b": 0.75, "what": "exact BM25 over the corpus (Lucene's formula, exact lengths)"},
            "queries": per_query, "seconds": round(time.perf_counter() - started, 3)}


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
            raise PGLimitsError(f"{v.label} answered {outcome.get('disagreed')} of {outcome.get('checked')} "
                                f"queries wrongly in the correctness check: not measured",
                                "see its correctness record (a match with OR semantics, another analyzer?)")
    raise PGLimitsError(f"{v.label} has no complete correctness record: not measured",
                        "its correctness point failed or was not run; see the study's failures")


# --- throughput, crossover, latency ------------------------------------------------------------
def stream_params(setup: Setup, v: SearchVariant, stream: str) -> tuple[list[SearchQuery], dict[str, Any]]:
    data = prepared(setup)
    queries = data.queries.stream(stream, setup.seed)
    return queries, {"stream": stream, "queries": len(queries), "median_matches": data.queries.median_matches(stream),
                     "query": v.query_template(), "options": v.options, **setup.params()}


def _operation(ctx: Context, v: SearchVariant, queries: list[SearchQuery]) -> SearchOp:
    return SearchOp(v.system, ctx.endpoints[v.server].url, v.options,
                    [(q.term_a, q.term_b, q.expected_hits) for q in queries])


def _phases(warmup_s: float, duration_s: float) -> list[Phase]:
    return [Phase("warmup", warmup_s, warmup=True), Phase("measure", duration_s)]


def throughput_point(ctx: Context, setup: Setup, v: SearchVariant, stream: str, clients: int,
                     duration_s: float, warmup_s: float, seed: int, experiment: str = "throughput") -> RecordedRun:
    """Closed loop: ``clients`` worker processes run ``stream`` back to back."""
    queries, params = stream_params(setup, v, stream)
    params = {"experiment": experiment, "variant": v.label, "clients": clients, **params}
    spec = RunSpec(phases=_phases(warmup_s, duration_s),
                   roles=[Role("client", _operation(ctx, v, queries), workers=clients, loop=ClosedLoop(idle_sleep_s=0))],
                   seed=seed, start_method="fork")
    return _measured(ctx, setup, v, experiment, spec, params)


def _measured(ctx: Context, setup: Setup, v: SearchVariant, experiment: str, spec: RunSpec,
              params: dict[str, Any]) -> RecordedRun:
    name = f"{experiment}:{v.label}"
    if reused := ctx.reuse(STUDY, v.system, name, {**params, "spec": spec.describe()}):
        return reused
    verified(ctx, setup, v)
    ensure_loaded(ctx, setup, v.system)
    warmed = warm_up(ctx, setup, v)
    tables = [engines.TABLE] if v.system == "pg_gin" else None
    return run_recorded(ctx, STUDY, v.system, name, v.server, spec, params, tables=tables,
                        after=lambda _result: {"warmup_before": warmed})


_WARM: set[tuple[str, str, str]] = set()


def warm_up(ctx: Context, setup: Setup, v: SearchVariant) -> dict[str, Any]:
    """Before ``v``'s first timed point on this server: every query of the study back to back on
    one connection for ``setup.warmup_s`` (untimed), so the JVMs have compiled their hot paths
    and every system's caches hold the index. Returns what it did ({} when already warm)."""
    key = (ctx.endpoints[v.server].url, v.label, setup.dataset)
    if key in _WARM or setup.warmup_s <= 0:
        return {}
    data = prepared(setup)
    engine = engines.open_engine(v.system, ctx.endpoints[v.server].url, v.options)
    started, done = time.perf_counter(), 0
    try:
        while time.perf_counter() - started < setup.warmup_s:
            for q in data.queries.queries:
                measured_query(engine, v, q)
                done += 1
                if time.perf_counter() - started >= setup.warmup_s:
                    break
    finally:
        engine.close()
    _WARM.add(key)
    return {"seconds": round(time.perf_counter() - started, 2), "queries": done}


def matched_rate(ctx: Context, stream: str, fraction: float, labels: list[str]) -> tuple[float, dict[str, float]]:
    """``fraction`` of the slower system's closed-loop peak in ``stream``: each variant's peak
    is its best client count's median qps over this run's throughput records; the slowest
    variant of ``labels`` sets the rate, so every system is offered a rate it sustains."""
    from pglimits_core.record.records import load_records
    from pglimits_core.workloads.search.tables import peak_qps

    peaks = peak_qps(load_records(STUDY, ctx.runs_root), stream, labels)
    missing = [label for label in labels if label not in peaks]
    if missing:
        raise PGLimitsError(f"no throughput record of {missing[0]} in stream {stream!r} to match a rate to",
                            "keep the stream and the variant in search.throughput")
    return fraction * min(peaks.values()), peaks


def latency_point(ctx: Context, setup: Setup, v: SearchVariant, stream: str, fraction: float, workers: int,
                  duration_s: float, warmup_s: float, seed: int, labels: list[str]) -> RecordedRun:
    """Open loop at ``fraction`` of the slower system's peak in ``stream`` (the same offered rate
    for every system), latency from the intended start."""
    rate, peaks = matched_rate(ctx, stream, fraction, labels)
    queries, params = stream_params(setup, v, stream)
    params = {"experiment": "latency", "variant": v.label, "fraction": fraction, "rate": round(rate, 1),
              "workers": workers, "peaks": {k: round(p, 1) for k, p in sorted(peaks.items())}, **params}
    spec = RunSpec(phases=_phases(warmup_s, duration_s),
                   roles=[Role("client", _operation(ctx, v, queries), workers=workers,
                               loop=OpenLoop(rate=round(rate, 1), drain_s=2.0))],
                   seed=seed, start_method="fork")
    return _measured(ctx, setup, v, "latency", spec, params)
