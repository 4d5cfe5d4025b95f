"""An external search server is labelled by what its GET / says it is, never by the name given."""

import pytest
import typer

from pglimits_core import cli
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers import elasticsearch as es_mod
from pglimits_core.servers import opensearch as os_mod
from pglimits_core.servers.elasticsearch import ElasticsearchServer
from pglimits_core.servers.opensearch import OpenSearchServer
from pglimits_core.servers.registry import SERVERS, server_class

URL = "http://127.0.0.1:9200"

# GET / bodies as the servers send them (ES 8.13.4 docker image, ES 7.17.9, OpenSearch 2.19.6)
ES_8 = {
    "name": "es01", "cluster_name": "docker-cluster", "cluster_uuid": "kD1c3n3yS1uFh3Q2J8Zk3A",
    "version": {"number": "8.13.4", "build_flavor": "default", "build_type": "docker",
                "build_hash": "da95df118650b55a500dcc181889ac35c6d8da7c",
                "build_date": "2024-05-06T22:04:45.107454559Z", "build_snapshot": False,
                "lucene_version": "9.10.0", "minimum_wire_compatibility_version": "7.17.0",
                "minimum_index_compatibility_version": "7.0.0"},
    "tagline": "You Know, for Search",
}
ES_7 = {**ES_8, "version": {**ES_8["version"], "number": "7.17.9", "lucene_version": "8.11.1"}}
OPENSEARCH = {
    "name": "node", "cluster_name": "opensearch", "cluster_uuid": "x",
    "version": {"distribution": "opensearch", "number": "2.19.6", "build_type": "jar",
                "build_hash": "unknown", "lucene_version": "9.12.2",
                "minimum_wire_compatibility_version": "7.10.0",
                "minimum_index_compatibility_version": "7.0.0"},
    "tagline": "The OpenSearch Project: https://opensearch.org/",
}


def serve(monkeypatch, module, root, health="green"):
    """Make ``module.get_json`` answer GET / with ``root`` and the health call with ``health``."""
    def fake_get_json(url, timeout_s=5.0):
        if url.endswith("/_cluster/health"):
            return {"status": health}
        if url.endswith("/_nodes/_local"):
            return {"nodes": {"n1": {"jvm": {}, "os": {}, "plugins": [], "settings": {}}}}
        assert url == f"{URL}/", url
        return root
    monkeypatch.setattr(module, "get_json", fake_get_json)


def test_elasticsearch_8_is_described_by_its_real_name(monkeypatch):
    serve(monkeypatch, es_mod, ES_8)
    assert ElasticsearchServer.describe_url(URL) == {
        "version": "8.13.4",
        "settings": {"distribution": "elasticsearch", "lucene_version": "9.10.0",
                     "build_flavor": "default", "build_hash": "da95df118650b55a500dcc181889ac35c6d8da7c",
                     "cluster_name": "docker-cluster"},
    }
    assert ElasticsearchServer.probe(URL) is True


def test_red_elasticsearch_does_not_answer(monkeypatch):
    serve(monkeypatch, es_mod, ES_8, health="red")
    assert ElasticsearchServer.probe(URL) is False


def test_elasticsearch_7_is_refused(monkeypatch):
    serve(monkeypatch, es_mod, ES_7)
    with pytest.raises(PGLimitsError, match=r"Elasticsearch 7\.17\.9; only 8\.x"):
        ElasticsearchServer.describe_url(URL)
    with pytest.raises(PGLimitsError, match="only 8.x"):
        ElasticsearchServer.probe(URL)


def test_opensearch_is_refused_as_elasticsearch(monkeypatch):
    serve(monkeypatch, es_mod, OPENSEARCH)
    fix = f"this is OpenSearch 2.19; use --external opensearch={URL}"
    with pytest.raises(PGLimitsError) as raised:
        ElasticsearchServer.describe_url(URL)
    assert raised.value.fix == fix
    assert "\n" not in str(raised.value)
    with pytest.raises(PGLimitsError, match="OpenSearch"):
        ElasticsearchServer.probe(URL)  # answers, but must not be attached under the wrong name


def test_opensearch_fork_known_only_by_tagline_is_refused(monkeypatch):
    body = {**OPENSEARCH, "version": {k: v for k, v in OPENSEARCH["version"].items() if k != "distribution"}}
    serve(monkeypatch, es_mod, body)
    with pytest.raises(PGLimitsError, match="--external opensearch="):
        ElasticsearchServer.describe_url(URL)


def test_not_a_search_server_is_refused(monkeypatch):
    serve(monkeypatch, es_mod, {"title": "qdrant - vector search engine", "version": "1.16.3"})
    with pytest.raises(PGLimitsError, match="does not look like Elasticsearch"):
        ElasticsearchServer.describe_url(URL)


def test_opensearch_describe_refuses_a_real_elasticsearch(monkeypatch):
    serve(monkeypatch, os_mod, ES_8)
    with pytest.raises(PGLimitsError) as raised:
        OpenSearchServer.describe_url(URL)
    assert raised.value.fix == f"this is Elasticsearch; use --external elasticsearch={URL}"


def test_opensearch_describe_still_accepts_opensearch(monkeypatch):
    serve(monkeypatch, os_mod, OPENSEARCH)
    assert OpenSearchServer.describe_url(URL)["settings"]["distribution"] == "opensearch"


def test_elasticsearch_is_registered_and_external_only():
    assert server_class("elasticsearch") is ElasticsearchServer
    with pytest.raises(PGLimitsError, match="cannot be installed here") as raised:
        ElasticsearchServer().start()
    assert "--external elasticsearch=" in raised.value.fix
    assert ElasticsearchServer.missing()[0][1] == raised.value.fix


def test_doctor_does_not_count_external_only_as_missing(monkeypatch):
    monkeypatch.setattr(cli, "SERVERS", {"elasticsearch": SERVERS["elasticsearch"]})
    with pytest.raises(typer.Exit) as exited:
        cli.doctor()
    assert exited.value.exit_code == 0
