"""Seeded corpus and vectors: reproducible bytes, Zipf shape, exact ground truth, safe storage."""

from __future__ import annotations

import json
import re
import shutil
from collections import namedtuple

import numpy as np
import pytest

from pglimits_core.datasets import store
from pglimits_core.datasets.corpus import (
    FREQUENCY_CLASSES,
    STOP_WORDS,
    CorpusSpec,
    frequency_class_ranks,
    generate_corpus,
    generate_vocabulary,
)
from pglimits_core.datasets.vectors import VectorSpec, generate_vectors, recall_at_k
from pglimits_core.errors import PGLimitsError

SMALL_CORPUS = CorpusSpec(documents=2000, vocabulary=1000, words_per_doc=30, queries_per_class=10)
SMALL_VECTORS = VectorSpec(count=2000, dim=32, clusters=10, queries=50, k=10)
DEAD_PID = 2**31 - 1  # above any kernel's pid_max: no such process
Usage = namedtuple("Usage", "total used free")


@pytest.fixture(scope="module")
def small_corpus():
    return generate_corpus(SMALL_CORPUS)


@pytest.fixture(scope="module")
def small_vectors():
    return generate_vectors(SMALL_VECTORS)


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def corpus_arrays(corpus):
    return [corpus.words, corpus.tokens, corpus.doc_offsets, corpus.truth_docs,
            corpus.truth_offsets]


def test_same_seed_same_corpus_other_seed_differs(small_corpus):
    again = generate_corpus(SMALL_CORPUS)
    assert all(np.array_equal(a, b) for a, b in zip(corpus_arrays(small_corpus),
                                                     corpus_arrays(again), strict=True))
    assert again.queries == small_corpus.queries
    other = generate_corpus(CorpusSpec(**{**SMALL_CORPUS.__dict__, "seed": 7}))
    assert not np.array_equal(other.words, small_corpus.words)
    assert not np.array_equal(other.tokens[:1000], small_corpus.tokens[:1000])


def test_same_seed_same_vectors_other_seed_differs(small_vectors):
    again = generate_vectors(SMALL_VECTORS)
    assert np.array_equal(again.base, small_vectors.base)
    assert np.array_equal(again.queries, small_vectors.queries)
    assert np.array_equal(again.truth_ids, small_vectors.truth_ids)
    other = generate_vectors(VectorSpec(**{**SMALL_VECTORS.__dict__, "seed": 7}))
    assert not np.array_equal(other.base, small_vectors.base)


def test_vocabulary_is_distinct_lowercase_words_of_one_token_each():
    words = generate_vocabulary(5000, seed=3).tolist()
    assert len(set(words)) == len(words) == 5000
    assert not set(words) & STOP_WORDS
    for word in words:
        assert re.fullmatch(r"[a-z]{4,10}", word), word
        assert re.findall(r"[a-z]+", word) == [word]


@pytest.mark.parametrize("s", [1.0, 1.5])
def test_rank_frequency_follows_zipf(s):
    corpus = generate_corpus(CorpusSpec(**{**SMALL_CORPUS.__dict__, "zipf_s": s}))
    counts = np.sort(np.bincount(corpus.tokens, minlength=corpus.spec.vocabulary))[::-1]
    assert counts[0] / counts[9] == pytest.approx(10**s, rel=0.15)
    assert counts[0] / counts[99] == pytest.approx(100**s, rel=0.35)


def test_document_lengths_stay_in_range_and_average_words_per_doc(small_corpus):
    lengths = np.diff(small_corpus.doc_offsets)
    low, high = SMALL_CORPUS.length_range
    assert lengths.min() >= low and lengths.max() <= high
    assert lengths.mean() == pytest.approx(SMALL_CORPUS.words_per_doc, rel=0.03)


def test_query_matches_and_frequencies_equal_a_brute_force_over_texts(small_corpus):
    documents = [set(small_corpus.text(d).split(" ")) for d in range(small_corpus.num_documents)]
    assert len(small_corpus.queries) == len(FREQUENCY_CLASSES) * SMALL_CORPUS.queries_per_class
    for index, (_, a, b) in enumerate(small_corpus.queries):
        expected = [d for d, words in enumerate(documents) if a in words and b in words]
        assert small_corpus.matches(index).tolist() == expected
        assert a != b and expected  # every query matches at least one document
        assert small_corpus.document_frequency(a) == sum(a in words for words in documents)


