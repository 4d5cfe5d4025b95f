"""Loading, indexing and querying the two vector engines, with every setting read back.

- **pgvector**: table ``vectors_items(id int4, embedding vector(dim))``, loaded by binary
  ``COPY`` through pgvector-python's psycopg adapter, then ``CREATE INDEX ... USING hnsw
  (embedding vector_ip_ops) WITH (m, ef_construction)``; queried with ``ORDER BY embedding <#>
  %b LIMIT k`` (the vector sent in binary) after ``SET hnsw.ef_search``. The exact scan is the
  same statement with index scans off: a sequential scan with a top-k sort, a perfect answer.
- **Qdrant**: one collection, ``Distance.DOT`` (unit vectors: the same order as pgvector's
  inner product), HNSW m / ef_construct, vectors and graph in RAM; upserted with indexing off,
  then indexing on and measured only once the collection is green with every vector indexed;
  queried by gRPC (qdrant-client's channel, ``prefer_grpc``) with prebuilt ``SearchPoints``
  requests carrying ``hnsw_ef``.

A build is recorded (``vectors.build_point``); a sweep point finds the index of its dataset
already there (same dataset id, m and ef_construction in the table comment / collection name)
or builds it unrecorded first, so a resumed study needs no recorded build to measure.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from pglimits_core.errors import PGLimitsError

TABLE = "vectors_items"
INDEX = "vectors_items_hnsw"
COPY_ROWS = 2_000
UPSERT_BATCH = 1_000
OPTIMIZER_TIMEOUT_S = 1_800.0
OUT_OF_MEMORY_NOTICE = "no longer fits into maintenance_work_mem"
#: The filtered search's attribute: ``tag = id % 100``, so ``tag < p`` keeps p % of the vectors,
#: spread evenly over the clusters (ids are in generation order, which is random over clusters).
FILTER_BUCKETS = 100
TAG = "tag"


def filter_mask(count: int, below: int) -> np.ndarray:
    """Which vector ids pass the filter ``tag < below``."""
    return (np.arange(count) % FILTER_BUCKETS) < below


def build_tag(dataset_id: str, m: int, ef_construction: int) -> str:
    return f"{dataset_id}-m{m}-efc{ef_construction}"


def collection_name(tag: str) -> str:
    return f"vectors_{tag.replace('-', '_')}"


def pg_connect(url: str):
    import psycopg
    from pgvector.psycopg import register_vector

    conn = psycopg.connect(url, autocommit=True)
    register_vector(conn)
    return conn


def pg_set_search(conn, ef: int | None) -> None:
    """``ef`` None: the exact scan (index scans off, so the planner must sort every row)."""
    if ef is None:
        conn.execute("SET enable_indexscan = off")
        conn.execute("SET enable_bitmapscan = off")
    else:
        conn.execute(f"SET hnsw.ef_search = {int(ef)}")


def pg_query_sql(k: int, below: int | None = None) -> str:
    """The nearest-neighbour statement; with ``below``, filtered by ``tag < below`` where the tag
    is computed from the id (``mod(id, 100)``): pgvector 0.6.2 applies a WHERE clause to the rows
    its HNSW scan returns (at most ef_search of them), so a selective filter returns fewer rows."""
    where = f"WHERE mod(id, {FILTER_BUCKETS}) < {int(below)} " if below is not None else ""
    return f"SELECT id FROM {TABLE} {where}ORDER BY embedding <#> %b LIMIT {int(k)}"


def pg_current_tag(url: str) -> str | None:
    with pg_connect(url) as conn:
        row = conn.execute("SELECT obj_description(to_regclass(%s), 'pg_class')", (TABLE,)).fetchone()
        has_index = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (INDEX,)).fetchone()[0]
    return row[0] if row and has_index else None


def pg_build(url: str, base: np.ndarray, tag: str, m: int, ef_construction: int) -> dict[str, Any]:
    """Drop, create, COPY (binary), index; times, sizes and every setting that shapes the build."""
    from pgvector.psycopg import register_vector  # noqa: F401  (pg_connect registers it)

    notices: list[str] = []
    with pg_connect(url) as conn:
        conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        conn.execute(f"CREATE TABLE {TABLE} (id int4 NOT NULL, embedding vector({base.shape[1]}) NOT NULL)")
        started = time.perf_counter()
        with conn.cursor() as cur, cur.copy(f"COPY {TABLE} (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "vector"])
            for start in range(0, len(base), COPY_ROWS):
                rows = np.asarray(base[start:start + COPY_ROWS], dtype=np.float32)
                for offset, vector in enumerate(rows):
                    copy.write_row((start + offset, vector))
        load_s = time.perf_counter() - started
        settings = {name: conn.execute(f"SHOW {name}").fetchone()[0]
                    for name in ("maintenance_work_mem", "max_parallel_maintenance_workers",
                                 "max_parallel_workers", "max_worker_processes", "shared_buffers")}
        started = time.perf_counter()
        conn.execute(f"CREATE INDEX {INDEX} ON {TABLE} USING hnsw (embedding vector_ip_ops) "
                     f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})")
        build_s = time.perf_counter() - started
        conn.execute(f"VACUUM ANALYZE {TABLE}")  # untimed: visibility map set, planner statistics
        conn.execute(f"COMMENT ON TABLE {TABLE} IS '{tag}'")
        sizes = conn.execute("SELECT pg_relation_size(%s), pg_table_size(%s), count(*) FROM "
                             f"{TABLE}", (INDEX, TABLE)).fetchone()
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    if sizes[2] != len(base):
        raise PGLimitsError(f"pgvector table holds {sizes[2]} rows, the dataset {len(base)}",
                            "rerun the study; if it repeats, check the server log")
    return {"load_s": load_s, "build_s": build_s, "index_bytes": int(sizes[0]), "table_bytes": int(sizes[1]),
            "rows": int(sizes[2]), "index": {"method": "hnsw", "opclass": "vector_ip_ops", "m": m,
                                             "ef_construction": ef_construction},
            "pgvector_version": version, "build_settings": settings,
            "build_spilled": any(OUT_OF_MEMORY_NOTICE in n for n in notices), "notices": notices,
            "load_method": "COPY FROM STDIN (FORMAT BINARY), pgvector-python psycopg adapter"}


def pg_answers(url: str, queries: np.ndarray, ef: int | None, k: int,
               below: int | None = None) -> list[list[int]]:
    """Every query's answer at ``ef`` on one connection (untimed: the recall pass)."""
    with pg_connect(url) as conn:
        pg_set_search(conn, ef)
        sql = pg_query_sql(k, below)
        return [[row[0] for row in conn.execute(sql, (np.asarray(q, dtype=np.float32),), prepare=True)]
                for q in queries]


