"""Vector study points: the dataset's difficulty, each engine's build, the recall–QPS sweep.

Every point is a run record. The difficulty and build points run no load driver (an empty
summary and time series keep them valid, as a crash drill's); a sweep point runs a closed loop
of nearest-neighbour queries through ``runner.run_recorded``. Recall is a property of (index,
ef), not of the load: the sweep point at the profile's first client count scores every query of
the dataset once at its ef, untimed and on one connection, against the exact ground truth
(``datasets.vectors.recall_with_ties``), and the record carries it; the other client counts'
records are joined to it by (variant, ef).
"""

from __future__ import annotations

import time
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
from pglimits_core.studies.runner import Context, RecordedRun, open_record, run_recorded
from pglimits_core.workloads.vectors import engines

STUDY = "vectors"
K = 10


@dataclass(frozen=True)
class VectorsVariant:
    """``pgvector hnsw``, ``qdrant hnsw`` or ``pgvector exact`` (the perfect answer's cost)."""

    label: str
    system: str
    server: str
    exact: bool = False


VARIANTS = {v.label: v for v in (VectorsVariant("pgvector hnsw", "pgvector", "postgres"),
                                 VectorsVariant("qdrant hnsw", "qdrant", "qdrant"),
                                 VectorsVariant("pgvector exact", "pgvector", "postgres", exact=True))}


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
        return engines.build_tag(self.dataset_id, self.m, self.ef_construction)

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
def difficulty_point(ctx: Context, setup: Setup, lid_k: int, sample: int, seed: int) -> RecordedRun:
    """The dataset's difficulty (LID, relative contrast, the 10th/11th gap), once per study."""
    from pglimits_core.workloads.vectors.difficulty import difficulty

    def measure() -> dict[str, Any]:
        path, data = dataset(setup)
        started = time.perf_counter()
        found = difficulty(data.base, data.queries, k=K, lid_k=lid_k, sample=sample, epsilon=setup.epsilon)
        return {**found, "dataset_path": str(path), "seconds": time.perf_counter() - started}

    return _recorded(ctx, VARIANTS["pgvector hnsw"], "difficulty",
                     {**setup.params(), "lid_k": lid_k, "sample": sample}, seed, measure)


def build_point(ctx: Context, v: VectorsVariant, setup: Setup, repetition: int, seed: int,
                servers: dict[str, Any] | None = None, tagged: bool = False) -> RecordedRun:
    """Load and index the dataset from scratch; times, sizes and server memory after the build.
    ``tagged`` (Qdrant, for the filtered search): the points carry the filter attribute."""

    def measure() -> dict[str, Any]:
        _, data = dataset(setup)
        built = _build(ctx, v, setup, data.base, tagged)
        return {**built, **_footprint(ctx, v, servers or {}, setup, tagged)}

    experiment = "build_tagged" if tagged else "build"
    return _recorded(ctx, v, experiment, {**setup.params(), "repetition": repetition}, seed, measure)


def _collection(setup: Setup, tagged: bool) -> str:
    return engines.collection_name(setup.tag) + ("_tagged" if tagged else "")


def _build(ctx: Context, v: VectorsVariant, setup: Setup, base: np.ndarray, tagged: bool = False) -> dict[str, Any]:
    endpoint = ctx.endpoints[v.server]
    if v.system == "pgvector":
        return engines.pg_build(endpoint.url, base, setup.tag, setup.m, setup.ef_construction)
    return engines.qdrant_build(endpoint.url, endpoint.extra.get("grpc_port"), base, _collection(setup, tagged),
                                setup.m, setup.ef_construction, with_tag=tagged)


