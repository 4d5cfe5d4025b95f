"""The search study's pieces without servers: the query streams (seeded, the same for every
system), the match-set buckets of the crossover, the answer check (an OR query is caught), the
exact BM25, the HTTP reader, and the plan's one-line errors."""

from __future__ import annotations

import numpy as np
import pytest

from pglimits_core.datasets.corpus import CorpusSpec, generate_corpus
from pglimits_core.errors import PGLimitsError
from pglimits_core.profiles import load_profile
from pglimits_core.workloads.search.bm25 import Bm25, agreement, tie_aware_agreement
from pglimits_core.workloads.search.correctness import check_answer
from pglimits_core.workloads.search.http import KeepAliveHttp, read_response
from pglimits_core.workloads.search.plan import plan, variants_of
from pglimits_core.workloads.search.queries import (
    SearchQuery,
    bucket_edges,
    bucket_names,
    build_query_set,
    decade_streams,
    worker_order,
)
from pglimits_core.workloads.search.systems.lucene import lucene_body
from pglimits_core.workloads.search.variant import variant


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(load_profile("test").datasets.corpus)


@pytest.fixture(scope="module")
def queries(corpus):
    return build_query_set(corpus, per_decade=5, top_fraction=0.2, seed=7)


def test_every_stream_has_one_seeded_order_and_workers_start_apart(queries):
    first, again = queries.stream("mixed", 7), queries.stream("mixed", 7)
    assert [q.index for q in first] == [q.index for q in again]  # same for every system and run
    assert [q.index for q in queries.stream("mixed", 8)] != [q.index for q in first]
    assert {q.group for q in first} == {"frequent", "medium", "rare"}  # mixed = the classes, not the buckets
    assert worker_order(first, 1, 3)[0] is first[len(first) // 3]
    assert sorted(q.index for q in worker_order(first, 2, 3)) == sorted(q.index for q in first)


def test_a_stream_without_queries_is_one_line_naming_the_fix(queries):
    with pytest.raises(PGLimitsError, match="no queries") as caught:
        queries.stream("no-such-stream", 7)
    assert "fix:" in str(caught.value) and "\n" not in str(caught.value)


def test_buckets_run_in_decades_to_an_open_last_one_at_the_top_fraction():
    assert bucket_edges(200_000, 0.2) == [1, 10, 100, 1000, 10_000, 40_000]
    assert decade_streams(200_000, 0.2) == ["1-9", "10-99", "100-999", "1000-9999", "10000-39999", "40000+"]
    assert bucket_names([1, 10, 100, 400]) == ["1-9", "10-99", "100-399", "400+"]
    assert bucket_edges(5000, 0.2) == [1, 10, 100, 1000]  # 20 % = 1,000 exactly: no empty bucket


def test_bucket_queries_have_exact_match_sets_in_their_bucket(corpus, queries):
    assert queries.decades == decade_streams(corpus.num_documents, 0.2)
    edges = bucket_edges(corpus.num_documents, 0.2)
    for name, low, high in zip(queries.decades, edges, [*edges[1:], None], strict=True):
        group = queries.group(name)
        assert len(group) == 5 and len({(q.term_a, q.term_b) for q in group}) == 5
        for q in group:
            assert low <= q.matches and (high is None or q.matches < high)
            truth = queries.truth[q.index]
            assert len(truth) == q.matches and np.all(np.diff(truth) > 0)
            holding = [d for d in range(corpus.num_documents) if {q.term_a, q.term_b} <= set(corpus.text(d).split())]
            assert holding == truth.tolist()


def test_a_bucket_the_corpus_cannot_fill_is_an_error_naming_the_fix():
    tiny = generate_corpus(CorpusSpec(documents=200, vocabulary=600, words_per_doc=10, queries_per_class=2))
    with pytest.raises(PGLimitsError, match="distinct queries") as caught:
        build_query_set(tiny, per_decade=50, top_fraction=0.2, seed=1)
    assert "per_decade" in caught.value.fix


def query(matches: int) -> SearchQuery:
    return SearchQuery(0, "frequent", "ka", "bo", matches)


def test_the_answer_check_catches_counts_wrong_sizes_and_documents_outside_the_match_set():
    truth = np.array([2, 5, 9, 11], dtype=np.int32)
    assert check_answer(query(4), truth, 4, [9, 2, 11, 5]) == ""
    # OR semantics: more matches than the AND, and documents holding only one term
    problem = check_answer(query(4), truth, 17, [9, 2, 3, 5])
    assert "count 17 != exact 4" in problem and "do not match (e.g. 3)" in problem
    assert "2 ids returned" in check_answer(query(4), truth, 4, [9, 2])
    assert "ids returned" in check_answer(query(4), truth, 4, [9, 9, 2, 5])  # a duplicate is no top 4


def test_the_engines_get_and_semantics_and_the_same_bytes():
    body = lucene_body("ka", "bo")
    assert b'"operator":"and"' in body and b'"size":10' in body and b'"track_total_hits":10000' in body
    assert variant("opensearch").query_template() == variant("elasticsearch").query_template()
    assert variant("pg_gin").label == "pg_gin ranked" and variant("pg_gin", ranked=False).label == "pg_gin unranked"
    assert variant("opensearch", operator="or").label == "opensearch operator=or"
    assert variant("pg_gin").options["plan_cache_mode"] == "force_generic_plan"
    assert variant("pg_gin", plan_cache_mode="auto").label == "pg_gin ranked plan_cache_mode=auto"
    with pytest.raises(PGLimitsError, match="plan_cache_mode 'sometimes'"):
        variant("pg_gin", plan_cache_mode="sometimes")
    with pytest.raises(PGLimitsError, match="no option 'ranked'"):
        variant("opensearch", ranked=False)
    with pytest.raises(PGLimitsError, match="unknown search system 'solr'"):
        variant("solr")


def test_bm25_scores_by_lucenes_formula_and_breaks_ties_by_id(corpus, queries):
    bm25 = Bm25.of(corpus)
    q = queries.group("frequent")[0]
    truth = queries.truth[q.index]
    top, scores = bm25.top((q.term_a, q.term_b), truth, 10)
    # by hand for the best document
    doc, words = top[0], corpus.text(top[0]).split()
    lengths = np.array([len(corpus.text(d).split()) for d in range(corpus.num_documents)])
    expected = 0.0
    for term in (q.term_a, q.term_b):
        df = sum(term in set(corpus.text(d).split()) for d in range(corpus.num_documents))
        idf = np.log(1 + (corpus.num_documents - df + 0.5) / (df + 0.5))
        tf = words.count(term)
        expected += idf * tf / (tf + 1.2 * (1 - 0.75 + 0.75 * len(words) / lengths.mean()))
    assert scores[list(truth).index(doc)] == pytest.approx(expected)
    ranked = sorted(zip(truth.tolist(), scores.tolist(), strict=True), key=lambda p: (-p[1], p[0]))
    assert top == [d for d, _ in ranked[:10]]


def test_tie_aware_agreement_accepts_any_document_tied_at_the_cut():
    matches = np.array([1, 2, 3, 4])
    scores = np.array([3.0, 2.0, 1.0, 1.0])  # documents 3 and 4 tie for third
    assert tie_aware_agreement([1, 2, 4], matches, scores, 3) == 1.0
    assert agreement([1, 2, 4], [1, 2, 3], 3) == pytest.approx(2 / 3)
    assert tie_aware_agreement([], matches, scores, 0) is None


class FakeSocket:
    def __init__(self, data: bytes, step: int = 7):
        self.data, self.step = data, step

    def recv(self, _size: int) -> bytes:
        chunk, self.data = self.data[:self.step], self.data[self.step:]
        return chunk


def connection(data: bytes) -> KeepAliveHttp:
    conn = KeepAliveHttp("http://127.0.0.1:9200")
    conn.sock = FakeSocket(data)
    return conn


def test_http_reader_reads_chunked_and_sized_answers_back_to_back():
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n"
    sized = b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}"
    conn = connection(chunked + sized)
    assert read_response(conn) == (200, b'{"a":1}')
    assert read_response(conn) == (404, b"{}")