def test_query_classes_are_ordered_by_document_frequency(small_corpus):
    df = {name: [small_corpus.document_frequency(t) for q in small_corpus.queries
                 if q.term_class == name for t in (q.term_a, q.term_b)]
          for name, _, _ in FREQUENCY_CLASSES}
    assert max(df["rare"]) <= min(df["medium"]) and max(df["medium"]) <= min(df["frequent"])
    assert np.median(df["rare"]) < np.median(df["medium"]) < np.median(df["frequent"])
    assert min(df["rare"]) >= 2
    classes = frequency_class_ranks(small_corpus.document_frequencies)
    for query in small_corpus.queries:
        members = set(classes[query.term_class].tolist())
        assert {small_corpus.rank(query.term_a), small_corpus.rank(query.term_b)} <= members


@pytest.mark.parametrize("field, value", [("documents", 0), ("vocabulary", 100),
                                          ("zipf_s", -1.0), ("words_per_doc", 2.5)])
def test_corpus_spec_rejects_bad_values_naming_the_field(field, value):
    with pytest.raises(PGLimitsError, match=field):
        CorpusSpec(**{**SMALL_CORPUS.__dict__, field: value})


@pytest.mark.parametrize("field, value", [("count", 5), ("spread", 0), ("k", 0)])
def test_vector_spec_rejects_bad_values_naming_the_field(field, value):
    with pytest.raises(PGLimitsError, match=field):
        VectorSpec(**{**SMALL_VECTORS.__dict__, field: value})


def test_vectors_are_unit_length_and_queries_are_not_base_copies(small_vectors):
    assert small_vectors.base.dtype == np.float32
    assert np.allclose(np.linalg.norm(small_vectors.base, axis=1), 1.0, atol=1e-6)
    assert np.allclose(np.linalg.norm(small_vectors.queries, axis=1), 1.0, atol=1e-6)
    assert small_vectors.truth_scores[:, 0].max() < 0.9999


def test_vector_truth_equals_a_full_argsort(small_vectors):
    similarities = small_vectors.queries.astype(np.float64) @ small_vectors.base.T.astype(np.float64)
    ids = np.broadcast_to(np.arange(SMALL_VECTORS.count), similarities.shape)
    expected = np.lexsort((ids, -similarities), axis=-1)[:, :SMALL_VECTORS.k]
    assert np.array_equal(small_vectors.truth_ids, expected)
    kth = np.take_along_axis(similarities, expected[:, -1:], axis=1)[:, 0]
    assert np.allclose(small_vectors.truth_scores[:, -1], kth, atol=1e-12)


def test_exact_ties_go_to_the_smaller_id():
    from pglimits_core.datasets.vectors import exact_top_k

    base = np.array([[0, 1], [1, 0], [1, 0], [0, 1], [1, 0]], dtype=np.float32)
    ids, _ = exact_top_k(base, np.array([[1, 0]], dtype=np.float32), k=2)
    assert ids.tolist() == [[1, 2]]


def test_recall_of_the_truth_is_one_and_of_a_shifted_answer_lower(small_vectors):
    truth = small_vectors.truth_ids
    assert recall_at_k(truth, truth, 10) == 1.0
    assert recall_at_k(truth.tolist(), truth, 10) == 1.0
    shifted = np.concatenate([truth[:, 1:], np.full((len(truth), 1), -1)], axis=1)
    assert recall_at_k(shifted, truth, 10) == pytest.approx(0.9)
    assert recall_at_k([row[:5] for row in truth.tolist()], truth, 10) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        recall_at_k(truth[:-1], truth, 10)


def test_ensure_twice_builds_once_and_loads_what_was_generated(data_root, monkeypatch,
                                                               small_corpus):
    builds = []
    real_build = store._build_into
    monkeypatch.setattr(store, "_build_into", lambda *a: (builds.append(a), real_build(*a)))
    path = store.ensure_dataset(SMALL_CORPUS)
    manifest_mtime = (path / store.MANIFEST).stat().st_mtime_ns
    assert store.ensure_dataset(SMALL_CORPUS) == path == store.dataset_dir(SMALL_CORPUS)
    assert len(builds) == 1 and (path / store.MANIFEST).stat().st_mtime_ns == manifest_mtime
    assert path.parent == data_root / "datasets" and path.name.startswith("corpus-")
    loaded = store.load_corpus(path)
    assert all(np.array_equal(a, b) for a, b in zip(corpus_arrays(loaded),
                                                     corpus_arrays(small_corpus), strict=True))
    assert loaded.queries == small_corpus.queries and loaded.text(5) == small_corpus.text(5)


