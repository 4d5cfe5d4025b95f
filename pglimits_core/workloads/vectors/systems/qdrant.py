"""Qdrant: one collection, ``Distance.DOT`` (unit vectors: the same order as pgvector's inner
product), HNSW m / ef_construct, vectors and graph in RAM; upserted with indexing off, then
indexing on and measured only once the collection is green with every vector indexed; queried by
gRPC (qdrant-client's channel, ``prefer_grpc``) with prebuilt ``SearchPoints`` requests carrying
``hnsw_ef``.

The filtered search needs the filter attribute stored with every point (payload ``tag``, with an
integer payload index built before the graph, so Qdrant can build its filter-aware links): a
tagged collection of its own, built in place of the plain one (one collection in RAM).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.vectors.systems.base import FILTER_BUCKETS, VectorSystem, filter_mask

UPSERT_BATCH = 1_000
OPTIMIZER_TIMEOUT_S = 1_800.0
TAG = "tag"
PREFIX = "vectors_"


def collection_name(tag: str, tagged: bool = False) -> str:
    return f"{PREFIX}{tag.replace('-', '_')}" + ("_tagged" if tagged else "")


#: a filtered set per segment within this factor of the threshold may go either way: Qdrant
#: decides on its cardinality *estimate* (sampling between its bounds), and segments differ in size
NEAR = 1.5


def filter_path(kept: int, segments: int, dim: int, threshold_kb: int) -> dict[str, Any]:
    """The path Qdrant's planner is expected to take for a filter keeping ``kept`` points, by its
    documented rule: per segment, a filtered set whose vectors take less than
    ``full_scan_threshold`` KB is searched exactly (through the payload index), a larger one
    through the HNSW graph. Qdrant reports no plan per query: this is the rule applied to the
    collection with its points spread evenly over its segments, so a set within a factor ``NEAR``
    of the threshold is said to go either way."""
    per_segment = kept / max(1, segments)
    threshold_vectors = threshold_kb * 1024 / (4 * dim)
    if per_segment * NEAR < threshold_vectors:
        path = "exact scan of the filtered set (expected)"
    elif per_segment > threshold_vectors * NEAR:
        path = "HNSW graph with the filter (expected)"
    else:
        path = "near full_scan_threshold: exact or graph"
    return {"plan_path": path, "full_scan_threshold_kb": threshold_kb, "threshold_vectors": round(threshold_vectors),
            "filtered_per_segment": round(per_segment), "segments": segments}


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


class QdrantSystem(VectorSystem):
    system = "qdrant"
    query_client = "gRPC SearchPoints (qdrant-client channel, prebuilt requests)"
    filter_needs_own_build = True

    @property
    def grpc_port(self) -> int | None:
        return self.endpoint.extra.get("grpc_port")

    @property
    def collection(self) -> str:
        return collection_name(self.index.tag, self.index.tagged)

    def open(self) -> None:
        from qdrant_client import QdrantClient

        if self.grpc_port:
            self.client = QdrantClient(url=self.endpoint.url, grpc_port=int(self.grpc_port), prefer_grpc=True,
                                       timeout=60)
        else:
            self.client = QdrantClient(url=self.endpoint.url, timeout=60)

    def close(self) -> None:
        self.client.close()

    # --- build --------------------------------------------------------------------------
    def reset(self, dim: int) -> None:
        """Recreate the collection with indexing off (threshold 0) for the load."""
        from qdrant_client import models

        if self.client.collection_exists(self.collection):
            self.client.delete_collection(self.collection)
        for other in self.client.get_collections().collections:  # one collection: no other in RAM
            if other.name.startswith(PREFIX):
                self.client.delete_collection(other.name)
        self.client.create_collection(
            self.collection,
            vectors_config=models.VectorParams(size=int(dim), distance=models.Distance.DOT, on_disk=False),
            hnsw_config=models.HnswConfigDiff(m=self.index.m, ef_construct=self.index.ef_construction, on_disk=False),
            optimizers_config=models.OptimizersConfigDiff(indexing_threshold=0))

    def insert(self, base: np.ndarray) -> None:
        """Upsert in batches (wait=true); a tagged collection's points carry the filter attribute,
        and its integer payload index is created before the HNSW build."""
        from qdrant_client import models

        tagged = self.index.tagged
        for start in range(0, len(base), UPSERT_BATCH):
            rows = np.asarray(base[start:start + UPSERT_BATCH], dtype=np.float32)
            ids = list(range(start, start + len(rows)))
            payloads = [{TAG: i % FILTER_BUCKETS} for i in ids] if tagged else None
            self.client.upsert(self.collection, points=models.Batch(ids=ids, vectors=rows.tolist(), payloads=payloads),
                               wait=True)
        if tagged:
            self.client.create_payload_index(self.collection, TAG, field_schema=models.PayloadSchemaType.INTEGER,
                                             wait=True)

    def build(self) -> None:
        from qdrant_client import models

        # 1 kB: every segment is indexed, however small (the default 20 MB would leave a test
        # profile's or a quick profile's segments unindexed, i.e. searched exactly)
        self.client.update_collection(self.collection, optimizers_config=models.OptimizersConfigDiff(indexing_threshold=1))
        self.built = wait_indexed(self.client, self.collection)

    def settle(self) -> dict[str, Any]:
        """The collection as ``build`` left it: green, every vector indexed (nothing to do)."""
        info = self.built
        return {"rows": int(info.points_count), "indexed_vectors": int(info.indexed_vectors_count),
                "segments": int(info.segments_count), "status": str(info.status.value),
                "optimizer_status": str(info.optimizer_status),
                "collection_config": info.config.model_dump(mode="json")}

    def describe(self) -> dict[str, Any]:
        return {"index": {"method": "hnsw", "distance": "Dot", "m": self.index.m,
                          "ef_construction": self.index.ef_construction},
                "client": "qdrant-client gRPC (prefer_grpc)" if self.grpc_port else "qdrant-client HTTP",
                "filter_attribute": (f"payload {TAG} = id % {FILTER_BUCKETS}, integer payload index"
                                     if self.index.tagged else None),
                "load_method": f"upsert batches of {UPSERT_BATCH} (wait=true), indexing_threshold=0 "
                               "during the load, then 1 kB"}

    def has_index(self, count: int) -> bool:
        if not self.client.collection_exists(self.collection):
            return False
        info = self.client.get_collection(self.collection)
        return info.points_count == count and _indexed(info)

    def storage(self, data_dir: Path) -> dict[str, Any]:
        """The collection's segments (vectors + HNSW graph) on disk, its WAL apart."""
        from pglimits_core.servers.storage import directory_bytes

        collection = Path(data_dir) / "storage" / "collections" / self.collection
        shards = [p for p in collection.iterdir() if p.is_dir()] if collection.exists() else []
        return {"index_bytes": sum(directory_bytes(s / "segments") for s in shards if (s / "segments").exists()) or None,
                "wal_bytes": sum(directory_bytes(s / "wal") for s in shards if (s / "wal").exists()),
                "index_bytes_is": "the collection's segments (vectors + HNSW graph), WAL apart"}

    # --- writes -------------------------------------------------------------------------
    cleanup_kind = "waiting for its optimizer (it vacuums a segment past its deleted_threshold share by itself)"

    def rewrite(self, ids: list[int], vectors: np.ndarray) -> None:
        """An upsert of the same points (``wait=true``: applied before the reply — not a promise
        that its WAL reached the disk), payload too in a tagged collection, sent as one gRPC
        ``UpsertPoints`` built here (as the queries' requests are: no model conversions in the
        client): Qdrant writes each new version to an appendable segment and marks the old one
        deleted in its indexed segment, until the optimizer rewrites that segment."""
        from qdrant_client import grpc as qgrpc

        points = []
        for i, vector in zip(ids, np.asarray(vectors, dtype=np.float32), strict=True):
            payload = {TAG: qgrpc.Value(integer_value=int(i) % FILTER_BUCKETS)} if self.index.tagged else None
            points.append(qgrpc.PointStruct(id=qgrpc.PointId(num=int(i)), payload=payload,
                                            vectors=qgrpc.Vectors(vector=qgrpc.Vector(dense=qgrpc.DenseVector(
                                                data=vector.tolist())))))
        self.client.grpc_points.Upsert(qgrpc.UpsertPoints(collection_name=self.collection, wait=True, points=points),
                                       timeout=60)

    def write_state(self) -> dict[str, Any]:
        """The collection's status, segments and indexed vectors, and the deleted vectors its
        segments still hold (from the server's telemetry, where it reports them)."""
        info = self.client.get_collection(self.collection)
        config = info.config.optimizer_config
        return {"live_versions": int(info.points_count or 0), "dead_versions": self._deleted_vectors(),
                "segments": int(info.segments_count or 0), "indexed_vectors": int(info.indexed_vectors_count or 0),
                "status": str(info.status.value), "optimizer_status": str(info.optimizer_status),
                "deleted_threshold": config.deleted_threshold, "vacuum_min_vector_number": config.vacuum_min_vector_number}

    def _deleted_vectors(self) -> int | None:
        """Deleted vectors still in the collection's segments, summed from the telemetry's segment
        details (``num_deleted_vectors``); None where the server does not report them."""
        import json
        import urllib.request

        with urllib.request.urlopen(f"{self.endpoint.url}/telemetry?details_level=10", timeout=30) as reply:
            telemetry = json.load(reply)
        found = [segment.get("info", {}).get("num_deleted_vectors")
                 for collection in (telemetry.get("result", {}).get("collections", {}).get("collections") or [])
                 if collection.get("id") == self.collection
                 for shard in collection.get("shards") or []
                 for segment in (shard.get("local") or {}).get("segments") or []]
        known = [n for n in found if n is not None]
        return int(sum(known)) if known else None

    def cleanup(self) -> dict[str, Any]:
        """Qdrant has no vacuum to call: its optimizer rewrites a segment by itself once a share of
        it past ``deleted_threshold`` is deleted, and indexes the appendable segments. Waiting until
        the collection is green with every vector indexed is the recovery it offers."""
        info = wait_indexed(self.client, self.collection)
        config = info.config.optimizer_config
        return {"deleted_threshold": config.deleted_threshold, "vacuum_min_vector_number": config.vacuum_min_vector_number}

    # --- search -------------------------------------------------------------------------
    def prepare(self, queries: np.ndarray) -> list[Any]:
        """One prebuilt gRPC ``SearchPoints`` per query (no payload, ``hnsw_ef`` = ef): each call
        then costs the client one protobuf serialisation, as pgvector's costs one binary
        encoding, instead of qdrant-client's model conversions (which would measure the client)."""
        from qdrant_client import grpc as qgrpc

        params = qgrpc.SearchParams(hnsw_ef=int(self.ef), exact=False)
        no_payload = qgrpc.WithPayloadSelector(enable=False)
        where = None if self.below is None else qgrpc.Filter(must=[qgrpc.Condition(
            field=qgrpc.FieldCondition(key=TAG, range=qgrpc.Range(lt=float(self.below))))])
        return [qgrpc.SearchPoints(collection_name=self.collection, vector=np.asarray(q, dtype=np.float32).tolist(),
                                   limit=int(self.k), params=params, with_payload=no_payload, filter=where)
                for q in queries]

    def search(self, request: Any) -> list[int]:
        return [int(point.id.num) for point in self.client.grpc_points.Search(request, timeout=60).result]

    def search_plan(self, query: np.ndarray) -> dict[str, Any]:
        """A filtered search's path by Qdrant's full-scan rule (``filter_path``); {} unfiltered."""
        if self.below is None:
            return {}
        info = self.client.get_collection(self.collection)
        kept = int(filter_mask(int(info.points_count), self.below).sum())
        return filter_path(kept, int(info.segments_count), int(info.config.params.vectors.size),
                           int(info.config.hnsw_config.full_scan_threshold))
