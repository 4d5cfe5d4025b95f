"""The dedicated side's per-second evidence: each engine's own background work, where a cheap
signal exists, and the churn client's CPU on its own.

- ``OpenSearchSampler``: one ``GET /_nodes/_local/stats/jvm,indices/merge,refresh,flush`` per
  second — segment merges (running now; started and ms spent this second), refreshes and flushes
  this second, and the JVM's young/old garbage collections this second with their ms (a GC
  pause is the JVM's own stop-the-world background work, the nearest thing to a vacuum).
- ``QdrantSampler``: one ``GET /collections/<name>`` per second — the collection's status, its
  ``optimizer_status`` (``ok`` or the optimizer's error) and segment count: a segment count that
  changes, or a status other than green, is the optimizer at work (Qdrant's telemetry endpoint
  is heavier and disabled on this server).
- ``ChurnCpuSampler``: the host sampler with the churn's qload as the client and the Redis server
  as the server, so the churn client's CPU (the paced load generator) is recorded apart from the
  bystanders' workers.

Redis' own per-second ``INFO`` comes from its server class's sampler, as in every other study.
"""

from __future__ import annotations

from typing import Any

from pglimits_core.samplers.base import CounterRates, Sampler
from pglimits_core.samplers.host import HostSampler
from pglimits_core.servers.http import get_json

OPENSEARCH_STATS = "/_nodes/_local/stats/jvm,indices/merge,refresh,flush"
TIMEOUT_S = 1.0


def opensearch_counters(stats: dict[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """(levels, cumulative counters) of the one node in a ``_nodes/stats`` answer."""
    node = next(iter(stats["nodes"].values()))
    indices, gc = node["indices"], node["jvm"]["gc"]["collectors"]
    levels = {"os_merges_current": indices["merges"]["current"]}
    counters = {"os_merges": indices["merges"]["total"], "os_merge_ms": indices["merges"]["total_time_in_millis"],
                "os_refreshes": indices["refresh"]["total"], "os_refresh_ms": indices["refresh"]["total_time_in_millis"],
                "os_flushes": indices["flush"]["total"]}
    for name, collector in gc.items():
        counters[f"os_gc_{name}"] = collector["collection_count"]
        counters[f"os_gc_{name}_ms"] = collector["collection_time_in_millis"]
    return levels, counters


class OpenSearchSampler(Sampler):
    name = "opensearch"

    def __init__(self, url: str, get: Any = get_json):
        self.url, self.get = url.rstrip("/"), get
        self.counters = CounterRates()

    def sample(self, now: float) -> dict[str, Any]:
        levels, counters = opensearch_counters(self.get(self.url + OPENSEARCH_STATS, timeout_s=TIMEOUT_S))
        return {**levels, **self.counters.deltas(now, counters)}


def qdrant_levels(answer: dict[str, Any]) -> dict[str, Any]:
    """Status, optimizer status and segment count from a ``GET /collections/<name>`` answer."""
    result = answer["result"]
    optimizer = result.get("optimizer_status")
    return {"qdrant_status": result.get("status"),
            "qdrant_optimizer_ok": optimizer == "ok",
            "qdrant_optimizer_status": optimizer if isinstance(optimizer, str) else str(optimizer),
            "qdrant_segments": result.get("segments_count"),
            "qdrant_indexed_vectors": result.get("indexed_vectors_count")}


class QdrantSampler(Sampler):
    name = "qdrant"

    def __init__(self, url: str, collection: str, get: Any = get_json):
        self.url, self.collection, self.get = url.rstrip("/"), collection, get

    def sample(self, now: float) -> dict[str, Any]:
        return qdrant_levels(self.get(f"{self.url}/collections/{self.collection}", timeout_s=TIMEOUT_S))


class ChurnCpuSampler(HostSampler):
    """The host figures with client = the churn's workers, server = the queue's server."""

    name = "churn_host"


def background_summary(frame: Any) -> dict[str, Any]:
    """The window's background work per engine: totals and the seconds it was seen in."""
    def column(sampler: str, name: str) -> Any:
        if frame is None or len(frame) == 0 or name not in frame:
            return None
        return frame.loc[frame["sampler"] == sampler, name].dropna()

    def total(sampler: str, name: str) -> float | None:
        values = column(sampler, name)
        return None if values is None or values.empty else round(float(values.sum()), 1)

    def seconds(sampler: str, name: str) -> int | None:
        values = column(sampler, name)
        return None if values is None or values.empty else int((values > 0).sum())

    gc_ms = [c for c in (frame.columns if frame is not None and len(frame) else []) if c.startswith("os_gc_")
             and c.endswith("_ms_delta")]
    segments = column("qdrant", "qdrant_segments")
    optimizer = column("qdrant", "qdrant_optimizer_ok")
    return {"opensearch_merges": total("opensearch", "os_merges_delta"),
            "opensearch_refreshes": total("opensearch", "os_refreshes_delta"),
            "opensearch_gc_ms": round(sum(total("opensearch", c) or 0.0 for c in gc_ms), 1) if gc_ms else None,
            "opensearch_gc_seconds": max((seconds("opensearch", c) or 0 for c in gc_ms), default=None),
            "qdrant_segment_counts": None if segments is None else sorted({int(v) for v in segments}),
            "qdrant_optimizer_busy_seconds": None if optimizer is None else int((~optimizer.astype(bool)).sum())}