def test_http_reader_says_so_when_the_server_hangs_up():
    with pytest.raises(ConnectionError, match="closed the connection"):
        read_response(connection(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{}"))


def test_the_test_profile_plans_load_and_correctness_before_any_timed_point():
    profile = load_profile("test")
    points = plan(profile.section("search"), profile)
    order = [p.experiment for p in points]
    assert order[:7] == ["load"] * 3 + ["correctness"] * 4
    assert {"throughput", "crossover", "latency"} <= set(order[7:])
    assert order.index("latency") > max(i for i, e in enumerate(order) if e == "throughput")


def test_plan_errors_name_the_key_and_the_fix():
    profile = load_profile("test")
    section = profile.section("search")
    typo = section.model_copy(update={"crossover": section.crossover.model_copy(update={"variants": ["pg_gin rankd"]})})
    with pytest.raises(PGLimitsError, match="search.crossover.variants names 'pg_gin rankd'"):
        variants_of(typo)
    twice = section.model_copy(update={"variants": [{"system": "pg_gin"}, {"system": "pg_gin", "ranked": True}]})
    with pytest.raises(PGLimitsError, match="twice"):
        variants_of(twice)
    no_rate = section.model_copy(update={"latency": section.latency.model_copy(update={"streams": ["rare"]})})
    with pytest.raises(PGLimitsError, match="needs .* throughput in stream 'rare'"):
        plan(no_rate, profile)


def test_a_dataset_that_fails_verification_stops_the_study_before_any_server(tmp_path, monkeypatch):
    """One line naming the file and the fix; ``prepare`` runs before the fleet starts, so nothing
    is left running."""
    from pglimits_core.datasets.store import ensure_dataset
    from pglimits_core.workloads.search.plan import prepare

    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path))
    profile = load_profile("test")
    path = ensure_dataset(profile.datasets.corpus)
    (path / "truth_docs.npy").write_bytes((path / "truth_docs.npy").read_bytes()[:-4] + b"\0\0\0\1")
    with pytest.raises(PGLimitsError, match="fails verification: truth_docs.npy: sha256") as caught:
        prepare(profile.section("search"), profile)
    assert "make datasets PROFILE=test" in caught.value.fix and "\n" not in str(caught.value)
