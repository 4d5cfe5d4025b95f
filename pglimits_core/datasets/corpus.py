"""Seeded Zipf corpus, 2-term AND queries in three frequency classes, and their exact matches.

Words are synthetic consonant-vowel strings of lowercase ASCII letters only, so Postgres's
``simple`` text-search configuration (parser token ``asciiword``) and OpenSearch's ``standard``
tokenizer + ``lowercase`` filter read every word as exactly one, identical token: both engines
index the same terms and a 2-term AND has the same match set everywhere. Documents are words
joined by single spaces; word ranks follow Zipf's law (rank 0 is the most frequent word).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from pglimits_core.datasets.validation import require_int, require_positive_float
from pglimits_core.errors import PGLimitsError

#: Bump whenever the same spec would produce different bytes; it is part of the dataset's hash.
GENERATOR_VERSION = 1

#: The frequent class is the top 1 % of the vocabulary; below ~500 words it has too few terms.
MIN_VOCABULARY = 500

# One independent random stream per part, so e.g. more queries leave the documents unchanged.
_STREAM_VOCABULARY, _STREAM_DOCUMENTS, _STREAM_QUERIES = 1, 2, 3

_CONSONANTS = np.frombuffer(b"bdfghklmnprstvz", dtype=np.uint8)
_VOWELS = np.frombuffer(b"aeiou", dtype=np.uint8)
MIN_WORD_LENGTH, MAX_WORD_LENGTH = 4, 10

#: Lucene's English stop set plus common words of 4+ letters a consonant-vowel word can spell
#: ("here", "more", "some", ...). Neither engine drops stop words with the settings we use, but
#: an ``english`` configuration would, and that must never be what makes two engines differ.
STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with", "here", "more", "most", "some", "same", "were",
    "made", "done", "gone", "have", "like", "make", "many", "much", "must", "none", "only",
    "over", "take", "very", "what", "when", "where", "which", "whom", "your",
})

#: Frequency classes: bands of the vocabulary sorted by document frequency (most frequent
#: first), as fractions of the vocabulary. Why these bands: under Zipf s=1 over 50k words they
#: hold about 60 / 20 / 20 % of all tokens; a frequent term is in 1-100 % of the documents, so
#: a ranked AND scores hundreds to tens of thousands of matches (where Postgres ranking every
#: match hurts), a medium one in ~0.1-1 %, a rare one in a handful.
FREQUENCY_CLASSES: tuple[tuple[str, float, float], ...] = (
    ("frequent", 0.0, 0.01), ("medium", 0.01, 0.10), ("rare", 0.10, 1.0))

#: A query term must be in at least two documents: a real posting list, not a one-off.
MIN_QUERY_DF = 2
_MAX_QUERY_TRIES = 1000


@dataclass(frozen=True)
class CorpusSpec:
    """What to generate; the same spec always gives byte-identical data."""

    documents: int
    vocabulary: int = 50_000
    words_per_doc: int = 60  # mean; lengths are uniform in ``length_range``
    zipf_s: float = 1.0
    queries_per_class: int = 100
    seed: int = 20240531

    def __post_init__(self) -> None:
        require_int("CorpusSpec", "documents", self.documents, 1)
        require_int("CorpusSpec", "vocabulary", self.vocabulary, MIN_VOCABULARY)
        require_int("CorpusSpec", "words_per_doc", self.words_per_doc, 2)
        require_int("CorpusSpec", "queries_per_class", self.queries_per_class, 1)
        require_int("CorpusSpec", "seed", self.seed, 0)
        # A float always, so 1 and 1.0 hash to the same dataset directory.
        object.__setattr__(self, "zipf_s",
                           require_positive_float("CorpusSpec", "zipf_s", self.zipf_s))

    @property
    def length_range(self) -> tuple[int, int]:
        """Inclusive bounds of a document's length in words (mean ``words_per_doc``)."""
        return self.words_per_doc // 2, self.words_per_doc * 3 // 2


class Query(NamedTuple):
    """A ranked 2-term AND query; both terms belong to ``term_class``."""

    term_class: str
    term_a: str
    term_b: str


