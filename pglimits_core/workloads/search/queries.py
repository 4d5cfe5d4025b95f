"""The search study's queries: the corpus's 2-term AND queries by term-frequency class, the mixed
stream, and queries grouped by the decade of their match-set size (the crossover), each with its
exact match set; and the seeded order every system runs them in.

Term-frequency classes say little about the work a query asks for: in the full corpus the median
2-term AND match set is 790 documents for the frequent class, 2.5 for medium and 1 for rare.
The crossover needs the match-set size itself on the x-axis, so ``decade_queries`` draws seeded
pairs until every decade of match-set size (1-9, 10-99, ...) up to ``top_fraction`` of the corpus
has ``per_decade`` distinct queries, each with its exact match set from the inverted index.

Every system runs the same stream in the same order: a stream's order is a permutation seeded by
(the profile's seed, the stream's name); worker ``i`` of ``W`` starts at position ``i * L // W``
and wraps around (``worker_order``).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

from pglimits_core.datasets.corpus import FREQUENCY_CLASSES, MIN_QUERY_DF, Corpus, inverted_index
from pglimits_core.errors import PGLimitsError

K = 10  # top-k of every ranked query (the source's top 10)
CLASSES = tuple(name for name, _, _ in FREQUENCY_CLASSES)
MIXED = "mixed"
_STREAM_DECADES = 4  # random stream of the decade draw (the corpus uses 1-3)
#: draws per wanted query before a decade counts as unfillable
MAX_TRIES_PER_QUERY = 200


@dataclass(frozen=True)
class SearchQuery:
    """One 2-term AND query: ``group`` is its term-frequency class or its decade stream."""

    index: int
    group: str
    term_a: str
    term_b: str
    matches: int

    @property
    def expected_hits(self) -> int:
        """What a correct top-k answer holds: k documents, or every match when there are fewer."""
        return min(K, self.matches)


def bucket_edges(documents: int, top_fraction: float) -> list[int]:
    """Lower edges of the crossover's match-set buckets: the decades 1, 10, 100, ... below
    ``cut`` = ``top_fraction`` of the corpus, then ``cut`` itself (the last, open-ended bucket:
    queries matching at least that share of the corpus)."""
    cut = max(2, math.ceil(top_fraction * documents))
    edges = [1]
    while edges[-1] * 10 < cut:
        edges.append(edges[-1] * 10)
    return [*edges, cut]


def bucket_names(edges: list[int]) -> list[str]:
    """``1-9``, ``10-99``, ..., ``10000-39999``, ``40000+``."""
    return [f"{low}-{high - 1}" for low, high in zip(edges, edges[1:], strict=False)] + [f"{edges[-1]}+"]


def decade_streams(documents: int, top_fraction: float) -> list[str]:
    """The crossover's streams for a corpus of ``documents``, smallest match sets first."""
    return bucket_names(bucket_edges(documents, top_fraction))


@dataclass
class QuerySet:
    """Every query the study runs, with exact match sets (sorted document ids)."""

    queries: list[SearchQuery]
    truth: list[np.ndarray]
    decades: list[str] = field(default_factory=list)  # decade streams, smallest first
    documents: int = 0

    def group(self, name: str) -> list[SearchQuery]:
        """The queries of one stream: a class, ``mixed`` (every class query) or a decade."""
        if name == MIXED:
            return [q for q in self.queries if q.group in CLASSES]
        return [q for q in self.queries if q.group == name]

    def stream(self, name: str, seed: int) -> list[SearchQuery]:
        """The stream's queries in its seeded order (the same for every system)."""
        queries = self.group(name)
        if not queries:
            raise PGLimitsError(f"the search stream {name!r} has no queries",
                                "raise datasets.corpus.queries_per_class (classes) or crossover.per_decade, "
                                "or drop the stream from the profile")
        order = np.random.default_rng([seed, zlib.crc32(name.encode())]).permutation(len(queries))
        return [queries[i] for i in order]

    def median_matches(self, name: str) -> float:
        return float(np.median([q.matches for q in self.group(name)]))


def worker_order(stream: list, worker: int, workers: int) -> list:
    """The stream as worker ``worker`` of ``workers`` runs it: from its own offset, wrapping."""
    start = worker * len(stream) // workers
    return stream[start:] + stream[:start]


def class_queries(corpus: Corpus) -> tuple[list[SearchQuery], list[np.ndarray]]:
    """The dataset's own queries (by term-frequency class) with their stored exact matches."""
    truth = [np.asarray(corpus.matches(i)) for i in range(len(corpus.queries))]
    queries = [SearchQuery(i, q.term_class, q.term_a, q.term_b, len(truth[i]))
               for i, q in enumerate(corpus.queries)]
    return queries, truth


