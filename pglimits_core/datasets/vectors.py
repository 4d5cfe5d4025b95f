"""Seeded Gaussian-clustered vectors, queries from the same mixture, exact top-k ground truth.

With ``latent_dim`` set, the mixture lives in a ``latent_dim``-dimensional space and a fixed
seeded linear map embeds it into ``dim`` coordinates: the data then have the intrinsic dimension
of real sentence embeddings (tens) while being ``dim`` wide. Isotropic noise in all ``dim``
coordinates (``latent_dim`` unset) makes the neighbours of a query nearly equidistant, so recall
would measure ties rather than the index (``workloads.vectors.difficulty`` reports both).

Every vector is L2-normalised, so cosine similarity == inner product, and squared L2 distance
== 2 - 2 * inner product: all three metrics rank neighbours identically, and an engine may be
configured with whichever it serves best without changing the ground truth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pglimits_core.datasets.validation import require_int, require_positive_float
from pglimits_core.errors import PGLimitsError

#: Bump whenever the same spec would produce different bytes; it is part of the dataset's hash.
GENERATOR_VERSION = 2

# Independent streams: the centers do not depend on ``count``, so a small profile's vectors
# come from the same mixture as the full one, and queries are never copies of base vectors.
_STREAM_CENTERS, _STREAM_BASE, _STREAM_QUERIES, _STREAM_EMBEDDING = 1, 2, 3, 4

#: Rows generated (and normalised) per step; part of the output definition, keep it fixed.
_GENERATION_CHUNK = 16_384
#: Queries scored against all base vectors at once: for 200k vectors, ~200 MB of float32
#: scores plus ~400 MB of int64 argpartition indices.
_TRUTH_QUERY_CHUNK = 256
#: float32 candidates kept per query before the float64 rescoring that decides the top k.
_TRUTH_CANDIDATE_MARGIN = 32


@dataclass(frozen=True)
class VectorSpec:
    """What to generate; the same spec always gives byte-identical data."""

    count: int
    dim: int = 384
    clusters: int = 100
    # Per-coordinate noise std relative to unit-normal cluster centers: neighbours inside a
    # cluster are then separated by high-dimensional noise, so HNSW recall at small ef is
    # well below 1 and the recall-QPS curve has a shape (not trivially 1.0 as for tight blobs).
    spread: float = 0.5
    queries: int = 1000
    k: int = 10
    seed: int = 20240531
    # Intrinsic dimension: the mixture is drawn in this many dimensions, then embedded in
    # ``dim`` by a fixed seeded linear map (None: drawn in all ``dim`` dimensions).
    latent_dim: int | None = None

    def __post_init__(self) -> None:
        require_int("VectorSpec", "count", self.count, 1)
        require_int("VectorSpec", "dim", self.dim, 2)
        require_int("VectorSpec", "clusters", self.clusters, 1)
        require_int("VectorSpec", "queries", self.queries, 1)
        require_int("VectorSpec", "k", self.k, 1)
        require_int("VectorSpec", "count", self.count, self.k)  # k neighbours must exist
        require_int("VectorSpec", "seed", self.seed, 0)
        if self.latent_dim is not None:
            require_int("VectorSpec", "latent_dim", self.latent_dim, 2)
            if self.latent_dim > self.dim:
                raise PGLimitsError(f"VectorSpec: latent_dim {self.latent_dim} > dim {self.dim}",
                                    "give latent_dim at most dim (or leave it unset)")
        # A float always, so 1 and 1.0 hash to the same dataset directory.
        object.__setattr__(self, "spread",
                           require_positive_float("VectorSpec", "spread", self.spread))


@dataclass(eq=False)
class VectorSet:
    """Base vectors, queries and exact top-k by inner product. Arrays may be memory maps."""

    spec: VectorSpec
    base: np.ndarray  # (count, dim) float32, unit length; row index = vector id
    queries: np.ndarray  # (queries, dim) float32, unit length
    truth_ids: np.ndarray  # (queries, k) int32, best first, ties by smaller id
    truth_scores: np.ndarray  # (queries, k) float64 inner products; [:, -1] is the k-th


def generate_vectors(spec: VectorSpec) -> VectorSet:
    """Base vectors, queries and their exact top-k for ``spec``, all seeded."""
    space = spec.latent_dim or spec.dim
    centers = np.random.default_rng([spec.seed, _STREAM_CENTERS]).standard_normal(
        (spec.clusters, space), dtype=np.float32)
    embedding = None if spec.latent_dim is None else embedding_map(spec)
    base = sample_mixture(centers, spec.spread, spec.count,
                          np.random.default_rng([spec.seed, _STREAM_BASE]), embedding)
    queries = sample_mixture(centers, spec.spread, spec.queries,
                             np.random.default_rng([spec.seed, _STREAM_QUERIES]), embedding)
    truth_ids, truth_scores = exact_top_k(base, queries, spec.k)
    return VectorSet(spec, base, queries, truth_ids, truth_scores)


def embedding_map(spec: VectorSpec) -> np.ndarray:
    """The fixed (latent_dim, dim) float64 linear map from the latent space into ``dim``
    coordinates: Gaussian entries, so it is full rank and spreads every latent direction over
    all coordinates (no coordinate is special, as in a learned embedding)."""
    rng = np.random.default_rng([spec.seed, _STREAM_EMBEDDING])
    return rng.standard_normal((spec.latent_dim, spec.dim)).astype(np.float64)


def sample_mixture(centers: np.ndarray, spread: float, count: int,
                   rng: np.random.Generator, embedding: np.ndarray | None = None) -> np.ndarray:
    """``count`` unit vectors (float32): a uniformly chosen center plus N(0, spread^2) noise,
    embedded by ``embedding`` (latent -> output coordinates) when one is given."""
    width = centers.shape[1] if embedding is None else embedding.shape[1]
    out = np.empty((count, width), dtype=np.float32)
    for start in range(0, count, _GENERATION_CHUNK):
        rows = min(_GENERATION_CHUNK, count - start)
        labels = rng.integers(0, len(centers), size=rows)
        noise = rng.standard_normal((rows, centers.shape[1]), dtype=np.float32)
        points = centers[labels] + np.float32(spread) * noise
        out[start:start + rows] = unit_rows(points if embedding is None else embed(points, embedding))
    return out


def embed(points: np.ndarray, embedding: np.ndarray) -> np.ndarray:
    """``points @ embedding`` in float64, summed in latent-coordinate order: elementwise
    operations only, so the bytes are the same on every CPU (see ``sequential_dot``)."""
    wide = points.astype(np.float64)
    total = np.zeros((len(points), embedding.shape[1]), dtype=np.float64)
    for column, row in zip(wide.T, embedding, strict=True):
        total += column[:, None] * row[None, :]
    return total


def unit_rows(rows: np.ndarray) -> np.ndarray:
    """``rows`` scaled to unit L2 length, float32, bit-identical on every machine."""
    wide = rows.astype(np.float64)
    return (wide / np.sqrt(sequential_dot(wide, wide))[:, None]).astype(np.float32)


def sequential_dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Float64 dot products over the last axis (broadcast), summed in coordinate order.

    Elementwise multiplies and adds have one IEEE result on every CPU, whereas numpy's
    reductions (norm, einsum, matmul) pick SIMD kernels per CPU and may round differently,
    which would break byte-identical datasets across hosts.
    """
    xs = np.ascontiguousarray(np.moveaxis(np.asarray(x, dtype=np.float64), -1, 0))
    ys = np.ascontiguousarray(np.moveaxis(np.asarray(y, dtype=np.float64), -1, 0))
    total = np.zeros(np.broadcast_shapes(xs.shape[1:], ys.shape[1:]), dtype=np.float64)
    for x_column, y_column in zip(xs, ys, strict=True):
        total += x_column * y_column
    return total