@dataclass(eq=False)
class Corpus:
    """A generated (or loaded) corpus. Arrays may be read-only memory maps."""

    spec: CorpusSpec
    words: np.ndarray  # (vocabulary,) str; index = Zipf rank, 0 = most frequent
    tokens: np.ndarray  # int32 ranks of all documents, concatenated
    doc_offsets: np.ndarray  # int64 (documents + 1,): doc d = tokens[off[d]:off[d + 1]]
    document_frequencies: np.ndarray  # int32 (vocabulary,): documents holding each rank
    queries: list[Query]
    truth_docs: np.ndarray  # int32: each query's matching doc ids (sorted), concatenated
    truth_offsets: np.ndarray  # int64 (len(queries) + 1,)

    @property
    def num_documents(self) -> int:
        return len(self.doc_offsets) - 1

    def text(self, doc_id: int) -> str:
        """Document ``doc_id`` (0-based) as its words joined by single spaces."""
        start, stop = self.doc_offsets[doc_id], self.doc_offsets[doc_id + 1]
        return " ".join(self.words[self.tokens[start:stop]])

    def matches(self, query_index: int) -> np.ndarray:
        """Sorted ids of the documents holding both terms of ``queries[query_index]``."""
        return self.truth_docs[self.truth_offsets[query_index]:self.truth_offsets[query_index + 1]]

    @cached_property
    def _rank_of_word(self) -> dict[str, int]:
        return {str(word): rank for rank, word in enumerate(self.words)}

    def rank(self, word: str) -> int:
        return self._rank_of_word[word]

    def document_frequency(self, term: int | str) -> int:
        """How many documents hold ``term`` (a rank or a word)."""
        rank = self.rank(term) if isinstance(term, str) else term
        return int(self.document_frequencies[rank])


@dataclass(frozen=True)
class _Index:
    """Documents plus each rank's sorted, distinct document ids (the inverted index)."""

    tokens: np.ndarray
    doc_offsets: np.ndarray
    postings: np.ndarray
    posting_offsets: np.ndarray

    def docs_of(self, rank: int) -> np.ndarray:
        return self.postings[self.posting_offsets[rank]:self.posting_offsets[rank + 1]]

    def tokens_of(self, doc_id: int) -> np.ndarray:
        return self.tokens[self.doc_offsets[doc_id]:self.doc_offsets[doc_id + 1]]


def generate_corpus(spec: CorpusSpec) -> Corpus:
    """Vocabulary, documents, queries and exact matches for ``spec``, all seeded."""
    words = generate_vocabulary(spec.vocabulary, spec.seed)
    tokens, doc_offsets = generate_documents(spec)
    index = _Index(tokens, doc_offsets, *inverted_index(tokens, doc_offsets, spec.vocabulary))
    frequencies = np.diff(index.posting_offsets).astype(np.int32)
    picked = pick_query_terms(spec, index, frequencies)
    truth_docs, truth_offsets = query_matches([(a, b) for _, a, b in picked], index)
    queries = [Query(name, str(words[a]), str(words[b])) for name, a, b in picked]
    return Corpus(spec, words, tokens, doc_offsets, frequencies, queries, truth_docs, truth_offsets)


def generate_vocabulary(size: int, seed: int) -> np.ndarray:
    """``size`` distinct consonant-vowel words of 4-10 lowercase letters, none a stop word."""
    rng = np.random.default_rng([seed, _STREAM_VOCABULARY])
    chosen: dict[str, None] = {}  # an insertion-ordered set: the order is part of the output
    while len(chosen) < size:
        for word in _candidate_words(rng, size):
            if word not in STOP_WORDS:
                chosen.setdefault(word)
    return np.array(list(chosen)[:size])


def _candidate_words(rng: np.random.Generator, count: int) -> list[str]:
    lengths = rng.integers(MIN_WORD_LENGTH, MAX_WORD_LENGTH + 1, size=count)
    shape = (count, MAX_WORD_LENGTH)
    consonants = _CONSONANTS[rng.integers(0, len(_CONSONANTS), size=shape)]
    vowels = _VOWELS[rng.integers(0, len(_VOWELS), size=shape)]
    letters = np.where(np.arange(MAX_WORD_LENGTH) % 2 == 0, consonants, vowels).tobytes()
    width = MAX_WORD_LENGTH
    return [letters[i * width:i * width + n].decode("ascii") for i, n in enumerate(lengths.tolist())]


def zipf_cdf(vocabulary: int, s: float) -> np.ndarray:
    """Cumulative P(rank <= r) for ranks 0..vocabulary-1, with p(rank r) ∝ 1 / (r + 1)^s."""
    ranks = np.arange(1, vocabulary + 1, dtype=np.float64)
    # s == 1 by division, which IEEE rounds the same on every CPU; np.power's SIMD kernels may
    # differ in the last bit between machines and move a token across a bucket edge.
    weights = 1.0 / ranks if s == 1.0 else ranks ** -s
    cdf = np.cumsum(weights)  # accumulate is sequential: the same sums everywhere
    return cdf / cdf[-1]


