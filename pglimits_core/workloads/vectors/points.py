"""Vector study points: the dataset's difficulty, each engine's build, the recall–QPS sweep.

Every point is a run record. The difficulty and build points run no load driver (an empty
summary and time series keep them valid, as a crash drill's); a sweep point runs a closed loop
of nearest-neighbour queries through ``runner.run_recorded``. Recall is a property of (index,
ef), not of the load: the sweep point at the profile's first client count scores every query of
the dataset once at its ef, untimed and on one connection, against the exact ground truth
(``datasets.vectors.recall_with_ties``), and the record carries it; the other client counts'
records are joined to it by (variant, ef).

Each engine is a ``systems/`` file behind ``systems.base.VectorSystem``; these points time its
build (the insert and the index build apart) and the load driver times its queries. A build is
recorded (``build_point``); a query point finds the index of its dataset already there (same
dataset id, m and ef_construction) or builds it unrecorded first, so a resumed study needs no
recorded build to measure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from pglimits_core.datasets.store import dataset_id, ensure_dataset, load_vectors, verify_dataset
from pglimits_core.datasets.vectors import VectorSpec, exact_top_k, recall_with_ties
from pglimits_core.errors import PGLimitsError
from pglimits_core.load import ClosedLoop, OpenLoop, Phase, Role, RunSpec
from pglimits_core.record.rundir import (
    RunDirectory,
    atomic_write_bytes,
    atomic_write_model,
)
from pglimits_core.record.summary import Summary
from pglimits_core.record.timeseries import KEY_COLUMNS
from pglimits_core.samplers.memory import server_memory
from pglimits_core.studies.runner import Context, RecordedRun, open_record, run_recorded
from pglimits_core.studies.study import StudyRun
from pglimits_core.studies.variant import Variant
from pglimits_core.workloads.vectors.ops import QueryOp
from pglimits_core.workloads.vectors.systems.base import Index, VectorSystem, filter_mask, index_tag
from pglimits_core.workloads.vectors.systems.registry import (
    make_system,
    system_class,
    variant_server,
)

STUDY = "vectors"
K = 10


class VectorsVariant(Variant):
    """``pgvector hnsw`` (PG 16, pgvector 0.6.2), ``qdrant hnsw``, ``pgvector exact`` (option
    ``exact``: no index, the perfect answer's cost), and on PG 17 with extensions (``postgres_ext``)
    ``pgvector 0.8 hnsw`` (the same index and query on pgvector 0.8.2), ``pgvector 0.8 hnsw
    iterative`` (its filtered scan with ``hnsw.iterative_scan = relaxed_order``: the rows come in
    roughly distance order, and recall counts ids, not their order) and ``pgvectorscale diskann``."""

    @property
    def server(self) -> str:
        return variant_server(self.system, self.options)

    @property
    def exact(self) -> bool:
        """An exact scan: it has no ef, and its answer is the truth."""
        return bool(self.options.get("exact", False))

    @property
    def system_class(self) -> type[VectorSystem]:
        return system_class(self.system)


EXT = {"server": "postgres_ext"}
VARIANTS = {v.label: v for v in (VectorsVariant("pgvector hnsw", "pgvector"),
                                 VectorsVariant("qdrant hnsw", "qdrant"),
                                 VectorsVariant("pgvector exact", "pgvector", {"exact": True}),
                                 VectorsVariant("pgvector 0.8 hnsw", "pgvector", EXT),
                                 VectorsVariant("pgvector 0.8 hnsw iterative", "pgvector",
                                                {**EXT, "iterative_scan": "relaxed_order"}),
                                 VectorsVariant("pgvectorscale diskann", "pgvectorscale"))}


@dataclass(frozen=True)
class Setup:
    """What every point of one study run shares: the dataset and the index parameters."""

    spec: VectorSpec
    m: int
    ef_construction: int
    epsilon: float

    @property
    def dataset_id(self) -> str:
        return dataset_id(self.spec)

    @property
    def tag(self) -> str:
        return index_tag(self.dataset_id, self.m, self.ef_construction)

    def index(self, tagged: bool = False) -> Index:
        return Index(self.tag, self.m, self.ef_construction, tagged)

    def params(self) -> dict[str, Any]:
        return {"dataset_id": self.dataset_id, "dataset": asdict(self.spec), "m": self.m,
                "ef_construction": self.ef_construction, "k": K, "recall_epsilon": self.epsilon}


_VERIFIED: set[Path] = set()


def dataset(setup: Setup):
    """The seeded dataset (built now if missing, every file's checksum verified once per process)
    and its directory: a damaged file would silently change the ground truth."""
    path = ensure_dataset(setup.spec)
    if path not in _VERIFIED:
        if problems := verify_dataset(path):
            raise PGLimitsError(f"dataset {path.name} fails verification: {problems[0]}",
                                f"delete {path} and rebuild it (pglimits datasets build --profile <profile>)")
        _VERIFIED.add(path)
    return path, load_vectors(path)


# --- records without a load driver -------------------------------------------------------------
def _open_record(ctx: Context, v: VectorsVariant, name: str, params: dict[str, Any], seed: int) -> RunDirectory:
    return open_record(ctx, STUDY, v.system, v.server, name, params, seed)


def _finish_record(run_dir: RunDirectory, outcome: dict[str, Any]) -> RecordedRun:
    import pandas as pd

    run_dir.manifest = run_dir.manifest.model_copy(update={"params": {**run_dir.manifest.params, "outcome": outcome}})
    atomic_write_model(run_dir.path / "summary.json",
                       Summary(run_id=run_dir.manifest.run_id, status="complete", entries=[]))
    atomic_write_bytes(run_dir.path / "timeseries.parquet", pd.DataFrame(columns=KEY_COLUMNS).to_parquet(index=False))
    return RecordedRun(run_dir.finish("complete"), None, "complete", None, outcome)


def _recorded(ctx: Context, v: VectorsVariant, experiment: str, params: dict[str, Any], seed: int,
              measure) -> RecordedRun:
    """A record of ``measure() -> outcome`` (no load driver); a point measured before an
    interruption is reused. An exception leaves the record failed, with its reason."""
    name = f"{experiment}:{v.label}"
    params = {"experiment": experiment, "variant": v.label, **params}
    if reused := ctx.reuse(STUDY, v.system, name, params):
        return reused
    with _open_record(ctx, v, name, params, seed) as run_dir:
        return _finish_record(run_dir, measure())


# --- points -----------------------------------------------------------------------------------
def difficulty_point(run: StudyRun, v: VectorsVariant, setup: Setup, lid_k: int, sample: int) -> RecordedRun:
    """The dataset's difficulty (LID, relative contrast, the 10th/11th gap), once per study,
    recorded under ``v`` (it needs no server state)."""
    from pglimits_core.workloads.vectors.difficulty import difficulty

    def measure() -> dict[str, Any]:
        path, data = dataset(setup)
        started = time.perf_counter()
        found = difficulty(data.base, data.queries, k=K, lid_k=lid_k, sample=sample, epsilon=setup.epsilon)
        return {**found, "dataset_path": str(path), "seconds": time.perf_counter() - started}

    return _recorded(run.ctx, v, "difficulty", {**setup.params(), "lid_k": lid_k, "sample": sample}, run.seed,
                     measure)


def build_point(run: StudyRun, v: VectorsVariant, setup: Setup, repetition: int, tagged: bool = False) -> RecordedRun:
    """Load and index the dataset from scratch; times, sizes and server memory after the build.
    ``tagged`` (a system whose filter needs its own build): the points carry the filter attribute."""

    def measure() -> dict[str, Any]:
        _, data = dataset(setup)
        with system_for(run.ctx, v, setup, tagged) as system:
            built = build_index(system, data.base)
        return {**built, **_footprint(run, v, system)}  # closed: our connection is no server memory

    experiment = "build_tagged" if tagged else "build"
    return _recorded(run.ctx, v, experiment, {**setup.params(), "repetition": repetition}, run.seed, measure)


def system_for(ctx: Context, v: VectorsVariant, setup: Setup, tagged: bool = False) -> VectorSystem:
    """``v``'s system on its server, for the index of ``setup`` (unopened)."""
    return make_system(v.system, ctx.endpoints[v.server], setup.index(tagged), v.label, **v.options)


def _seconds(step: Callable[..., Any], *args: Any) -> float:
    started = time.perf_counter()
    step(*args)
    return time.perf_counter() - started


def build_index(system: VectorSystem, base: np.ndarray) -> dict[str, Any]:
    """From an empty table/collection: the load (insert) and the index build timed apart, the
    rest untimed; what was built, read back."""
    system.reset(base.shape[1])
    load_s = _seconds(system.insert, base)
    build_s = _seconds(system.build)
    return {"load_s": load_s, "build_s": build_s, **system.settle(), **system.describe()}


def _footprint(run: StudyRun, v: VectorsVariant, system: VectorSystem) -> dict[str, Any]:
    """The server's memory after the build — PSS summed over its processes (shared memory such
    as Postgres's shared_buffers counted once, not once per process), RSS beside it — and the
    index on disk where the server does not say its size (Qdrant: its segments, the WAL apart;
    pgvector's index size is ``pg_relation_size``, which also holds the vectors)."""
    found: dict[str, Any] = server_memory_now(run.ctx.endpoints[v.server].pids)
    server = run.servers.get(v.server)
    if server is not None:
        found.update(system.storage(Path(server.data_dir)))
    return found


def server_memory_now(pids: tuple[int, ...]) -> dict[str, Any]:
    readings = server_memory(pids, with_pss=True)
    pss = sum(r.pss_bytes if r.pss_bytes is not None else r.rss_bytes for r in readings)
    rss = sum(r.rss_bytes for r in readings)
    return {"server_pss_bytes": pss or None, "server_rss_bytes": rss or None}


def ensure_index(system: VectorSystem, base: np.ndarray) -> None:
    """The index this point queries exists (a resumed study may not have rebuilt it): built
    unrecorded otherwise. An open ``system``."""
    if not system.has_index(len(base)):
        build_index(system, base)


def answers(system: VectorSystem, queries: np.ndarray) -> list[list[int]]:
    """Every query's answer at the search params set (untimed: the recall pass)."""
    return [system.search(request) for request in system.prepare(queries)]


def recall_outcome(data, found: list[list[int]], epsilon: float,
                   returned: list[list[int]] | None = None) -> dict[str, Any]:
    """Mean recall@k with ties, the worst 5 % of queries (their mean, and the 5th percentile),
    rows returned (``returned``: the raw answers, when ``found`` was cleaned of invalid ids)."""
    per_query = recall_with_ties(found, data.base, data.queries, data.truth_scores, K, epsilon)
    worst = np.sort(per_query)[:max(1, int(np.ceil(0.05 * len(per_query))))]
    rows = np.array([len(f) for f in (returned if returned is not None else found)])
    return {"short_answers": int((rows < K).sum()), "recall_mean": float(per_query.mean()), "recall_worst5_mean": float(worst.mean()),
            "recall_p5": float(np.percentile(per_query, 5)), "recall_min": float(per_query.min()),
            "recall_queries": len(per_query), "rows_min": int(rows.min()), "rows_mean": float(rows.mean())}


def recall_score(setup: Setup, recall_queries: int | None = None) -> Callable[[Any, VectorSystem], dict[str, Any]]:
    """A query point's ``score``: every query (or the first ``recall_queries``) answered once,
    untimed, and scored against the exact truth."""

    def score(data, system: VectorSystem) -> dict[str, Any]:
        scored = _first_queries(data, recall_queries)
        return recall_outcome(scored, answers(system, scored.queries), setup.epsilon)

    return score


def sweep_point(run: StudyRun, v: VectorsVariant, setup: Setup, ef: int | None, clients: int, repetition: int,
                with_recall: bool, duration_s: float, warmup_s: float, recall_queries: int | None = None,
                recorded_as: str = "sweep", extra_params: dict[str, Any] | None = None) -> RecordedRun:
    """``clients`` closed-loop workers query at ``ef`` for ``duration_s``; with ``with_recall``
    recall is scored first (``recall_score``). ``recorded_as``: the experiment of the record (the
    capacity ceiling runs this same point), ``extra_params`` added to its params."""
    score = recall_score(setup, recall_queries) if with_recall else (lambda _data, _system: {})
    params = {"ef": ef, "clients": clients, "repetition": repetition, "with_recall": with_recall,
              **(extra_params or {})}
    if recall_queries is not None:
        params["recall_queries"] = recall_queries
    return _query_point(run, v, setup, recorded_as, params, None, score, duration_s, warmup_s)


def filtered_point(run: StudyRun, v: VectorsVariant, setup: Setup, selectivity_pct: int, ef: int, clients: int,
                   repetition: int, duration_s: float, warmup_s: float,
                   recall_queries: int | None = None) -> RecordedRun:
    """The search filtered to ``selectivity_pct`` % of the vectors (``tag < selectivity_pct``):
    recall against the exact *filtered* top 10 (over the first ``recall_queries`` queries; None:
    all — a slow filtered plan answers them one by one, untimed), rows returned (pgvector can
    return fewer), QPS."""

    def score(data, system: VectorSystem) -> dict[str, Any]:
        mask = filter_mask(len(data.base), selectivity_pct)
        scored = _first_queries(data, recall_queries)
        return score_filtered(scored, answers(system, scored.queries), mask, setup.epsilon)

    params = {"selectivity_pct": selectivity_pct, "ef": ef, "clients": clients, "repetition": repetition,
              "with_recall": True, "recall_queries": recall_queries}
    return _query_point(run, v, setup, "filtered", params, selectivity_pct, score, duration_s, warmup_s)


def _first_queries(data, n: int | None):
    """The dataset with only its first ``n`` queries and their exact answers (None: all of it)."""
    if n is None:
        return data
    return SimpleNamespace(base=data.base, queries=data.queries[:n], truth_scores=data.truth_scores[:n])


def score_filtered(data, found: list[list[int]], mask: np.ndarray, epsilon: float) -> dict[str, Any]:
    """Recall of filtered answers against the exact top k *among the vectors passing the filter*;
    an id outside the filter is wrong whatever its distance (counted as a violation, never a hit);
    a short answer is scored over k and counted in ``short_answers``."""
    kept = np.flatnonzero(mask)
    _, truth_scores = exact_top_k(data.base[kept], data.queries, K)
    violations = sum(int(not mask[i]) for row in found for i in row)
    valid = [[i for i in row if mask[i]] for row in found]
    filtered = SimpleNamespace(base=data.base, queries=data.queries, truth_scores=truth_scores)
    return {**recall_outcome(filtered, valid, epsilon, returned=found), "filter_violations": violations,
            "filter_kept": int(mask.sum())}


def matched_rate(ctx: Context, hnsw: list[VectorsVariant], target: float, fraction: float) -> dict[str, Any]:
    """From this study's sweep records (the same numbers as its tables): each engine's smallest ef
    reaching ``target`` mean recall, and one offered rate for all, ``fraction`` of the lowest
    closed-loop QPS among them there (at the sweep's largest client count): a rate every engine
    sustains at that recall. An engine that never reached the target leaves no matched rate."""
    from pglimits_core.record.records import load_records
    from pglimits_core.workloads.vectors.tables import sweep_table, vectors_frame

    sweep = sweep_table(vectors_frame(load_records(STUDY, ctx.runs_root)))
    chosen: dict[str, Any] = {}
    for v in hnsw:
        rows = sweep[(sweep.variant == v.label) & (sweep.recall_mean >= target)] if len(sweep) else sweep
        if rows.empty:
            raise PGLimitsError(f"{v.label} reached no recall >= {target} in this study's sweep: no matched rate",
                                "run the sweep first (same runs directory), or widen its ef range")
        top = rows[rows.clients == rows.clients.max()].sort_values("ef").iloc[0]
        chosen[v.label] = {"ef": int(top.ef), "recall_mean": float(top.recall_mean), "qps": float(top.qps),
                           "clients": int(top.clients)}
    rate = round(fraction * min(c["qps"] for c in chosen.values()), 1)
    return {"rate": rate, "by_variant": chosen}


def latency_point(run: StudyRun, v: VectorsVariant, setup: Setup, hnsw: list[VectorsVariant], target_recall: float,
                  fraction: float, workers: int, repetition: int, duration_s: float, warmup_s: float) -> RecordedRun:
    """Open loop at one offered rate for every engine, each at its own smallest ef reaching
    ``target_recall``: latency from the intended start (coordinated omission corrected)."""
    matched = matched_rate(run.ctx, hnsw, target_recall, fraction)
    knobs = {"repetition": repetition, "target_recall": target_recall, "rate_fraction": fraction,
             "rate": matched["rate"]}
    return open_loop_point(run, v, setup, matched["by_variant"][v.label]["ef"], matched["rate"], workers, duration_s,
                           warmup_s, extra_params=knobs, score=lambda _data, _system: {"matched": matched})


def open_loop_point(run: StudyRun, v: VectorsVariant, setup: Setup, ef: int, rate: float, workers: int,
                    duration_s: float, warmup_s: float, recorded_as: str = "latency",
                    extra_params: dict[str, Any] | None = None, score: Any = None) -> RecordedRun:
    """``workers`` open-loop workers offer an absolute ``rate`` (queries/s) at ``ef``: latency from
    the intended start (coordinated omission corrected); ``score(data, system)``, if given, runs
    first, untimed, into the record's outcome."""
    knobs = {"ef": ef, "clients": workers, **(extra_params or {})}
    return _query_point(run, v, setup, recorded_as, knobs, None, score or (lambda _data, _system: {}),
                        duration_s, warmup_s, loop=OpenLoop(rate=rate, drain_s=2.0))


def _query_point(run: StudyRun, v: VectorsVariant, setup: Setup, experiment: str, knobs: dict[str, Any],
                 below: int | None, score, duration_s: float, warmup_s: float, loop: Any = None) -> RecordedRun:
    """``knobs["clients"]`` workers query at ``knobs["ef"]`` (filtered to ``tag < below`` when
    given) under ``loop``; first, untimed, the index is ensured and ``score(data, system)`` and
    the server's plan of one query go into the record."""
    path, data = dataset(setup)
    ef, tagged = knobs["ef"], below is not None
    op = QueryOp(system_for(run.ctx, v, setup, tagged), str(path), ef, K, below)
    spec = RunSpec(phases=[Phase("warmup", warmup_s, warmup=True), Phase("measure", duration_s)],
                   roles=[Role("client", op, workers=knobs["clients"], loop=loop or ClosedLoop())],
                   seed=run.seed, start_method="fork")
    params = {"experiment": experiment, "variant": v.label, **setup.params(), **knobs,
              "client": v.system_class.query_client}
    name = f"{experiment}:{v.label}"
    if reused := run.ctx.reuse(STUDY, v.system, name, {**params, "spec": spec.describe()}):
        return reused
    with system_for(run.ctx, v, setup, tagged) as system:
        ensure_index(system, data.base)
        system.set_search_params(ef, K, below)
        found = score(data, system)
        found.update(system.search_plan(data.queries[0]))
    return run_recorded(run.ctx, STUDY, v.system, name, v.server, spec, params, after=lambda _result: found)


def check_ef(ef: list[int]) -> None:
    """An ef below k cannot return k candidates: a one-line error before anything runs."""
    low = [e for e in ef if e < K]
    if low:
        raise PGLimitsError(f"vectors.ef has {low[0]}, below k = {K}",
                            f"give every ef >= {K} (an HNSW search keeps ef candidates)")
