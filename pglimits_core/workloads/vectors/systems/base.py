"""The vector-system contract: verbs only, no timing.

The build point times ``insert`` (the load) and ``build`` (the index) around the calls; the load
driver times ``search``. A system object is built in the parent with the server's endpoint, the
index it works on and the variant's options (``__init__`` only stores them, so it pickles);
``open()`` connects, in the process that uses it, and ``close()`` disconnects.

A build, as the study runs it::

    reset(dim) -> insert(base) [timed: load] -> build() [timed: build] -> settle() + describe()

a search: ``set_search_params(ef, k, below)``, ``prepare(queries)`` once, then ``search(request)``
per query; writes while querying: ``rewrite(ids, vectors)`` per write, ``write_state()`` and
``cleanup()`` around them. A sweep point that finds ``has_index(count)`` true reuses the index already there.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: The filtered search's attribute: ``tag = id % 100``, so ``tag < p`` keeps p % of the vectors,
#: spread evenly over the clusters (ids are in generation order, which is random over clusters).
FILTER_BUCKETS = 100


def filter_mask(count: int, below: int) -> np.ndarray:
    """Which vector ids pass the filter ``tag < below``."""
    return (np.arange(count) % FILTER_BUCKETS) < below


def index_tag(dataset_id: str, m: int, ef_construction: int) -> str:
    """What names an index: a sweep point finds its dataset's index by it."""
    return f"{dataset_id}-m{m}-efc{ef_construction}"


@dataclass(frozen=True)
class Index:
    """The HNSW index a point builds or queries: its ``tag`` (dataset and parameters), ``m``,
    ``ef_construction``, and ``tagged``: the points carry the filter attribute (for systems that
    filter on a stored attribute rather than one computed from the id)."""

    tag: str
    m: int
    ef_construction: int
    tagged: bool = False


class VectorSystem(abc.ABC):
    """One vector engine behind the study's verbs. ``endpoint`` is the server's
    ``servers.base.Endpoint``; ``label`` names the variant in error messages."""

    system: str = ""
    #: how the study's queries reach the server (recorded with every query point)
    query_client: str = ""
    #: the filtered search needs a build of its own, whose points carry the filter attribute
    filter_needs_own_build: bool = False

    def __init__(self, endpoint: Any, index: Index, label: str = "", **options: Any):
        self.endpoint, self.index, self.label, self.options = endpoint, index, label, options
        self.ef: int | None = None
        self.k = 0
        self.below: int | None = None

    # --- connection -------------------------------------------------------------------
    @abc.abstractmethod
    def open(self) -> None:
        """Connect; runs in the process that uses the system."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> VectorSystem:
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- build --------------------------------------------------------------------------
    @abc.abstractmethod
    def reset(self, dim: int) -> None:
        """An empty table/collection for the index, every earlier one of the study dropped."""

    @abc.abstractmethod
    def insert(self, base: np.ndarray) -> None:
        """Load every vector (id = its row), with nothing indexed yet where the system allows."""

    @abc.abstractmethod
    def build(self) -> None:
        """Build the index; returns once every vector is in it."""

    @abc.abstractmethod
    def settle(self) -> dict[str, Any]:
        """Untimed, after the build: ready the index for queries and say what was built, read
        back from the server (rows, sizes, the settings that shaped the build)."""

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """The build's fixed facts: index method and parameters, how the vectors were loaded."""

    @abc.abstractmethod
    def has_index(self, count: int) -> bool:
        """This index of ``count`` vectors is there, ready (a resumed study need not rebuild)."""

    def storage(self, data_dir: Path) -> dict[str, Any]:
        """The index on disk under the server's data directory, where ``settle`` cannot read its
        size from the server; {} when it can."""
        return {}

    # --- search -------------------------------------------------------------------------
    def set_search_params(self, ef: int | None, k: int, below: int | None = None) -> None:
        """Search at ``ef`` for the ``k`` nearest, filtered to ``tag < below`` when given."""
        self.ef, self.k, self.below = ef, k, below

    @abc.abstractmethod
    def prepare(self, queries: np.ndarray) -> list[Any]:
        """One request per query, built before the clock starts."""

    @abc.abstractmethod
    def search(self, request: Any) -> list[int]:
        """The ids one prepared request returns, nearest first."""

    # --- writes (the writes-while-querying experiment) ------------------------------------------
    @abc.abstractmethod
    def rewrite(self, ids: list[int], vectors: np.ndarray) -> None:
        """Replace each item by a new version of itself — the same id, filter attribute and vector —
        in one write the server acknowledges (what the acknowledgement promises differs: each
        adapter says): the index does an update's work, the exact answers do not move."""

    @abc.abstractmethod
    def write_state(self) -> dict[str, Any]:
        """What writes left: ``dead_versions`` (replaced versions not yet cleaned up; None where the
        system does not say), ``index_bytes``, and the system's own counters."""

    @abc.abstractmethod
    def cleanup(self) -> dict[str, Any]:
        """The system's own recovery after writes, run to its end (``cleanup_kind`` says what it is)."""

    #: what ``cleanup`` does, in the system's words (the writes table shows it: they differ)
    cleanup_kind: str = ""

    def search_plan(self, query: np.ndarray) -> dict[str, Any]:
        """The server's own account of how it serves ``query`` (recorded with the point); raises
        when it contradicts the variant. {} for a system that shows none."""
        return {}
