"""What every point of one search study run shares: the corpus spec and seed (``Setup``), and the
corpus, its queries with exact match sets and the bulk payloads, prepared once per study process
(``prepared``). The dataset is checked against its manifest first, and a dataset that fails is
one line naming the fix."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pglimits_core.datasets.corpus import Corpus, CorpusSpec
from pglimits_core.datasets.store import (
    dataset_dir,
    dataset_id,
    ensure_dataset,
    load_corpus,
    verify_dataset,
)
from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.search.bm25 import Bm25
from pglimits_core.workloads.search.queries import QuerySet, build_query_set
from pglimits_core.workloads.search.systems.base import SearchSystem
from pglimits_core.workloads.search.warmup import WarmupRule


@dataclass(frozen=True)
class Setup:
    """What every point of one study run shares: the corpus spec, the seed, the crossover's
    query draw, the bulk batch size and the warm-up's rule."""

    spec: CorpusSpec
    profile: str
    seed: int
    per_decade: int | None = None
    top_fraction: float = 0.2
    batch_docs: int = 5000
    warmup: WarmupRule = WarmupRule()

    @property
    def dataset(self) -> str:
        return dataset_id(self.spec)

    def params(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "documents": self.spec.documents}


@dataclass
class Prepared:
    """The corpus and everything derived from it, built once per study process."""

    setup: Setup
    path: Path
    corpus: Corpus
    queries: QuerySet
    _chunks: dict[str, list[bytes]] = field(default_factory=dict)

    @cached_property
    def bm25(self) -> Bm25:
        return Bm25.of(self.corpus)

    def chunks(self, engine: SearchSystem) -> list[bytes]:
        """The bulk payloads for ``engine``, encoded before any clock starts (once per format)."""
        if engine.chunk_format not in self._chunks:
            texts = (self.corpus.text(d) for d in range(self.corpus.num_documents))
            self._chunks[engine.chunk_format] = engine.encode_chunks(texts, self.setup.batch_docs)
        return self._chunks[engine.chunk_format]


_PREPARED: dict[tuple[Setup, Path], Prepared] = {}


def prepared(setup: Setup) -> Prepared:
    """The verified dataset and its queries (built now if missing; a damaged dataset stops the
    study with the fix). Verified once per study process and dataset directory."""
    key = (setup, dataset_dir(setup.spec))
    if key in _PREPARED:
        return _PREPARED[key]
    path = ensure_dataset(setup.spec, progress=lambda message: print(f"search: {message}", file=sys.stderr))
    problems = verify_dataset(path)
    if problems:
        raise PGLimitsError(f"dataset {path.name} fails verification: {problems[0]}",
                            f"delete {path} and rebuild it: make datasets PROFILE={setup.profile}")
    corpus = load_corpus(path)
    queries = build_query_set(corpus, setup.per_decade, setup.top_fraction, setup.seed)
    _PREPARED.clear()  # one study's corpus at a time: the bulk payloads of the full corpus are large
    _PREPARED[key] = Prepared(setup, path, corpus, queries)
    return _PREPARED[key]