def _footprint(ctx: Context, v: VectorsVariant, servers: dict[str, Any], setup: Setup,
               tagged: bool = False) -> dict[str, Any]:
    """The server's memory after the build — PSS summed over its processes (shared memory such
    as Postgres's shared_buffers counted once, not once per process), RSS beside it — and, for
    Qdrant, the index on disk: its segments (vectors + HNSW graph), the WAL apart
    (pgvector's index size is ``pg_relation_size``, which also holds the vectors)."""
    found: dict[str, Any] = _memory(ctx.endpoints[v.server].pids)
    server = servers.get(v.server)
    if v.system == "qdrant" and server is not None:
        from pglimits_core.servers.storage import directory_bytes

        collection = Path(server.data_dir) / "storage" / "collections" / _collection(setup, tagged)
        shards = [p for p in collection.iterdir() if p.is_dir()] if collection.exists() else []
        found["index_bytes"] = sum(directory_bytes(s / "segments") for s in shards if (s / "segments").exists()) or None
        found["wal_bytes"] = sum(directory_bytes(s / "wal") for s in shards if (s / "wal").exists())
        found["index_bytes_is"] = "the collection's segments (vectors + HNSW graph), WAL apart"
    return found


def _memory(pids: tuple[int, ...]) -> dict[str, Any]:
    import psutil

    pss = rss = 0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for process in [root, *root.children(recursive=True)]:
                info = process.memory_full_info()
                pss += getattr(info, "pss", info.rss)
                rss += info.rss
        except psutil.Error:
            continue
    return {"server_pss_bytes": pss or None, "server_rss_bytes": rss or None}


def ensure_index(ctx: Context, v: VectorsVariant, setup: Setup, base: np.ndarray, tagged: bool = False) -> None:
    """The index this point queries exists (a resumed study may not have rebuilt it). pgvector's
    filter is computed from the id, so one table serves both searches; Qdrant's filtered search
    needs its tagged collection (built in place of the plain one: one collection in RAM)."""
    endpoint = ctx.endpoints[v.server]
    if v.system == "pgvector":
        if engines.pg_current_tag(endpoint.url) != setup.tag:
            engines.pg_build(endpoint.url, base, setup.tag, setup.m, setup.ef_construction)
        return
    if not engines.qdrant_has(endpoint.url, endpoint.extra.get("grpc_port"), _collection(setup, tagged), len(base)):
        _build(ctx, v, setup, base, tagged)


def answers(ctx: Context, v: VectorsVariant, setup: Setup, queries: np.ndarray, ef: int | None,
            below: int | None = None) -> list[list[int]]:
    endpoint = ctx.endpoints[v.server]
    if v.system == "pgvector":
        return engines.pg_answers(endpoint.url, queries, None if v.exact else ef, K, below)
    return engines.qdrant_answers(endpoint.url, endpoint.extra.get("grpc_port"), _collection(setup, below is not None),
                                  queries, ef, K, below)


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


def _op(ctx: Context, v: VectorsVariant, setup: Setup, path: Path, ef: int | None, below: int | None = None):
    endpoint = ctx.endpoints[v.server]
    if v.system == "pgvector":
        return engines.PgvectorQueryOp(endpoint.url, str(path), None if v.exact else ef, K, below)
    return engines.QdrantQueryOp(endpoint.url, endpoint.extra.get("grpc_port"), _collection(setup, below is not None),
                                 str(path), ef, K, below)


CLIENTS_USED = {"qdrant": "gRPC SearchPoints (qdrant-client channel, prebuilt requests)",
                "pgvector": "psycopg 3, binary vector parameter (%b), prepared"}


def sweep_point(ctx: Context, v: VectorsVariant, setup: Setup, ef: int | None, clients: int, repetition: int,
                with_recall: bool, duration_s: float, warmup_s: float, seed: int) -> RecordedRun:
    """``clients`` closed-loop workers query at ``ef`` for ``duration_s``; with ``with_recall``
    every query is first answered once, untimed, and scored against the exact truth."""

    def score(data) -> dict[str, Any]:
        return recall_outcome(data, answers(ctx, v, setup, data.queries, ef), setup.epsilon) if with_recall else {}

    params = {"ef": ef, "clients": clients, "repetition": repetition, "with_recall": with_recall}
    return _query_point(ctx, v, setup, "sweep", params, None, score, duration_s, warmup_s, seed)


