"""The datasets' ground truth is what the real engines answer exactly.

The search study will compare Postgres GIN and OpenSearch on identical match sets, and the
vector study Postgres pgvector and Qdrant at matched recall against exact top-k. Both rest on
the generated ground truth being what each engine itself returns when asked exactly: the
same tokens (Postgres ``simple`` vs OpenSearch ``standard`` + ``lowercase``), the same AND
match set for every query, and the same exact top-10 (pgvector sequential scan, Qdrant
``exact=True``). The test profile's datasets, on real servers.
"""

from __future__ import annotations

import shutil
import uuid

import numpy as np
import psycopg
import pytest

from pglimits_core.datasets.corpus import generate_corpus
from pglimits_core.datasets.vectors import generate_vectors, sequential_dot
from pglimits_core.profiles import load_profile
from tests.conftest import TEST_ROOT

pytestmark = pytest.mark.integration

INDEX = "corpus_truth"
# float32 engines vs the float64 ground truth: an id may swap with one whose score is this close
SCORE_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(load_profile("test").datasets.corpus)


@pytest.fixture(scope="module")
def vectors():
    return generate_vectors(load_profile("test").datasets.vectors)


def started(server_class, name: str, **options):
    data_dir = TEST_ROOT / f"{name}-{uuid.uuid4().hex[:8]}"
    server = server_class(data_dir=data_dir, **options)
    server.install()
    server.start()
    return server, data_dir


@pytest.fixture(scope="module")
def opensearch(corpus):
    from opensearchpy import OpenSearch, helpers

    from pglimits_core.servers.opensearch import OpenSearchServer

    server, data_dir = started(OpenSearchServer, "truth-opensearch", heap="512m")
    client = OpenSearch(hosts=[server.endpoint.url], timeout=60)
    try:
        client.indices.create(index=INDEX, body={
            "settings": {"number_of_shards": 1, "number_of_replicas": 0,
                         "analysis": {"analyzer": {"plain": {"type": "custom", "tokenizer": "standard",
                                                             "filter": ["lowercase"]}}}},
            "mappings": {"_source": {"enabled": False},
                         "properties": {"body": {"type": "text", "analyzer": "plain"}}}})
        actions = ({"_index": INDEX, "_id": str(d), "body": corpus.text(d)} for d in range(corpus.num_documents))
        assert helpers.bulk(client, actions, chunk_size=500) == (corpus.num_documents, [])
        client.indices.refresh(index=INDEX)
        yield client
    finally:
        client.close()
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def postgres(postgres_endpoint, corpus, vectors):
    schema = f"truth_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_endpoint.url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET search_path = {schema}, public")
        conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text NOT NULL,"
                     " tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED)")
        with conn.cursor().copy("COPY docs (id, body) FROM STDIN") as copy:
            for d in range(corpus.num_documents):
                copy.write_row((d, corpus.text(d)))
        conn.execute("CREATE INDEX ON docs USING gin (tsv)")
        conn.execute(f"CREATE TABLE vecs (id int PRIMARY KEY, v vector({vectors.base.shape[1]}))")
        with conn.cursor().copy("COPY vecs (id, v) FROM STDIN") as copy:
            for i, row in enumerate(vectors.base):
                copy.write_row((i, "[" + ",".join(map(repr, row.tolist())) + "]"))
        yield conn
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(scope="module")
def qdrant(vectors):
    from qdrant_client import QdrantClient, models

    from pglimits_core.servers.qdrant import QdrantServer

    server, data_dir = started(QdrantServer, "truth-qdrant")
    client = QdrantClient(url=server.endpoint.url, timeout=60)
    try:
        client.create_collection("truth", vectors_config=models.VectorParams(
            size=vectors.base.shape[1], distance=models.Distance.DOT))
        client.upload_collection("truth", vectors=np.asarray(vectors.base), ids=range(len(vectors.base)),
                                 batch_size=500, wait=True)
        yield client, models
    finally:
        client.close()
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def test_postgres_simple_and_opensearch_standard_read_the_same_tokens(corpus, opensearch, postgres):
    for doc_id in range(0, corpus.num_documents, corpus.num_documents // 10):
        text = corpus.text(doc_id)
        analyzed = opensearch.indices.analyze(index=INDEX, body={"analyzer": "plain", "text": text})
        assert [t["token"] for t in analyzed["tokens"]] == text.split()
        lexemes = postgres.execute("SELECT array_agg(lexeme) FROM unnest(to_tsvector('simple', %s))",
                                   (text,)).fetchone()[0]
        assert sorted(lexemes) == sorted(set(text.split()))


def test_every_and_query_matches_the_ground_truth_on_both_engines(corpus, opensearch, postgres):
    for index, query in enumerate(corpus.queries):
        expected = corpus.matches(index).tolist()
        in_postgres = [row[0] for row in postgres.execute(
            "SELECT id FROM docs WHERE tsv @@ to_tsquery('simple', %s) ORDER BY id",
            (f"{query.term_a} & {query.term_b}",))]
        assert in_postgres == expected, query
        found = opensearch.search(index=INDEX, body={
            "query": {"match": {"body": {"query": f"{query.term_a} {query.term_b}", "operator": "and"}}},
            "size": corpus.num_documents, "track_total_hits": True, "_source": False})
        assert sorted(int(hit["_id"]) for hit in found["hits"]["hits"]) == expected, query


def assert_same_top_k(found_ids: list[int], query_index: int, vectors) -> None:
    """Equal to the truth, except for swaps between ids whose exact scores tie within tolerance."""
    truth = vectors.truth_ids[query_index].tolist()
    kth_score = vectors.truth_scores[query_index, -1]
    swapped = set(found_ids) ^ set(truth)
    scores = sequential_dot(vectors.queries[query_index], vectors.base[sorted(swapped)]) if swapped else []
    assert all(abs(score - kth_score) < SCORE_TOLERANCE for score in scores), (query_index, found_ids, truth)


def test_pgvector_exact_scan_and_qdrant_exact_search_return_the_true_top_k(vectors, postgres, qdrant):
    client, models = qdrant
    k = vectors.truth_ids.shape[1]
    for q, query in enumerate(vectors.queries):
        literal = "[" + ",".join(map(repr, query.tolist())) + "]"
        # no vector index on vecs: this ORDER BY is an exact scan (<#> is negative inner product)
        in_postgres = [row[0] for row in postgres.execute(
            "SELECT id FROM vecs ORDER BY v <#> %s::vector, id LIMIT %s", (literal, k))]
        assert_same_top_k(in_postgres, q, vectors)
        in_qdrant = [hit.id for hit in client.query_points(
            "truth", query=query.tolist(), limit=k, search_params=models.SearchParams(exact=True)).points]
        assert_same_top_k(in_qdrant, q, vectors)
