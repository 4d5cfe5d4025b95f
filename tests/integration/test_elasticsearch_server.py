"""A real embedded Elasticsearch 8.13.4 node answers every AND query of the corpus exactly.

The node is the project's own launcher (``launchers/elasticsearch``): the server jar and netty4
transport from Maven Central, no x-pack and none of the distribution's other modules. The search
study can put it beside OpenSearch and Postgres only if it indexes the same tokens and returns
the same match sets, so this checks the test profile's corpus against its exact ground truth on
a 1-shard, force-merged index, through the client the study uses (elasticsearch-py 8), and that
the node leaves nothing running once stopped, also when started and stopped by the CLI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import psutil
import pytest

from pglimits_core.config import PROJECT_ROOT
from pglimits_core.datasets.corpus import generate_corpus
from pglimits_core.errors import ServerUnavailable
from pglimits_core.profiles import load_profile
from pglimits_core.servers import ownership
from pglimits_core.servers.elasticsearch import ELASTICSEARCH_VERSION, ElasticsearchServer
from pglimits_core.servers.external import ExternalServer
from pglimits_core.servers.fleet import read_state, stop_recorded
from pglimits_core.servers.search_clients import search_client_for
from tests.conftest import TEST_ROOT, processes_using

pytestmark = pytest.mark.integration

INDEX = "corpus_and"
#: what Postgres's ``simple`` configuration reads: the standard tokenizer, lowercased
ANALYSIS = {"analyzer": {"plain": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase"]}}}


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(load_profile("test").datasets.corpus)


@pytest.fixture(scope="module")
def node():
    ElasticsearchServer.install()
    data_dir = TEST_ROOT / f"elasticsearch-{uuid.uuid4().hex[:12]}"
    server = ElasticsearchServer(data_dir=data_dir, heap="512m", pretouch=False)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        leaked = processes_using(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)
        assert leaked == [], f"JVM left running: {leaked}"


@pytest.fixture(scope="module")
def client(node):
    client = search_client_for("elasticsearch", node.endpoint.url)
    yield client
    client.close()


@pytest.fixture(scope="module")
def loaded_index(client, corpus):
    from elasticsearch import helpers

    client.indices.create(index=INDEX, settings={"number_of_shards": 1, "number_of_replicas": 0,
                                                 "analysis": ANALYSIS},
                          mappings={"_source": {"enabled": False},
                                    "properties": {"body": {"type": "text", "analyzer": "plain"}}})
    actions = ({"_index": INDEX, "_id": str(d), "body": corpus.text(d)} for d in range(corpus.num_documents))
    assert helpers.bulk(client, actions, chunk_size=500) == (corpus.num_documents, [])
    client.indices.refresh(index=INDEX)
    client.indices.forcemerge(index=INDEX, max_num_segments=1, wait_for_completion=True)
    return corpus


def test_root_reports_the_real_version_and_build(client):
    info = client.info()  # elasticsearch-py's product check passed: it is Elasticsearch to the client
    assert info["version"]["number"] == ELASTICSEARCH_VERSION
    assert re.fullmatch(r"[0-9a-f]{40}", info["version"]["build_hash"])
    assert info["version"]["lucene_version"] == "9.10.0"
    assert info["tagline"] == "You Know, for Search"


def test_head_root_answers(node):
    request = urllib.request.Request(f"{node.endpoint.url}/", method="HEAD")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200 and response.read() == b""


def test_one_primary_no_replica_and_one_segment(client, loaded_index):
    settings = client.indices.get_settings(index=INDEX)[INDEX]["settings"]["index"]
    assert (settings["number_of_shards"], settings["number_of_replicas"]) == ("1", "0")
    shards = client.indices.segments(index=INDEX)["indices"][INDEX]["shards"]
    assert list(shards) == ["0"]
    assert [copy["num_search_segments"] for copy in shards["0"]] == [1]


def test_analyzer_reads_the_corpus_words_as_tokens(client, loaded_index):
    corpus = loaded_index
    for doc_id in range(0, corpus.num_documents, corpus.num_documents // 10):
        text = corpus.text(doc_id)
        analyzed = client.indices.analyze(index=INDEX, analyzer="plain", text=text)
        assert [token["token"] for token in analyzed["tokens"]] == text.split()


def test_every_and_query_matches_the_ground_truth(client, loaded_index):
    corpus = loaded_index
    assert len(corpus.queries) >= 3
    for index, query in enumerate(corpus.queries):
        expected = corpus.matches(index).tolist()
        found = client.search(index=INDEX, query={"match": {"body": {
            "query": f"{query.term_a} {query.term_b}", "operator": "and"}}},
            size=corpus.num_documents, track_total_hits=True, source=False)
        assert found["hits"]["total"] == {"value": len(expected), "relation": "eq"}, query
        assert sorted(int(hit["_id"]) for hit in found["hits"]["hits"]) == expected, query


def test_describe_says_embedded_with_version_and_build(node):
    info = node.describe()
    settings = info["settings"]
    assert info["version"] == ELASTICSEARCH_VERSION
    assert settings["deployment"] == "embedded" and "core-modules" in settings["build"]
    assert re.fullmatch(r"[0-9a-f]{40}", settings["build_hash"])
    assert settings["modules"] == [] and "RootInfoPlugin" in settings["plugins"]
    assert settings["heap"] == "512m" and settings["heap_max_bytes"] == 512 << 20
    assert node.storage_bytes() > 0


def test_attached_by_url_it_is_still_described_as_the_embedded_build(node):
    attached = ExternalServer("elasticsearch", node.endpoint.url)
    assert attached.start().external
    info = attached.describe()
    assert info["settings"]["deployment"] == "embedded"
    assert info["settings"]["external_url"] == node.endpoint.url
    attached.stop()
    assert node.health()  # forgetting an attached server never stops it


def test_stop_leaves_no_process_and_no_record(node):
    pid = node.endpoint.pids[0]
    assert psutil.pid_exists(pid) and pid in {r["pid"] for r in ownership.recorded_servers()}
    node.stop()
    node.stop()  # idempotent
    assert not psutil.pid_exists(pid)
    assert pid not in {r["pid"] for r in ownership.recorded_servers()}
    assert processes_using(node.data_dir) == []
    assert not node.health()


def pglimits(*args: str, state: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PGLIMITS_STATE_DIR": str(state), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "pglimits_core", *args], capture_output=True, text=True,
                          env=env, cwd=PROJECT_ROOT, timeout=180, stdin=subprocess.DEVNULL)


def test_cli_up_status_down(isolated_state: Path):
    up = pglimits("servers", "up", "--detach", "elasticsearch", state=isolated_state)
    assert up.returncode == 0, up.stdout + up.stderr
    pids = [pid for endpoint in read_state().values() for pid in endpoint.pids]
    try:
        assert ELASTICSEARCH_VERSION in up.stdout and len(pids) == 1
        status = pglimits("servers", "status", state=isolated_state)
        assert "elasticsearch" in status.stdout and "yes" in status.stdout, status.stdout
        down = pglimits("servers", "down", state=isolated_state)
        assert down.returncode == 0 and "stopped: elasticsearch" in down.stdout, down.stdout + down.stderr
    finally:
        stop_recorded()
    assert not any(psutil.pid_exists(pid) for pid in pids)
    assert processes_using(isolated_state) == []


def test_node_that_fails_to_start_says_why_and_leaves_no_jvm():
    data_dir = TEST_ROOT / f"elasticsearch-bad-{uuid.uuid4().hex[:12]}"
    server = ElasticsearchServer(data_dir=data_dir, heap="256m", pretouch=False,
                                 settings={"no.such.setting": "1"}, startup_timeout_s=60)
    try:
        with pytest.raises(ServerUnavailable, match="failed to start: .*no.such.setting"):
            server.start()
        assert processes_using(data_dir) == []
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
