"""The vector study's load operation: one nearest-neighbour query per call, through any system.

One system object (hence one connection) per worker process (see ``load.operation``); the
requests are prepared in ``open()``, before the clock starts, so a timed call is the query.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pglimits_core.workloads.vectors.systems.base import VectorSystem


class QueryOp:
    """The worker walks the dataset's queries from its own offset (worker i of n starts at i/n of
    the list), the same order for every system."""

    name = "query"

    def __init__(self, system: VectorSystem, dataset_path: str, ef: int | None, k: int, below: int | None = None):
        self.system, self.dataset_path, self.ef, self.k, self.below = system, dataset_path, ef, k, below

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

    def open(self) -> None:
        queries = self._queries()
        self.system.open()
        self.system.set_search_params(self.ef, self.k, self.below)
        self.requests = self.system.prepare(queries)

    def __call__(self) -> None:
        self.system.search(self._next(self.requests))

    def close(self) -> None:
        self.system.close()


class RewriteOp:
    """One write per call: the next vector of the worker's share of the dataset, in its own seeded
    order (``experiments.writes.rewrite_order``), replaced by a new version of itself
    (``VectorSystem.rewrite``), so the exact answers never move."""

    name = "rewrite"

    def __init__(self, system: VectorSystem, dataset_path: str):
        self.system, self.dataset_path = system, dataset_path

    def open(self) -> None:
        from pglimits_core.datasets.store import load_vectors
        from pglimits_core.experiments.writes import rewrite_order
        from pglimits_core.load.operation import current_worker

        self.base = load_vectors(self.dataset_path).base  # a memory map: one row read per write
        self.order = rewrite_order(len(self.base), current_worker())
        self.position = 0
        self.system.open()

    def __call__(self) -> None:
        item = int(self.order[self.position % len(self.order)])
        self.position += 1
        self.system.rewrite([item], np.asarray(self.base[item:item + 1], dtype=np.float32))

    def close(self) -> None:
        self.system.close()


class CleanupOp:
    """The engine's own cleanup after writes (``VectorSystem.cleanup``), one call: the cleanup run
    times it as its queries go on."""

    name = "cleanup"

    def __init__(self, system: VectorSystem):
        self.system = system

    def open(self) -> None:
        self.system.open()

    def __call__(self) -> None:
        self.system.cleanup()

    def close(self) -> None:
        self.system.close()