def build_query_set(corpus: Corpus, per_decade: int | None = None, top_fraction: float = 0.2,
                    seed: int = 0) -> QuerySet:
    """The class queries, plus the decade queries when ``per_decade`` is given."""
    queries, truth = class_queries(corpus)
    decades: list[str] = []
    if per_decade:
        pairs, sets = decade_queries(corpus, per_decade, top_fraction, seed)
        for (name, a, b), matches in zip(pairs, sets, strict=True):
            queries.append(SearchQuery(len(queries), name, a, b, len(matches)))
            truth.append(matches)
        decades = list(dict.fromkeys(name for name, _, _ in pairs))
    return QuerySet(queries, truth, decades, corpus.num_documents)


def decade_queries(corpus: Corpus, per_decade: int, top_fraction: float,
                   seed: int) -> tuple[list[tuple[str, str, str]], list[np.ndarray]]:
    """``per_decade`` distinct co-occurring term pairs in every bucket of match-set size
    (``bucket_edges``: decades from 1-9 up to the open-ended last bucket of queries that match
    ``top_fraction`` of the corpus or more), seeded (``PairDraw`` says how a pair is drawn).
    Raises with the fix when a bucket cannot be filled."""
    edges = np.array(bucket_edges(corpus.num_documents, top_fraction))
    draw = PairDraw(corpus, seed)
    found: dict[int, list[tuple[int, int, np.ndarray]]] = {d: [] for d in range(len(edges))}
    for _ in range(MAX_TRIES_PER_QUERY * per_decade * len(edges)):
        if all(len(bucket) >= per_decade for bucket in found.values()) or not draw.terms.size:
            break
        if (pair := draw.next()) is None:
            continue
        a, b, matches = pair
        bucket = found[int(np.searchsorted(edges, len(matches), side="right")) - 1]
        if len(bucket) < per_decade:
            bucket.append((a, b, np.sort(matches).astype(np.int32)))
    names = bucket_names(edges.tolist())
    check_filled(found, names, per_decade, top_fraction, corpus.num_documents)
    pairs = [(names[d], str(corpus.words[a]), str(corpus.words[b])) for d, bucket in found.items()
             for a, b, _ in bucket]
    return pairs, [matches for bucket in found.values() for _, _, matches in bucket]


class PairDraw:
    """Seeded term pairs that co-occur, each pair once, with its exact match set.

    Term a is log-uniform over the terms by document frequency (so the few very frequent terms,
    which make the big match sets, are drawn often enough); term b is a word of a random
    document holding a (so the pair matches something)."""

    def __init__(self, corpus: Corpus, seed: int):
        self.corpus = corpus
        self.postings, self.offsets = inverted_index(np.asarray(corpus.tokens), np.asarray(corpus.doc_offsets),
                                                     len(corpus.words))
        frequencies = np.diff(self.offsets)
        by_frequency = np.argsort(-frequencies, kind="stable")
        self.terms = by_frequency[frequencies[by_frequency] >= MIN_QUERY_DF]  # most frequent first
        self.eligible = np.zeros(len(frequencies), dtype=bool)
        self.eligible[self.terms] = True
        self.rng = np.random.default_rng([seed, _STREAM_DECADES])
        self.mask = np.zeros(corpus.num_documents, dtype=bool)
        self.seen: set[tuple[int, int]] = set()

    def documents(self, term: int) -> np.ndarray:
        return self.postings[self.offsets[term]:self.offsets[term + 1]]

    def next(self) -> tuple[int, int, np.ndarray] | None:
        """A new pair ``(a, b, matches)``; None when this draw found no partner or a pair drawn before."""
        terms, corpus = self.terms, self.corpus
        a = int(terms[min(len(terms), int(len(terms) ** self.rng.random())) - 1])
        docs_a = self.documents(a)
        doc = int(docs_a[self.rng.integers(len(docs_a))])
        words = np.asarray(corpus.tokens[corpus.doc_offsets[doc]:corpus.doc_offsets[doc + 1]])
        partners = np.unique(words[self.eligible[words] & (words != a)])
        if not partners.size:
            return None
        b = int(self.rng.choice(partners))
        pair = (min(a, b), max(a, b))
        if pair in self.seen:
            return None
        self.seen.add(pair)
        self.mask[docs_a] = True  # the intersection through a mask: no sort of either posting list
        docs_b = self.documents(b)
        matches = docs_b[self.mask[docs_b]]
        self.mask[docs_a] = False
        return a, b, matches


def check_filled(found: dict[int, list], names: list[str], per_decade: int, top_fraction: float,
                 documents: int) -> None:
    short = [d for d, bucket in found.items() if len(bucket) < per_decade]
    if short:
        raise PGLimitsError(f"the corpus gives only {len(found[short[0]])} of {per_decade} distinct queries "
                            f"with {names[short[0]]} matches (crossover buckets up to {top_fraction:.0%} "
                            f"of {documents:,} documents)",
                            "lower search.crossover.per_decade or top_fraction, or use a larger corpus")
