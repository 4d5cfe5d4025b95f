"""Postgres 17 with a BM25 extension as a search system, on a real ``postgres_ext`` server.

One server for the module (127.0.0.1, stopped at the end with nothing left running). The test
corpus is loaded through the systems' own verbs (the same COPY payloads as ``pg_gin``), the
BM25 index built, and the study's own correctness check run over every query: pg_search agrees
with the exact match sets and counts, and its top 10 is the exact BM25 top 10 (ties counted);
pg_textsearch, which only ranks, is declined by the same check with its count as evidence. A
missing wheel is one line naming the package.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import psutil
import pytest

from pglimits_core.datasets.corpus import generate_corpus
from pglimits_core.errors import PGLimitsError
from pglimits_core.profiles import load_profile
from pglimits_core.servers import postgres_ext
from pglimits_core.servers.postgres_ext import PACKAGE, VERSION, PostgresExtServer
from pglimits_core.workloads.search.correctness import check_all
from pglimits_core.workloads.search.loading import load_index
from pglimits_core.workloads.search.prepared import Prepared, Setup
from pglimits_core.workloads.search.queries import K, build_query_set
from pglimits_core.workloads.search.variant import variant
from tests.conftest import TEST_ROOT, processes_using

pytestmark = pytest.mark.integration

SEED = 7


@pytest.fixture(scope="module")
def server():
    PostgresExtServer.install()
    path = TEST_ROOT / f"search-ext-{uuid.uuid4().hex[:10]}"
    server = PostgresExtServer(data_dir=path, settings={"shared_buffers": "256MB"})
    server.start()
    pids = server.pids()
    yield server
    server.stop()
    assert not [pid for pid in pids if psutil.pid_exists(pid)]
    assert not processes_using(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def data() -> Prepared:
    spec = load_profile("test").datasets.corpus
    corpus = generate_corpus(spec)
    queries = build_query_set(corpus, per_decade=3, top_fraction=0.2, seed=SEED)
    return Prepared(Setup(spec, "test", SEED), Path("."), corpus, queries)


def loaded(server, data: Prepared, system: str):
    engine = variant(system).engine().open(server.endpoint.url)
    times = load_index(engine, data.chunks(engine), "test", data.corpus.num_documents)
    assert engine.documents() == data.corpus.num_documents
    return engine, times


def test_pg_search_answers_every_query_exactly_with_bm25_order(server, data):
    engine, times = loaded(server, data, "pg_search")
    with engine:
        sizes, described = engine.sizes(), engine.describe()
        outcome = check_all(engine, data)
        plan = "\n".join(row[0] for row in engine.conn.execute(
            "EXPLAIN (GENERIC_PLAN) " + engine.sql.replace("%s", "$1::text")))
    assert set(times) == {"bulk_load_s", "index_build_s", "vacuum_analyze_s", "settle_s"}
    assert sizes["index_bytes"] > 0 and sizes["segments"] >= 1
    assert "pdb.unicode_words" in described["index"] and described["extension"] == {"pg_search": "0.21.14"}
    assert described["server_version"].startswith("17.")
    assert "TopNScanExecState" in plan  # the prepared, generic plan is the index's top-N scan
    assert (outcome["checked"], outcome["disagreed"]) == (len(data.queries.queries), 0), outcome["examples"]
    # one answer against the exact match set and the exact BM25 top 10 (bm25.py)
    q = next(q for q in data.queries.queries if q.matches > K)
    ids, _ = engine_answer(server, q)
    exact_top, _ = data.bm25.top((q.term_a, q.term_b), data.queries.truth[q.index], K)
    assert len(ids) == K and set(ids) <= set(data.queries.truth[q.index].tolist())
    assert len(set(ids) & set(exact_top)) >= K - 2, (ids, exact_top)
    # Tantivy's BM25 is Lucene's formula with one-byte lengths: near-ties may swap at the cut, no more
    tie_aware = [row["bm25_tie_aware"] for row in outcome["queries"] if row["matches"]]
    assert sum(tie_aware) / len(tie_aware) >= 0.95


def engine_answer(server, q):
    with variant("pg_search").engine().open(server.endpoint.url) as engine:
        return engine.search(q.term_a, q.term_b)


def test_pg_textsearch_only_ranks_and_the_check_declines_it(server, data):
    engine, _ = loaded(server, data, "pg_textsearch")
    with engine:
        assert engine.conn.info.dbname == postgres_ext.TEXTSEARCH_DATABASE
        outcome = check_all(engine, data)
    # its count is every document holding either term: more than the AND wherever the terms part
    words = [set(data.corpus.text(d).split()) for d in range(data.corpus.num_documents)]
    wider = [q for q in data.queries.queries if sum(1 for w in words if {q.term_a, q.term_b} & w) > q.matches]
    assert len(wider) > len(data.queries.queries) // 2
    assert outcome["disagreed"] >= len(wider)
    assert "count" in outcome["examples"][0]["problem"]


def test_a_missing_wheel_is_one_line_naming_the_package(monkeypatch, tmp_path):
    monkeypatch.setattr(postgres_ext, "pg_root", lambda: tmp_path / "nowhere")
    with pytest.raises(PGLimitsError) as caught:
        PostgresExtServer.locate()
    message = str(caught.value)
    assert "\n" not in message and f"{PACKAGE}=={VERSION}" in message
    assert PostgresExtServer.missing() and PACKAGE in PostgresExtServer.missing()[0][0]