def pg_plan(url: str, query: np.ndarray, ef: int | None, k: int, below: int | None = None) -> str:
    """The plan of one query: proof the HNSW index (or the exact sort) served it."""
    with pg_connect(url) as conn:
        pg_set_search(conn, ef)
        rows = conn.execute("EXPLAIN " + pg_query_sql(k, below), (np.asarray(query, dtype=np.float32),)).fetchall()
    return "\n".join(r[0] for r in rows)


# --- Qdrant --------------------------------------------------------------------------------
def qdrant_client(url: str, grpc_port: int | None):
    from qdrant_client import QdrantClient

    if grpc_port:
        return QdrantClient(url=url, grpc_port=int(grpc_port), prefer_grpc=True, timeout=60)
    return QdrantClient(url=url, timeout=60)


def qdrant_has(url: str, grpc_port: int | None, name: str, count: int) -> bool:
    client = qdrant_client(url, grpc_port)
    try:
        if not client.collection_exists(name):
            return False
        info = client.get_collection(name)
        return info.points_count == count and _indexed(info)
    finally:
        client.close()


def _indexed(info: Any) -> bool:
    from qdrant_client.models import CollectionStatus

    return info.status == CollectionStatus.GREEN and (info.indexed_vectors_count or 0) >= (info.points_count or 0)


def wait_indexed(client: Any, name: str, timeout_s: float = OPTIMIZER_TIMEOUT_S) -> Any:
    """Block until the collection is green with every vector in an HNSW segment; raises a
    one-line error naming the state otherwise (a collection still optimizing is never measured)."""
    deadline = time.monotonic() + timeout_s
    while True:
        info = client.get_collection(name)
        if _indexed(info):
            return info
        if time.monotonic() > deadline:
            raise PGLimitsError(f"qdrant collection {name} still optimizing after {timeout_s:.0f} s "
                                f"(status {info.status}, {info.indexed_vectors_count} of "
                                f"{info.points_count} vectors indexed)",
                                "give the build more time (a smaller dataset, or a larger timeout)")
        time.sleep(0.2)


def qdrant_build(url: str, grpc_port: int | None, base: np.ndarray, name: str, m: int,
                 ef_construction: int, with_tag: bool = False) -> dict[str, Any]:
    """Recreate the collection, upsert with indexing off (load), index (build) until green.
    ``with_tag``: every point carries the filter attribute as payload, with an integer payload
    index created before the HNSW build (so Qdrant can build its filter-aware links)."""
    from qdrant_client import models

    client = qdrant_client(url, grpc_port)
    try:
        if client.collection_exists(name):
            client.delete_collection(name)
        for other in client.get_collections().collections:  # one collection: no other in RAM
            if other.name.startswith("vectors_"):
                client.delete_collection(other.name)
        client.create_collection(
            name, vectors_config=models.VectorParams(size=base.shape[1], distance=models.Distance.DOT, on_disk=False),
            hnsw_config=models.HnswConfigDiff(m=m, ef_construct=ef_construction, on_disk=False),
            optimizers_config=models.OptimizersConfigDiff(indexing_threshold=0))
        started = time.perf_counter()
        for start in range(0, len(base), UPSERT_BATCH):
            rows = np.asarray(base[start:start + UPSERT_BATCH], dtype=np.float32)
            ids = list(range(start, start + len(rows)))
            payloads = [{TAG: i % FILTER_BUCKETS} for i in ids] if with_tag else None
            client.upsert(name, points=models.Batch(ids=ids, vectors=rows.tolist(), payloads=payloads), wait=True)
        if with_tag:
            client.create_payload_index(name, TAG, field_schema=models.PayloadSchemaType.INTEGER, wait=True)
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        # 1 kB: every segment is indexed, however small (the default 20 MB would leave a test
        # profile's or a quick profile's segments unindexed, i.e. searched exactly)
        client.update_collection(name, optimizers_config=models.OptimizersConfigDiff(indexing_threshold=1))
        info = wait_indexed(client, name)
        build_s = time.perf_counter() - started
        config = info.config
        return {"load_s": load_s, "build_s": build_s, "rows": int(info.points_count),
                "indexed_vectors": int(info.indexed_vectors_count), "segments": int(info.segments_count),
                "status": str(info.status.value), "optimizer_status": str(info.optimizer_status),
                "index": {"method": "hnsw", "distance": "Dot", "m": m, "ef_construction": ef_construction},
                "collection_config": config.model_dump(mode="json"),
                "client": "qdrant-client gRPC (prefer_grpc)" if grpc_port else "qdrant-client HTTP",
                "filter_attribute": f"payload {TAG} = id % {FILTER_BUCKETS}, integer payload index" if with_tag else None,
                "load_method": f"upsert batches of {UPSERT_BATCH} (wait=true), indexing_threshold=0 "
                               "during the load, then 1 kB"}
    finally:
        client.close()


