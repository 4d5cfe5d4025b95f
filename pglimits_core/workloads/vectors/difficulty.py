"""How hard a vector dataset is for approximate search, measured the way ANN benchmarks do.

- **LID** (local intrinsic dimensionality) of each query, by maximum likelihood over its k
  nearest neighbours (Amsaleg et al.): ``-1 / mean_i log(r_i / r_k)``, i = 1..k. Uniform data in
  d dimensions gives ~d; real sentence embeddings give tens; the higher, the harder for a graph.
- **Relative contrast** ``RC_k = mean distance to the data / distance to the k-th neighbour``
  (Aumüller & Ceccarello's RC at k): near 1, the neighbours hardly stand out and every index
  struggles.
- **The k-th/(k+1)-th gap** ``r_{k+1} - r_k``: when it is below the engines' float32 rounding,
  "recall" measures ties, not the index; recall counts ties within ``epsilon``, and the share of
  queries whose gap is below ``epsilon`` is reported.

Distances are L2 between unit vectors (``sqrt(2 - 2 ip)``), which rank like inner product.
The neighbours come from ``datasets.vectors.exact_top_k`` (exact, the same on every CPU); the
mean distance from a float32 product (a mean over the whole set, insensitive to rounding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pglimits_core.datasets.vectors import exact_top_k

_MEAN_CHUNK = 64  # queries per float32 product for the mean distance (bounded memory)


def l2_from_ip(ip: np.ndarray) -> np.ndarray:
    """L2 distance between unit vectors from their inner product (clipped at 0 for rounding)."""
    return np.sqrt(np.maximum(0.0, 2.0 - 2.0 * np.asarray(ip, dtype=np.float64)))


def lid_mle(distances: np.ndarray) -> np.ndarray:
    """Per-row LID from ascending neighbour distances (n, k), all > 0: ``-1/mean log(r_i/r_k)``."""
    d = np.asarray(distances, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] < 2:
        raise ValueError("need (queries, k >= 2) neighbour distances")
    if (d <= 0).any():
        raise ValueError("LID needs positive distances (a query equal to a data point has none)")
    logs = np.log(d / d[:, -1:]).mean(axis=1)
    with np.errstate(divide="ignore"):
        return np.where(logs < 0, -1.0 / logs, np.inf)


def relative_contrast(mean_distance: np.ndarray, kth_distance: np.ndarray) -> np.ndarray:
    """``RC_k`` per query: mean distance to the data over the distance to the k-th neighbour."""
    return np.asarray(mean_distance, dtype=np.float64) / np.asarray(kth_distance, dtype=np.float64)


def mean_distances(base: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Each query's mean L2 distance to every base vector."""
    out = np.empty(len(queries), dtype=np.float64)
    for start in range(0, len(queries), _MEAN_CHUNK):
        chunk = np.asarray(queries[start:start + _MEAN_CHUNK], dtype=np.float32)
        out[start:start + len(chunk)] = l2_from_ip(chunk @ np.asarray(base, dtype=np.float32).T).mean(axis=1)
    return out


def _quantiles(values: np.ndarray) -> dict[str, float]:
    finite = values[np.isfinite(values)]
    if not len(finite):
        return {"median": float("nan"), "p5": float("nan"), "p95": float("nan")}
    p5, median, p95 = np.percentile(finite, [5, 50, 95])
    return {"median": float(median), "p5": float(p5), "p95": float(p95)}


def difficulty(base: np.ndarray, queries: np.ndarray, k: int = 10, lid_k: int = 100,
               sample: int = 200, epsilon: float = 1e-5) -> dict[str, Any]:
    """The difficulty of searching ``base`` with the first ``sample`` queries: LID over
    ``lid_k`` neighbours, RC at ``k``, the k-th/(k+1)-th gap in distance and in inner product
    (``epsilon`` is in inner product, as recall's tie rule)."""
    chosen = np.asarray(queries[:sample])
    depth = min(len(base), max(lid_k, k + 1))
    _, ip = exact_top_k(base, chosen, depth)
    dist = l2_from_ip(ip)
    lid = lid_mle(np.maximum(dist[:, :lid_k], np.finfo(np.float64).tiny))
    rc = relative_contrast(mean_distances(base, chosen), dist[:, k - 1])
    gap_ip = ip[:, k - 1] - ip[:, k]
    gap_l2 = dist[:, k] - dist[:, k - 1]
    return {"queries_sampled": len(chosen), "k": k, "lid_k": min(lid_k, depth), "epsilon": epsilon,
            "lid": _quantiles(lid), "rc": _quantiles(rc), "gap_l2": _quantiles(gap_l2),
            "gap_ip": _quantiles(gap_ip),
            "share_gap_below_epsilon": float(np.mean(gap_ip < epsilon)),
            "nn_distance": _quantiles(dist[:, 0]), "kth_distance": _quantiles(dist[:, k - 1])}
