"""The search warm-up against a real Elasticsearch (512 MB heap) on the test corpus: the load
driver's worker processes run the study's queries in slices until two agree (or the cap), every slice answered
queries, the record says how it stopped, and nothing is left running. Prints the slices."""

from __future__ import annotations

import shutil
import sys
import uuid

import pytest

from pglimits_core.datasets.corpus import generate_corpus
from pglimits_core.profiles import load_profile
from pglimits_core.workloads.search.loading import load_index
from pglimits_core.workloads.search.ops import SearchOp
from pglimits_core.workloads.search.queries import build_query_set
from pglimits_core.workloads.search.systems.registry import make_system
from pglimits_core.workloads.search.warmup import WarmupRule, driver_slices, warm_until_steady
from tests.conftest import TEST_ROOT, processes_using

pytestmark = pytest.mark.integration

#: a cold JVM: 1 s slices, at least 4 s, a cap of 20 s (the test profile's own rule is shorter)
RULE = WarmupRule(cap_s=20, min_s=4, slice_s=1, tolerance=0.10, clients=4)


def test_a_cold_engine_is_warmed_until_two_slices_agree_or_the_cap():
    from pglimits_core.servers.elasticsearch import ElasticsearchServer

    data_dir = TEST_ROOT / f"search-warm-{uuid.uuid4().hex[:10]}"
    server = ElasticsearchServer(data_dir=data_dir, heap="512m", pretouch=False)
    corpus = generate_corpus(load_profile("test").datasets.corpus)
    queries = build_query_set(corpus, per_decade=3, top_fraction=0.2, seed=7)
    try:
        server.start()
        url = server.endpoint.url
        with make_system("elasticsearch").open(url) as index:
            texts = (corpus.text(d) for d in range(corpus.num_documents))
            load_index(index, index.encode_chunks(texts, 500), "test", corpus.num_documents)
        op = SearchOp("elasticsearch", url, {}, [(q.term_a, q.term_b, q.expected_hits) for q in queries.queries])
        record = warm_until_steady(RULE, driver_slices(op, RULE.clients, seed=7))
    finally:
        server.stop()
        leaked = processes_using(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)
        assert leaked == [], f"JVM left running: {leaked}"
    print(f"\nwarm-up: {record['stopped']} after {record['seconds']} s, {record['queries']} queries; "
          f"qps per slice: {record['slices_qps']}", file=sys.stderr)
    slices = record["slices_qps"]
    assert all(qps > 0 for qps in slices) and record["queries"] > 0 and record["clients"] == 4
    assert RULE.min_slices <= len(slices) <= RULE.max_slices
    if record["steady"]:  # stopped at the first pair of agreeing slices past the minimum
        assert abs(slices[-1] - slices[-2]) <= RULE.tolerance * slices[-2] + 0.2  # qps rounded to 0.1
    else:
        assert len(slices) == RULE.max_slices and record["stopped"] == "not steady after cap (20 s)"
