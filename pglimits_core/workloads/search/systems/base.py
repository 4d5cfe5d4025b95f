"""The search system contract: verbs only, no timing (the points time each load step; the load
driver in ``load/`` times every measured query).

Every system is set up with equal care and runs a 2-term AND query for the top 10 by its own
ranking; ``postgres.py`` and ``lucene.py`` say exactly how. A system object is built with a
variant's options (validated here, so a typo fails before any server starts) and connects only
in ``open()``: the study process opens one to load, check and warm an index, and each load-driver
worker opens its own to run the measured query (``prepare_stream`` + ``stream_hits``).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from typing import Any

from pglimits_core.errors import PGLimitsError


class SearchSystem(abc.ABC):
    """One search system behind the study's verbs, with a variant's ``options``.

    ``system`` is the registry name (``pg_gin``, ``elasticsearch``, ...): it names the system in
    run records and error messages.
    """

    #: the options a variant may give, with the study's defaults (the order records show them in)
    defaults: dict[str, Any] = {}
    #: the bulk payloads' format: systems of one format share the payloads a study process encodes
    chunk_format: str = ""
    #: the tables the server's sampler watches in a timed point (None: the server's defaults)
    sampled_tables: list[str] | None = None
    #: the answer carries the engine's own ``hits.total`` (its relation says if it stopped counting)
    reports_total: bool = False
    #: the server is a JVM whose heap the profile sets (``search.heap``)
    jvm_heap: bool = False
    #: which side of the study's question the system is on: ``postgres`` (the GIN baseline),
    #: ``extension`` (Postgres with a BM25 extension) or ``engine`` (a search engine); the
    #: head-to-head verdicts and the decision matrix pair the sides by it
    family: str = "engine"
    #: the Postgres extension the system runs on (None: none); its version is the server's and
    #: its licence ``servers.postgres_ext.LICENCES`` names
    extension: str | None = None

    def __init__(self, system: str, options: dict[str, Any] | None = None):
        options = dict(options or {})
        unknown = sorted(set(options) - set(self.defaults))
        if unknown:
            raise PGLimitsError(f"search: {system} has no option {unknown[0]!r}",
                                f"{system} takes: {', '.join(self.defaults)}")
        self.system = system
        self.options = {**self.defaults, **options}
        self.check_options()

    def check_options(self) -> None:
        """Raise a one-line PGLimitsError for an option value the system cannot run (every value
        is fine by default)."""
        return None

    @abc.abstractmethod
    def default_label(self) -> str:
        """The label tables and charts show for these options when a variant gives none."""

    @abc.abstractmethod
    def query_template(self) -> str:
        """The measured query as the system receives it (terms as placeholders)."""

    @staticmethod
    @abc.abstractmethod
    def encode_chunks(texts: Iterable[str], batch: int) -> list[bytes]:
        """The corpus as bulk payloads of ``batch`` documents (id = the document's number)."""

    # --- connection -------------------------------------------------------------------------
    @abc.abstractmethod
    def open(self, url: str) -> SearchSystem:
        """Connect to the server at ``url`` (with the options' session settings); returns self."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> SearchSystem:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def check_product(self, url: str) -> None:
        """Raise unless the server at ``url`` is the product the system names (the vendor's client
        checks it where there is one; nothing to check by default)."""
        return None

    # --- load and index -----------------------------------------------------------------------
    @abc.abstractmethod
    def loaded(self, dataset: str, documents: int) -> bool:
        """The index holds ``documents`` documents of ``dataset``, completely loaded."""

    @abc.abstractmethod
    def reset(self, dataset: str, documents: int) -> None:
        """Drop the index and create it empty, ready for ``bulk``."""

    @abc.abstractmethod
    def bulk(self, chunk: bytes) -> None:
        """Load one payload of ``encode_chunks``."""

    @abc.abstractmethod
    def build_steps(self) -> list[tuple[str, Callable[[], Any]]]:
        """After the bulk load, in order: (record key, step) of the index build and the settling
        that leaves no point the load's leftovers. The caller times each step."""

    @abc.abstractmethod
    def mark_loaded(self, dataset: str, documents: int) -> None:
        """Note on the server that the load completed (what ``loaded`` reads)."""

    @abc.abstractmethod
    def documents(self) -> int: ...

    @abc.abstractmethod
    def sizes(self) -> dict[str, Any]:
        """Bytes on disk and segments, the same keys for every system (None where one has none)."""

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """The index (schema, settings) as the server has it after the load."""

    # --- queries ------------------------------------------------------------------------------
    @abc.abstractmethod
    def count(self, a: str, b: str) -> int:
        """How many documents the query ``a AND b`` matches (the system's own count)."""

    @abc.abstractmethod
    def search(self, a: str, b: str) -> tuple[list[int], Any]:
        """The measured query's answer: its ids, and the engine's ``hits.total`` (None when the
        system reports none)."""

    @abc.abstractmethod
    def prepare_stream(self, pairs: list[tuple[str, str]]) -> None:
        """Encode the measured query of every pair once, before any clock starts."""

    @abc.abstractmethod
    def stream_hits(self, i: int) -> int:
        """Run the measured query of pair ``i`` of ``prepare_stream``; how many hits it returned."""

    # --- writes (the writes-while-querying experiment) ----------------------------------------
    @abc.abstractmethod
    def rewrite(self, doc_id: int, body: str) -> None:
        """Replace one document by a new version of itself (same id, same text) in one write the
        server acknowledges (what the acknowledgement promises: each adapter says): the index does
        an update's work, the correct answers do not move."""

    @abc.abstractmethod
    def write_state(self) -> dict[str, Any]:
        """What writes left: ``dead_versions`` (replaced versions not yet cleaned up),
        ``index_bytes``, and the system's own counters."""

    @abc.abstractmethod
    def cleanup(self) -> dict[str, Any]:
        """The system's own recovery after writes, run to its end (``cleanup_kind`` says what it is)."""

    #: what ``cleanup`` does, in the system's words (the writes table shows it: they differ)
    cleanup_kind: str = ""
