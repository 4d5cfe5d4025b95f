"""Exact BM25 (k1 = 1.2, b = 0.75) over the corpus, computed offline: the reference ranking the
engines' top-10s are compared with.

The formula is Lucene's (``BM25Similarity``): idf = ln(1 + (N - n + 0.5) / (n + 0.5)) and a term
weight tf / (tf + k1 (1 - b + b dl / avgdl)) — Lucene leaves out the constant (k1 + 1) factor,
which changes no ranking. Here every length is exact; Lucene stores each document's length in
one byte (``SmallFloat.intToByte4``), so its scores differ slightly and near-ties may swap. A 2-term
AND query scores only the documents holding both terms (its exact match set). Ties are broken by
the smaller document id, as Lucene breaks them within one segment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pglimits_core.datasets.corpus import Corpus

K1, B = 1.2, 0.75
#: relative tolerance for "scores the same as the k-th best": float32 (Lucene) vs float64 here
TIE_TOLERANCE = 1e-6


@dataclass
class Bm25:
    """Per-term postings with term frequencies, document lengths and the corpus statistics."""

    docs: np.ndarray  # int32 doc ids, grouped by term (sorted within a term)
    tfs: np.ndarray  # int32 term frequency of each (term, doc)
    offsets: np.ndarray  # int64 (vocabulary + 1,): term t = docs[off[t]:off[t+1]]
    lengths: np.ndarray  # float64 tokens per document
    rank_of: dict[str, int]

    @classmethod
    def of(cls, corpus: Corpus) -> Bm25:
        tokens = np.asarray(corpus.tokens).astype(np.int64)
        documents = corpus.num_documents
        doc_of_token = np.repeat(np.arange(documents, dtype=np.int64), np.diff(np.asarray(corpus.doc_offsets)))
        keys = np.sort(tokens * documents + doc_of_token)
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if keys.size else keys
        unique = keys[starts]
        tfs = np.diff(np.append(starts, keys.size)).astype(np.int32)
        offsets = np.zeros(len(corpus.words) + 1, dtype=np.int64)
        np.cumsum(np.bincount(unique // documents, minlength=len(corpus.words)), out=offsets[1:])
        lengths = np.diff(np.asarray(corpus.doc_offsets)).astype(np.float64)
        return cls((unique % documents).astype(np.int32), tfs, offsets, lengths,
                   {str(word): rank for rank, word in enumerate(corpus.words)})

    @property
    def documents(self) -> int:
        return len(self.lengths)

    def idf(self, rank: int) -> float:
        n = self.offsets[rank + 1] - self.offsets[rank]
        return float(np.log(1.0 + (self.documents - n + 0.5) / (n + 0.5)))

    def scores(self, terms: tuple[str, ...], docs: np.ndarray) -> np.ndarray:
        """BM25 of each of ``docs`` (each must hold every term) for the query ``terms``."""
        docs = np.asarray(docs, dtype=np.int64)
        avgdl = self.lengths.mean()
        norm = K1 * (1.0 - B + B * self.lengths[docs] / avgdl)
        total = np.zeros(len(docs))
        for term in terms:
            rank = self.rank_of[term]
            start, stop = self.offsets[rank], self.offsets[rank + 1]
            tf = self.tfs[start:stop][np.searchsorted(self.docs[start:stop], docs)].astype(np.float64)
            total += self.idf(rank) * tf / (tf + norm)
        return total

    def top(self, terms: tuple[str, ...], matches: np.ndarray, k: int = 10) -> tuple[list[int], np.ndarray]:
        """The exact top-``k`` of the match set (ties: smaller id first) and every match's score."""
        scores = self.scores(terms, matches)
        order = np.lexsort((np.asarray(matches), -scores))[:k]
        return [int(matches[i]) for i in order], scores


def agreement(found: list[int], reference: list[int], expected: int) -> float | None:
    """Overlap of two top-k lists: shared documents / the number a correct answer holds."""
    if expected == 0:
        return None
    return len(set(found) & set(reference)) / expected


def tie_aware_agreement(found: list[int], matches: np.ndarray, scores: np.ndarray, expected: int) -> float | None:
    """Share of ``found`` that belongs to *some* exact top-k: its exact score is at least the
    k-th best exact score (a tie at the cut makes several top-k lists equally right)."""
    if expected == 0:
        return None
    cut = np.sort(scores)[::-1][expected - 1]
    by_doc = dict(zip(np.asarray(matches).tolist(), scores.tolist(), strict=True))
    good = sum(1 for doc in found if by_doc.get(doc, -np.inf) >= cut - TIE_TOLERANCE * abs(cut))
    return good / expected
