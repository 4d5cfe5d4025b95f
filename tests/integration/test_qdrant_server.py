"""A real Qdrant 1.16.3 builds a real HNSW index and finds neighbours as well as exact search."""

import shutil
import socket
import uuid
import warnings

import numpy as np
import psutil
import pytest

from pglimits_core.config import PROJECT_ROOT
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.qdrant import QDRANT_SHA256, QdrantServer

pytestmark = pytest.mark.integration

DIM, N_POINTS, N_CLUSTERS, N_QUERIES, K = 32, 4000, 25, 50, 10
COLLECTION = "recall_check"


@pytest.fixture(scope="module", autouse=True)
def qdrant_binary():
    QdrantServer.install()


@pytest.fixture
def data_dir():
    path = PROJECT_ROOT / ".pglimits" / "test" / f"qdrant-{uuid.uuid4().hex[:12]}"
    yield path
    shutil.rmtree(path, ignore_errors=True)


def clustered_vectors(rng: np.random.Generator, n: int, centers: np.ndarray) -> np.ndarray:
    labels = rng.integers(0, len(centers), size=n)
    return (centers[labels] + rng.normal(scale=1.0, size=(n, DIM))).astype(np.float32)


def exact_top_k(points: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    squared = (queries**2).sum(1)[:, None] - 2 * queries @ points.T + (points**2).sum(1)[None, :]
    return np.argsort(squared, axis=1)[:, :k]


def create_hnsw_collection(client, models) -> None:
    client.create_collection(
        COLLECTION,
        vectors_config=models.VectorParams(size=DIM, distance=models.Distance.EUCLID),
        # full_scan_threshold tiny: searches must go through the graph, not fall back to a scan
        hnsw_config=models.HnswConfigDiff(m=16, ef_construct=64, full_scan_threshold=10),
        # indexing_threshold is in KB and 0 would *disable* indexing; 1 KB builds HNSW at once
        optimizers_config=models.OptimizersConfigDiff(indexing_threshold=1),
    )


def wait_until_indexed(client, models, timeout_s: float = 120.0) -> object:
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        info = client.get_collection(COLLECTION)
        if info.status == models.CollectionStatus.GREEN and (info.indexed_vectors_count or 0) >= N_POINTS:
            return info
        time.sleep(0.2)
    raise AssertionError(f"collection not indexed in {timeout_s}s: {info}")


def search_ids(client, models, queries: np.ndarray) -> np.ndarray:
    params = models.SearchParams(hnsw_ef=128, exact=False)
    return np.array([
        [hit.id for hit in client.query_points(COLLECTION, query=q.tolist(), limit=K,
                                               search_params=params).points]
        for q in queries
    ])


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth, strict=True)]))


def qdrant_processes_in(data_dir) -> list[psutil.Process]:
    leaks = []
    for proc in psutil.process_iter(["name", "cwd"]):
        if proc.info["name"] == "qdrant" and proc.info["cwd"] == str(data_dir):
            leaks.append(proc)
    return leaks


def test_hnsw_recall_describe_and_clean_stop(data_dir):
    from qdrant_client import QdrantClient, models

    rng = np.random.default_rng(20240611)
    centers = rng.normal(scale=4.0, size=(N_CLUSTERS, DIM))
    points, queries = clustered_vectors(rng, N_POINTS, centers), clustered_vectors(rng, N_QUERIES, centers)

    server = QdrantServer(data_dir=data_dir)
    try:
        endpoint = server.start()
        assert server.health()
        assert data_dir.stat().st_mode & 0o777 == 0o700
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client = QdrantClient(url=endpoint.url, timeout=60)
        assert not [w for w in caught if "compatib" in str(w.message).lower()], caught

        create_hnsw_collection(client, models)
        client.upload_collection(COLLECTION, vectors=points, ids=range(N_POINTS), batch_size=500, wait=True)
        info = wait_until_indexed(client, models)
        assert info.points_count == N_POINTS

        recall = recall_at_k(search_ids(client, models, queries), exact_top_k(points, queries, K))
        assert recall >= 0.9, recall

        described = server.describe()
        assert described["version"] == "1.16.3"
        assert described["settings"]["binary_sha256"] == QDRANT_SHA256
        assert server.storage_bytes() > points.nbytes
        client.close()
        pids = server.pids()
    finally:
        server.stop()
    assert not [pid for pid in pids if psutil.pid_exists(pid)]
    assert not qdrant_processes_in(data_dir)
    assert not server.health()
    server.stop()  # idempotent


def test_requested_port_in_use_is_a_clear_error(data_dir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PGLimitsError, match=f"port {port} .*already in use"):
            QdrantServer(data_dir=data_dir, port=port).start()
    assert not qdrant_processes_in(data_dir)


def test_early_exit_reports_the_log_tail(data_dir):
    server = QdrantServer(data_dir=data_dir, env={"QDRANT__SERVICE__MAX_REQUEST_SIZE_MB": "abc"})
    with pytest.raises(PGLimitsError, match="exited during start-up(.|\n)*max_request_size_mb"):
        server.start()
    assert server.endpoint is None
    assert not qdrant_processes_in(data_dir)