def generate_documents(spec: CorpusSpec) -> tuple[np.ndarray, np.ndarray]:
    """Token ranks (int32, all documents concatenated) and document offsets (int64)."""
    rng = np.random.default_rng([spec.seed, _STREAM_DOCUMENTS])
    low, high = spec.length_range
    lengths = rng.integers(low, high + 1, size=spec.documents)
    offsets = np.zeros(spec.documents + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # Inverse CDF over one big uniform draw: vectorised, seconds for millions of tokens.
    ranks = np.searchsorted(zipf_cdf(spec.vocabulary, spec.zipf_s), rng.random(int(offsets[-1])),
                            side="right")
    return np.minimum(ranks, spec.vocabulary - 1).astype(np.int32), offsets


def inverted_index(tokens: np.ndarray, doc_offsets: np.ndarray,
                   vocabulary: int) -> tuple[np.ndarray, np.ndarray]:
    """Postings (int32 doc ids) and offsets (int64): rank r's docs = postings[off[r]:off[r+1]]."""
    documents = len(doc_offsets) - 1
    doc_of_token = np.repeat(np.arange(documents, dtype=np.int64), np.diff(doc_offsets))
    # One sort of (rank, doc) keys groups by rank and orders docs; then drop repeats within a
    # doc. (np.sort + mask: np.unique is ~20x slower here on numpy 2.3.)
    keys = np.sort(tokens.astype(np.int64) * documents + doc_of_token)
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if keys.size else keys
    offsets = np.zeros(vocabulary + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // documents, minlength=vocabulary), out=offsets[1:])
    return (keys % documents).astype(np.int32), offsets


def frequency_class_ranks(document_frequencies: np.ndarray) -> dict[str, np.ndarray]:
    """The ranks in each class of ``FREQUENCY_CLASSES`` (ties in frequency: lower rank first)."""
    by_frequency = np.argsort(-document_frequencies.astype(np.int64), kind="stable")
    size = len(by_frequency)
    return {name: by_frequency[round(low * size):round(high * size)]
            for name, low, high in FREQUENCY_CLASSES}


def pick_query_terms(spec: CorpusSpec, index: _Index,
                     frequencies: np.ndarray) -> list[tuple[str, int, int]]:
    """``queries_per_class`` (class, rank a, rank b) per class, in ``FREQUENCY_CLASSES`` order."""
    rng = np.random.default_rng([spec.seed, _STREAM_QUERIES])
    picked = []
    for name, ranks in frequency_class_ranks(frequencies).items():
        eligible = np.zeros(len(frequencies), dtype=bool)
        eligible[ranks[frequencies[ranks] >= MIN_QUERY_DF]] = True
        for _ in range(spec.queries_per_class):
            picked.append((name, *_co_occurring_pair(rng, index, eligible, name)))
    return picked


def _co_occurring_pair(rng: np.random.Generator, index: _Index, eligible: np.ndarray,
                       name: str) -> tuple[int, int]:
    """Two distinct eligible ranks that share at least one document.

    Term a is uniform over the class; term b comes from the class's words in a random document
    holding a. So every query matches something: two independent rare terms would almost never
    share a document, and the rare class would measure only empty results.
    """
    candidates = np.flatnonzero(eligible)
    for _ in range(_MAX_QUERY_TRIES if candidates.size >= 2 else 0):
        a = int(rng.choice(candidates))
        docs = index.docs_of(a)
        words = index.tokens_of(int(docs[rng.integers(len(docs))]))
        partners = np.unique(words[eligible[words] & (words != a)])
        if partners.size:
            return a, int(rng.choice(partners))
    raise PGLimitsError(f"the corpus is too small for {name} 2-term queries: no two {name} "
                        f"terms in {MIN_QUERY_DF}+ documents share a document",
                        "raise documents or words_per_doc, or lower vocabulary")


def query_matches(pairs: list[tuple[int, int]], index: _Index) -> tuple[np.ndarray, np.ndarray]:
    """Exact AND matches per pair: sorted doc ids (int32, concatenated) and offsets (int64)."""
    parts = [np.intersect1d(index.docs_of(a), index.docs_of(b), assume_unique=True)
             for a, b in pairs]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(part) for part in parts], out=offsets[1:])
    docs = np.concatenate(parts) if parts else np.empty(0)
    return docs.astype(np.int32), offsets
