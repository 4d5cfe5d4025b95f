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
