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
from typing import Any

import numpy as np

from pglimits_core.datasets.store import dataset_id, ensure_dataset, load_vectors
from pglimits_core.datasets.vectors import VectorSpec, recall_with_ties
from pglimits_core.errors import PGLimitsError
from pglimits_core.load import ClosedLoop, Phase, Role, RunSpec
from pglimits_core.record.manifest import new_manifest
from pglimits_core.record.rundir import RunDirectory, atomic_write_bytes, atomic_write_model, new_run_id
from pglimits_core.record.summary import Summary
from pglimits_core.record.timeseries import KEY_COLUMNS
from pglimits_core.studies import vectors_engines as engines
from pglimits_core.studies.runner import Context, RecordedRun, run_recorded

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


def dataset(setup: Setup):
    """The seeded dataset (built now if missing) and its directory."""
    path = ensure_dataset(setup.spec)
    return path, load_vectors(path)


# --- records without a load driver -------------------------------------------------------------
def _open_record(ctx: Context, v: VectorsVariant, name: str, params: dict[str, Any], seed: int) -> RunDirectory:
    description = ctx.describe_now(v.server)
    manifest = new_manifest(new_run_id(STUDY, v.system, name), STUDY, v.system, name, seed=seed,
                            params=params, servers={v.server: description}, host=ctx.host,
                            tuning_ledger=description.get("settings", {}).get("tuning_ledger", []),
                            harness_ceiling=ctx.ceilings.get(v.server, {}))
    return RunDirectory.create(manifest, ctx.runs_root)


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
    from pglimits_core.analysis.vectors_difficulty import difficulty

    def measure() -> dict[str, Any]:
        path, data = dataset(setup)
        started = time.perf_counter()
        found = difficulty(data.base, data.queries, k=K, lid_k=lid_k, sample=sample, epsilon=setup.epsilon)
        return {**found, "dataset_path": str(path), "seconds": time.perf_counter() - started}

    return _recorded(ctx, VARIANTS["pgvector hnsw"], "difficulty",
                     {**setup.params(), "lid_k": lid_k, "sample": sample}, seed, measure)


def build_point(ctx: Context, v: VectorsVariant, setup: Setup, repetition: int, seed: int,
                servers: dict[str, Any] | None = None) -> RecordedRun:
    """Load and index the dataset from scratch; times, sizes and server RSS after the build."""

    def measure() -> dict[str, Any]:
        _, data = dataset(setup)
        built = _build(ctx, v, setup, data.base)
        return {**built, **_footprint(ctx, v, servers or {}, setup)}

    return _recorded(ctx, v, "build", {**setup.params(), "repetition": repetition}, seed, measure)


def _build(ctx: Context, v: VectorsVariant, setup: Setup, base: np.ndarray) -> dict[str, Any]:
    endpoint = ctx.endpoints[v.server]
    if v.system == "pgvector":
        return engines.pg_build(endpoint.url, base, setup.tag, setup.m, setup.ef_construction)
    return engines.qdrant_build(endpoint.url, endpoint.extra.get("grpc_port"), base,
                                engines.collection_name(setup.tag), setup.m, setup.ef_construction)


def _footprint(ctx: Context, v: VectorsVariant, servers: dict[str, Any], setup: Setup) -> dict[str, Any]:
    """The server's resident memory (its processes and their children) and, for Qdrant, the
    collection's bytes on disk (pgvector's index size is ``pg_relation_size``)."""
    import psutil

    rss = 0
    for pid in ctx.endpoints[v.server].pids:
        try:
            process = psutil.Process(pid)
            rss += sum(p.memory_info().rss for p in [process, *process.children(recursive=True)])
        except psutil.Error:
            continue
    found: dict[str, Any] = {"server_rss_bytes": rss or None}
    server = servers.get(v.server)
    if v.system == "qdrant" and server is not None:
        from pglimits_core.servers.storage import directory_bytes

        collection = Path(server.data_dir) / "storage" / "collections" / engines.collection_name(setup.tag)
        found["index_bytes"] = directory_bytes(collection) if collection.exists() else None
        found["index_bytes_is"] = "the collection directory (vectors + HNSW graph + payload storage)"
    return found