def filtered_point(ctx: Context, v: VectorsVariant, setup: Setup, selectivity: int, ef: int, clients: int,
                   repetition: int, duration_s: float, warmup_s: float, seed: int) -> RecordedRun:
    """The search filtered to ``selectivity`` % of the vectors (``tag < selectivity``): recall
    against the exact *filtered* top 10, rows returned (pgvector can return fewer than 10), QPS."""

    def score(data) -> dict[str, Any]:
        mask = engines.filter_mask(len(data.base), selectivity)
        found = answers(ctx, v, setup, data.queries, ef, below=selectivity)
        return score_filtered(data, found, mask, setup.epsilon)

    params = {"selectivity_pct": selectivity, "ef": ef, "clients": clients, "repetition": repetition,
              "with_recall": True}
    return _query_point(ctx, v, setup, "filtered", params, selectivity, score, duration_s, warmup_s, seed)


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


def latency_point(ctx: Context, v: VectorsVariant, hnsw: list[VectorsVariant], setup: Setup, target: float,
                  fraction: float, workers: int, repetition: int, duration_s: float, warmup_s: float,
                  seed: int) -> RecordedRun:
    """Open loop at one offered rate for every engine, each at its own smallest ef reaching
    ``target`` recall: latency from the intended start (coordinated omission corrected)."""
    matched = matched_rate(ctx, hnsw, target, fraction)
    mine = matched["by_variant"][v.label]
    knobs = {"ef": mine["ef"], "clients": workers, "repetition": repetition, "target_recall": target,
             "rate_fraction": fraction, "rate": matched["rate"]}
    return _query_point(ctx, v, setup, "latency", knobs, None, lambda _data: {"matched": matched},
                        duration_s, warmup_s, seed, loop=OpenLoop(rate=matched["rate"], drain_s=2.0))


def _query_point(ctx: Context, v: VectorsVariant, setup: Setup, experiment: str, knobs: dict[str, Any],
                 below: int | None, score, duration_s: float, warmup_s: float, seed: int,
                 loop: Any = None) -> RecordedRun:
    path, data = dataset(setup)
    ef = knobs["ef"]
    spec = RunSpec(phases=[Phase("warmup", warmup_s, warmup=True), Phase("measure", duration_s)],
                   roles=[Role("client", _op(ctx, v, setup, path, ef, below), workers=knobs["clients"],
                               loop=loop or ClosedLoop())], seed=seed, start_method="fork")
    params = {"experiment": experiment, "variant": v.label, **setup.params(), **knobs, "client": CLIENTS_USED[v.system]}
    name = f"{experiment}:{v.label}"
    if reused := ctx.reuse(STUDY, v.system, name, {**params, "spec": spec.describe()}):
        return reused
    ensure_index(ctx, v, setup, data.base, tagged=below is not None)
    found = score(data)
    if v.system == "pgvector":
        found["plan"] = engines.pg_plan(ctx.endpoints[v.server].url, data.queries[0], None if v.exact else ef, K, below)
        uses_index = engines.INDEX in found["plan"]
        if uses_index == v.exact:
            raise PGLimitsError(f"{v.label} at ef={ef}: the plan {'uses' if uses_index else 'does not use'} the "
                                "HNSW index", "check the planner settings recorded in the plan")
    return run_recorded(ctx, STUDY, v.system, name, v.server, spec, params, after=lambda _result: found)


def check_ef(ef: list[int]) -> None:
    """An ef below k cannot return k candidates: a one-line error before anything runs."""
    low = [e for e in ef if e < K]
    if low:
        raise PGLimitsError(f"vectors.ef has {low[0]}, below k = {K}",
                            f"give every ef >= {K} (an HNSW search keeps ef candidates)")