def test_same_spec_gives_byte_identical_files_in_two_data_dirs(tmp_path, monkeypatch):
    manifests = []
    for name in ("first", "second"):
        monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path / name))
        for spec in (SMALL_CORPUS, SMALL_VECTORS):
            path = store.ensure_dataset(spec)
            manifests.append((path.name, json.loads((path / store.MANIFEST).read_text())["files"]))
    assert manifests[:2] == manifests[2:]
    first, second = tmp_path / "first" / "datasets", tmp_path / "second" / "datasets"
    for file in first.rglob("*.npy"):
        assert file.read_bytes() == (second / file.relative_to(first)).read_bytes()


def test_vectors_round_trip_through_the_store(data_root, small_vectors):
    loaded = store.load_vectors(store.ensure_dataset(SMALL_VECTORS))
    assert np.array_equal(loaded.base, small_vectors.base)
    assert np.array_equal(loaded.truth_scores, small_vectors.truth_scores)
    assert loaded.spec == SMALL_VECTORS


def test_a_killed_build_leaves_a_temp_dir_the_next_call_removes(data_root):
    final = store.dataset_dir(SMALL_CORPUS)
    leftover = final.with_name(f".{final.name}.tmp-{DEAD_PID}-abcdef")
    leftover.mkdir(parents=True)
    (leftover / "tokens.npy").write_bytes(b"half")
    with pytest.raises(PGLimitsError, match="not a complete corpus dataset"):
        store.load_corpus(leftover)
    assert store.ensure_dataset(SMALL_CORPUS) == final
    assert not leftover.exists() and store.verify_dataset(final) == []


def test_a_failing_build_leaves_nothing_behind(data_root, monkeypatch):
    def crash(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "_write_file", crash)
    with pytest.raises(KeyboardInterrupt):
        store.ensure_dataset(SMALL_VECTORS)
    assert list((data_root / "datasets").iterdir()) == []


def test_verify_catches_a_flipped_byte_and_a_missing_file(data_root):
    path = store.ensure_dataset(SMALL_VECTORS)
    data = bytearray((path / "base.npy").read_bytes())
    data[-5] ^= 0x01
    (path / "base.npy").write_bytes(bytes(data))
    (path / "truth_ids.npy").unlink()
    assert store.verify_dataset(path) == ["base.npy: sha256 differs from the manifest",
                                          "truth_ids.npy: missing"]
    assert store.ensure_dataset(SMALL_VECTORS) == path  # rebuilt: a file was missing
    assert store.verify_dataset(path) == []


def test_a_nearly_full_disk_refuses_to_build(data_root, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: Usage(10 << 30, 9 << 30, 300 << 20))
    with pytest.raises(PGLimitsError, match="not enough disk for dataset vectors-") as info:
        store.ensure_dataset(SMALL_VECTORS)
    assert "300 MiB free" in str(info.value) and "\n" not in str(info.value)
    assert not store.dataset_dir(SMALL_VECTORS).exists()


def test_dataset_dir_depends_on_every_spec_field():
    names = {store.dataset_id(SMALL_CORPUS),
             store.dataset_id(CorpusSpec(**{**SMALL_CORPUS.__dict__, "queries_per_class": 11})),
             store.dataset_id(CorpusSpec(**{**SMALL_CORPUS.__dict__, "zipf_s": 1})),
             store.dataset_id(SMALL_VECTORS)}
    assert len(names) == 3  # zipf_s=1 and 1.0 are the same dataset


def test_a_corpus_too_small_for_its_queries_says_what_to_raise():
    with pytest.raises(PGLimitsError, match="too small for frequent 2-term queries.*raise documents"):
        generate_corpus(CorpusSpec(documents=3, vocabulary=500, words_per_doc=2))