def ensure_index(ctx: Context, v: VectorsVariant, setup: Setup, base: np.ndarray) -> None:
    """The index this point queries exists (a resumed study may not have rebuilt it)."""
    endpoint = ctx.endpoints[v.server]
    if v.system == "pgvector":
        if engines.pg_current_tag(endpoint.url) != setup.tag:
            engines.pg_build(endpoint.url, base, setup.tag, setup.m, setup.ef_construction)
        return
    name = engines.collection_name(setup.tag)
    if not engines.qdrant_has(endpoint.url, endpoint.extra.get("grpc_port"), name, len(base)):
        engines.qdrant_build(endpoint.url, endpoint.extra.get("grpc_port"), base, name, setup.m, setup.ef_construction)


def answers(ctx: Context, v: VectorsVariant, setup: Setup, queries: np.ndarray, ef: int | None) -> list[list[int]]:
    endpoint = ctx.endpoints[v.server]
    if v.system == "pgvector":
        return engines.pg_answers(endpoint.url, queries, None if v.exact else ef, K)
    return engines.qdrant_answers(endpoint.url, endpoint.extra.get("grpc_port"),
                                  engines.collection_name(setup.tag), queries, ef, K)


def recall_outcome(data, found: list[list[int]], epsilon: float) -> dict[str, Any]:
    """Mean recall@k with ties, the worst 5 % of queries (their mean, and the 5th percentile),
    rows returned."""
    per_query = recall_with_ties(found, data.base, data.queries, data.truth_scores, K, epsilon)
    worst = np.sort(per_query)[:max(1, int(np.ceil(0.05 * len(per_query))))]
    rows = np.array([len(f) for f in found])
    return {"recall_mean": float(per_query.mean()), "recall_worst5_mean": float(worst.mean()),
            "recall_p5": float(np.percentile(per_query, 5)), "recall_min": float(per_query.min()),
            "recall_queries": len(per_query), "rows_min": int(rows.min()), "rows_mean": float(rows.mean())}


def _op(ctx: Context, v: VectorsVariant, setup: Setup, path: Path, ef: int | None):
    endpoint = ctx.endpoints[v.server]
    if v.system == "pgvector":
        return engines.PgvectorQueryOp(endpoint.url, str(path), None if v.exact else ef, K)
    return engines.QdrantQueryOp(endpoint.url, endpoint.extra.get("grpc_port"), engines.collection_name(setup.tag),
                                 str(path), ef, K)


def sweep_point(ctx: Context, v: VectorsVariant, setup: Setup, ef: int | None, clients: int, repetition: int,
                with_recall: bool, duration_s: float, warmup_s: float, seed: int) -> RecordedRun:
    """``clients`` closed-loop workers query at ``ef`` for ``duration_s``; with ``with_recall``
    every query is first answered once, untimed, and scored against the exact truth."""
    path = ensure_dataset(setup.spec)
    spec = RunSpec(phases=[Phase("warmup", warmup_s, warmup=True), Phase("measure", duration_s)],
                   roles=[Role("client", _op(ctx, v, setup, path, ef), workers=clients, loop=ClosedLoop())],
                   seed=seed, start_method="fork")
    params = {"experiment": "sweep", "variant": v.label, **setup.params(), "ef": ef, "clients": clients,
              "repetition": repetition, "with_recall": with_recall,
              "client": "gRPC SearchPoints (qdrant-client channel, prebuilt requests)" if v.system == "qdrant" else
                        "psycopg 3, binary vector parameter (%b), prepared"}
    name = f"sweep:{v.label}"
    if reused := ctx.reuse(STUDY, v.system, name, {**params, "spec": spec.describe()}):
        return reused
    data = load_vectors(path)
    ensure_index(ctx, v, setup, data.base)
    found = recall_outcome(data, answers(ctx, v, setup, data.queries, ef), setup.epsilon) if with_recall else {}
    if v.system == "pgvector":
        found["plan"] = engines.pg_plan(ctx.endpoints[v.server].url, data.queries[0], None if v.exact else ef, K)
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