def exact_top_k(base: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` ids (int32) and inner products (float64) of every query, best first.

    Brute force in chunks of queries (bounded memory). A float32 matmul (fast, but BLAS rounds
    differently per CPU) keeps the best ``k + margin`` candidates; those are rescored in float64
    with ``sequential_dot`` and ordered by (-score, id) with ``np.lexsort``, so the result is the
    same on every machine and equal scores go to the smaller id.
    """
    ids = np.empty((len(queries), k), dtype=np.int32)
    scores = np.empty((len(queries), k), dtype=np.float64)
    for start in range(0, len(queries), _TRUTH_QUERY_CHUNK):
        chunk = slice(start, start + _TRUTH_QUERY_CHUNK)
        ids[chunk], scores[chunk] = _top_k_of_chunk(base, queries[chunk], k)
    return ids, scores


def _top_k_of_chunk(base: np.ndarray, queries: np.ndarray,
                    k: int) -> tuple[np.ndarray, np.ndarray]:
    keep = min(len(base), k + _TRUTH_CANDIDATE_MARGIN)
    similarities = queries @ base.T
    if keep < len(base):
        candidates = np.argpartition(similarities, len(base) - keep, axis=1)[:, -keep:]
    else:
        candidates = np.broadcast_to(np.arange(len(base)), similarities.shape)
    exact = sequential_dot(queries[:, None, :], base[candidates])
    order = np.lexsort((candidates, -exact), axis=-1)[:, :k]
    return (np.take_along_axis(candidates, order, axis=1),
            np.take_along_axis(exact, order, axis=1))


def recall_at_k(found_ids: Sequence[Sequence[int]] | np.ndarray, truth_ids: np.ndarray,
                k: int) -> float:
    """Mean over queries of |first k found ∩ true top k| / k (found lists may be shorter)."""
    truth = np.asarray(truth_ids)
    if len(found_ids) != len(truth) or not len(truth):
        raise ValueError(f"{len(found_ids)} answers for {len(truth)} queries")
    if not 1 <= k <= truth.shape[1]:
        raise ValueError(f"k={k} outside 1..{truth.shape[1]} (the ground truth's depth)")
    hits = sum(len({int(i) for i in found[:k]} & set(true[:k].tolist()))
               for found, true in zip(found_ids, truth, strict=True))
    return hits / (k * len(truth))


def recall_with_ties(found_ids: Sequence[Sequence[int]] | np.ndarray, base: np.ndarray,
                     queries: np.ndarray, truth_scores: np.ndarray, k: int,
                     epsilon: float) -> np.ndarray:
    """Per-query recall@k counting ties: a returned id is correct when its exact inner product
    with the query (recomputed here in float64, never the engine's float32 score) is within
    ``epsilon`` of the true k-th best. Duplicate and invalid (< 0) ids count nothing; a short
    answer (fewer than k rows) is scored over k, so it cannot look better than it is.
    """
    truth = np.asarray(truth_scores)
    if len(found_ids) != len(truth) or not len(truth):
        raise ValueError(f"{len(found_ids)} answers for {len(truth)} queries")
    if not 1 <= k <= truth.shape[1]:
        raise ValueError(f"k={k} outside 1..{truth.shape[1]} (the ground truth's depth)")
    recall = np.zeros(len(truth), dtype=np.float64)
    for row, found in enumerate(found_ids):
        ids = list(dict.fromkeys(int(i) for i in list(found)[:k] if int(i) >= 0))
        if not ids:
            continue
        scores = sequential_dot(queries[row][None, :], base[np.asarray(ids)])
        recall[row] = np.count_nonzero(scores >= truth[row, k - 1] - epsilon) / k
    return recall