def qdrant_requests(name: str, queries: np.ndarray, ef: int, k: int, below: int | None = None) -> list[Any]:
    """One prebuilt gRPC ``SearchPoints`` per query (no payload, ``hnsw_ef`` = ef): each call
    then costs the client one protobuf serialisation, as pgvector's costs one binary encoding,
    instead of qdrant-client's model conversions (which would measure the Python client)."""
    from qdrant_client import grpc as qgrpc

    params = qgrpc.SearchParams(hnsw_ef=int(ef), exact=False)
    no_payload = qgrpc.WithPayloadSelector(enable=False)
    where = None if below is None else qgrpc.Filter(must=[qgrpc.Condition(
        field=qgrpc.FieldCondition(key=TAG, range=qgrpc.Range(lt=float(below))))])
    return [qgrpc.SearchPoints(collection_name=name, vector=np.asarray(q, dtype=np.float32).tolist(), limit=int(k),
                               params=params, with_payload=no_payload, filter=where) for q in queries]


def qdrant_search(client: Any, request: Any) -> list[int]:
    return [int(point.id.num) for point in client.grpc_points.Search(request, timeout=60).result]


def qdrant_answers(url: str, grpc_port: int | None, name: str, queries: np.ndarray, ef: int,
                   k: int, below: int | None = None) -> list[list[int]]:
    client = qdrant_client(url, grpc_port)
    try:
        return [qdrant_search(client, request) for request in qdrant_requests(name, queries, ef, k, below)]
    finally:
        client.close()


# --- load operations (one connection per worker process, see load.operation) ---------------
class _QueryOp:
    """One nearest-neighbour query per call; the worker walks the dataset's queries from its own
    offset (worker i of n starts at i/n of the list), the same order for every system."""

    name = "query"

    def __init__(self, dataset_path: str, ef: int | None, k: int, below: int | None = None):
        self.dataset_path, self.ef, self.k, self.below = dataset_path, ef, k, below

    def _queries(self) -> np.ndarray:
        from pglimits_core.datasets.store import load_vectors
        from pglimits_core.load.operation import current_worker

        queries = np.array(load_vectors(self.dataset_path).queries, dtype=np.float32)
        worker = current_worker()
        self.position = 0 if worker is None else (worker.index * len(queries)) // max(1, worker.workers)
        return queries

    def _next(self, items: list[Any]) -> Any:
        item = items[self.position % len(items)]
        self.position += 1
        return item


class PgvectorQueryOp(_QueryOp):
    def __init__(self, url: str, dataset_path: str, ef: int | None, k: int, below: int | None = None):
        super().__init__(dataset_path, ef, k, below)
        self.url = url

    def open(self) -> None:
        self.queries = list(self._queries())
        self.conn = pg_connect(self.url)
        pg_set_search(self.conn, self.ef)
        self.cursor = self.conn.cursor()
        self.sql = pg_query_sql(self.k, self.below)

    def __call__(self) -> None:
        self.cursor.execute(self.sql, (self._next(self.queries),), prepare=True)
        self.cursor.fetchall()

    def close(self) -> None:
        self.conn.close()


class QdrantQueryOp(_QueryOp):
    def __init__(self, url: str, grpc_port: int | None, collection: str, dataset_path: str, ef: int, k: int,
                 below: int | None = None):
        super().__init__(dataset_path, ef, k, below)
        self.url, self.grpc_port, self.collection = url, grpc_port, collection

    def open(self) -> None:
        self.requests = qdrant_requests(self.collection, self._queries(), self.ef, self.k, self.below)
        self.client = qdrant_client(self.url, self.grpc_port)

    def __call__(self) -> None:
        qdrant_search(self.client, self._next(self.requests))

    def close(self) -> None:
        self.client.close()
