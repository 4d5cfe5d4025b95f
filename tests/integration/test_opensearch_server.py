"""A real embedded OpenSearch 2.19 node analyzes, indexes and answers AND queries exactly."""

import random
import shutil
import socket
import uuid

import psutil
import pytest

from pglimits_core.config import PROJECT_ROOT
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.opensearch import OpenSearchServer

pytestmark = pytest.mark.integration

INDEX = "and_check"
N_DOCS = 400
# surface forms -> the token lowercase + stop + English snowball must make of them; the Python
# ground truth works on these tokens, and test_analyzer_gives_expected_tokens pins the mapping
FAMILIES = {
    "run": ["run", "Runs", "running", "RUN"],
    "connect": ["connect", "connections", "Connected", "connecting"],
    "search": ["search", "Searches", "searching", "searched"],
    "index": ["index", "indexes", "Indexing", "indexed"],
    "alpha": ["alpha", "ALPHA"],
    "bravo": ["bravo"],
    "delta": ["delta", "Delta"],
    "tango": ["tango"],
}
STOP_WORDS = ["the", "and", "of", "a", "is", "The", "AND"]
QUERIES = ["Running CONNECTIONS", "the searched and indexes", "alpha runs delta", "bravo tango searching",
           "connect"]
ANALYSIS = {
    "filter": {"english_snowball": {"type": "snowball", "language": "English"}},
    "analyzer": {"text_en": {"type": "custom", "tokenizer": "standard",
                             "filter": ["lowercase", "stop", "english_snowball"]}},
}


def seeded_docs(seed: int = 20240531) -> dict[str, str]:
    rng = random.Random(seed)
    surfaces = [word for forms in FAMILIES.values() for word in forms]
    docs = {}
    for i in range(N_DOCS):
        words = rng.choices(surfaces, k=rng.randint(2, 9)) + rng.choices(STOP_WORDS, k=rng.randint(0, 3))
        rng.shuffle(words)
        docs[f"d{i:04d}"] = " ".join(words)
    return docs


def tokens_of(text: str) -> set[str]:
    stem = {form.lower(): base for base, forms in FAMILIES.items() for form in forms}
    return {stem[word.lower()] for word in text.split() if word.lower() in stem}


def expected_and_hits(docs: dict[str, str], query: str) -> set[str]:
    terms = tokens_of(query)
    return {doc_id for doc_id, text in docs.items() if terms <= tokens_of(text)}


def jvms_using(data_dir) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "java" in (proc.info["name"] or "") and str(data_dir) in cmdline:
            found.append(proc)
    return found


def new_data_dir():
    return PROJECT_ROOT / ".pglimits" / "test" / f"opensearch-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module", autouse=True)
def launcher():
    OpenSearchServer.install()


@pytest.fixture(scope="module")
def node():
    data_dir = new_data_dir()
    server = OpenSearchServer(data_dir=data_dir, heap="512m")
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def client(node):
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[node.endpoint.url], timeout=60)
    yield client
    client.close()


@pytest.fixture(scope="module")
def loaded_index(client):
    from opensearchpy import helpers

    docs = seeded_docs()
    client.indices.create(index=INDEX, body={
        "settings": {"number_of_shards": 1, "number_of_replicas": 0, "analysis": ANALYSIS},
        "mappings": {"_source": {"enabled": False},
                     "properties": {"body": {"type": "text", "analyzer": "text_en"}}},
    })
    actions = ({"_index": INDEX, "_id": doc_id, "body": text} for doc_id, text in docs.items())
    indexed, errors = helpers.bulk(client, actions, chunk_size=100)
    assert (indexed, errors) == (N_DOCS, [])
    client.indices.refresh(index=INDEX)
    client.indices.forcemerge(index=INDEX, max_num_segments=1, wait_for_completion=True)
    # the merged segment replaces the old ones for searches only after a refresh (the study does
    # the same); without it the periodic refresh decides, which a loaded box delays
    client.indices.refresh(index=INDEX)
    return docs


def test_analyzer_gives_expected_tokens(client, loaded_index):
    for base, forms in FAMILIES.items():
        for form in forms:
            result = client.indices.analyze(index=INDEX, body={"analyzer": "text_en", "text": form})
            assert [t["token"] for t in result["tokens"]] == [base], form
    result = client.indices.analyze(index=INDEX, body={"analyzer": "text_en", "text": " ".join(STOP_WORDS)})
    assert result["tokens"] == []


def test_force_merged_to_one_segment(client, loaded_index):
    shards = client.indices.segments(index=INDEX)["indices"][INDEX]["shards"]["0"]
    assert [copy["num_search_segments"] for copy in shards] == [1]


@pytest.mark.parametrize("query", QUERIES)
def test_and_match_returns_exactly_docs_with_all_terms(client, loaded_index, query):
    expected = expected_and_hits(loaded_index, query)
    response = client.search(index=INDEX, body={
        "query": {"match": {"body": {"query": query, "operator": "and"}}},
        "size": N_DOCS, "track_total_hits": True, "_source": False,
    })
    assert {hit["_id"] for hit in response["hits"]["hits"]} == expected
    assert response["hits"]["total"]["value"] == len(expected)
    assert 0 < len(expected) < N_DOCS  # the check means something only if it filters


def test_describe_reports_versions_and_heap(node):
    info = node.describe()
    assert info["version"].startswith("2.19.")
    assert info["settings"]["lucene_version"].startswith("9.12.")
    assert info["settings"]["heap"] == "512m"
    assert info["settings"]["heap_max_bytes"] == 512 << 20
    assert "-XX:+UseG1GC" in info["settings"]["jvm_flags"]
    assert node.health()
    assert node.storage_bytes() > 0


def test_stop_leaves_no_jvm():
    data_dir = new_data_dir()
    server = OpenSearchServer(data_dir=data_dir, heap="256m", pretouch=False)
    try:
        endpoint = server.start()
        jvm = psutil.Process(endpoint.pids[0])
        assert jvm.is_running() and jvms_using(data_dir)
        server.stop()
        server.stop()  # idempotent
        assert not psutil.pid_exists(endpoint.pids[0]) or jvm.status() == psutil.STATUS_ZOMBIE
        assert jvms_using(data_dir) == []
        assert not server.health()
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def test_taken_port_is_a_clear_error():
    data_dir = new_data_dir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PGLimitsError, match=f"port {port}.*already in use"):
            OpenSearchServer(data_dir=data_dir, port=port, heap="256m").start()
    assert jvms_using(data_dir) == []
    shutil.rmtree(data_dir, ignore_errors=True)


def test_node_that_fails_to_start_shows_log_and_leaves_no_jvm():
    data_dir = new_data_dir()
    server = OpenSearchServer(data_dir=data_dir, heap="256m", pretouch=False,
                              settings={"no.such.setting": "1"}, startup_timeout_s=60)
    try:
        with pytest.raises(PGLimitsError, match="no.such.setting"):
            server.start()
        assert jvms_using(data_dir) == []
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def test_node_not_healthy_in_time_is_an_error_and_leaves_no_jvm():
    data_dir = new_data_dir()
    server = OpenSearchServer(data_dir=data_dir, heap="256m", pretouch=False, startup_timeout_s=0.3)
    try:
        with pytest.raises(PGLimitsError, match="did not become ready within"):
            server.start()
        assert jvms_using(data_dir) == []
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
