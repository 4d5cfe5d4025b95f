"""A search server is labelled by what it says it is, never by the name given: OpenSearch is
never "Elasticsearch", and an Elasticsearch is the embedded core-modules build or an external
node as its own plugins say. Also: how the embedded one refuses to start without Java or its
launcher (one line naming the fix), and the JVM flags it gets."""

import pytest
import typer

from pglimits_core import cli
from pglimits_core.errors import PGLimitsError, ServerUnavailable
from pglimits_core.servers import elasticsearch as es_mod
from pglimits_core.servers import jvm_node
from pglimits_core.servers import opensearch as os_mod
from pglimits_core.servers.base import Server
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


def serve(monkeypatch, module, root, health="green", plugins=()):
    """Make ``module.get_json`` answer GET / with ``root``, the health call with ``health`` and
    the local node's info with ``plugins``."""
    plugins = [{"name": cls.rsplit(".", 1)[-1], "classname": cls} for cls in plugins]
    def fake_get_json(url, timeout_s=5.0):
        if url.endswith("/_cluster/health"):
            return {"status": health}
        if url.endswith("/_nodes/_local"):
            return {"nodes": {"n1": {"jvm": {}, "os": {}, "plugins": plugins, "settings": {}}}}
        assert url == f"{URL}/", url
        return root
    monkeypatch.setattr(module, "get_json", fake_get_json)


def test_elasticsearch_8_is_described_by_its_real_name(monkeypatch):
    serve(monkeypatch, es_mod, ES_8)
    assert ElasticsearchServer.describe_url(URL) == {
        "version": "8.13.4",
        "settings": {"distribution": "elasticsearch", "deployment": "external",
                     "build": es_mod.BUILDS["external"], "lucene_version": "9.10.0",
                     "build_flavor": "default", "build_hash": "da95df118650b55a500dcc181889ac35c6d8da7c",
                     "cluster_name": "docker-cluster", "jvm_version": "", "heap_max_bytes": None,
                     "jvm_flags": [], "plugins": [], "modules": [], "node_settings": {}},
    }
    assert ElasticsearchServer.probe(URL) is True


def test_our_launcher_is_described_as_the_embedded_core_modules_build(monkeypatch):
    serve(monkeypatch, es_mod, ES_8, plugins=["org.elasticsearch.transport.netty4.Netty4Plugin",
                                             es_mod.ROOT_PLUGIN_CLASS])
    settings = ElasticsearchServer.describe_url(URL)["settings"]
    assert settings["deployment"] == "embedded"
    assert "core-modules" in settings["build"] and "no x-pack" in settings["build"]
    assert settings["build_hash"] == ES_8["version"]["build_hash"]


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


def test_elasticsearch_is_registered_and_startable():
    assert server_class("elasticsearch") is ElasticsearchServer
    assert not getattr(ElasticsearchServer, "external_only", False)
    assert ElasticsearchServer.install.__func__ is not Server.install.__func__  # `servers install` builds it


def test_missing_java_is_one_line_naming_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(jvm_node.shutil, "which", lambda name: None)
    with pytest.raises(ServerUnavailable) as raised:
        ElasticsearchServer(data_dir=tmp_path).start()
    assert "java 17+" in str(raised.value) and "\n" not in str(raised.value)
    assert raised.value.fix == jvm_node.JAVA_INSTALL
    assert not (tmp_path / "logs").exists()  # nothing was started


def test_too_old_java_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(jvm_node, "java_major", lambda java: 11)
    with pytest.raises(ServerUnavailable, match=r"java 17\+ \(/opt/jdk11/bin/java is 11\)"):
        ElasticsearchServer(data_dir=tmp_path, java="/opt/jdk11/bin/java").start()


def test_unbuilt_launcher_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setattr(es_mod.LAUNCHER, "built", lambda: False)
    with pytest.raises(ServerUnavailable) as raised:
        ElasticsearchServer(data_dir=tmp_path).start()
    assert raised.value.fix == es_mod.LAUNCHER.install_command


def test_jvm_flags_follow_the_java_version(tmp_path):
    on_17 = es_mod.jvm_flags("512m", tmp_path, 17)
    assert "-Djava.locale.providers=SPI,COMPAT" in on_17
    assert not any(flag.startswith("--enable-native-access") for flag in on_17)
    assert "-XX:MaxDirectMemorySize=268435456" in on_17 and "-XX:G1HeapRegionSize=4m" in on_17
    on_25 = es_mod.jvm_flags("512m", tmp_path, 25, pretouch=False)
    assert "-Djava.locale.providers=SPI,CLDR" in on_25 and "--enable-native-access=ALL-UNNAMED" in on_25
    assert "-XX:+AlwaysPreTouch" not in on_25
    assert not any("security.manager" in flag for flag in on_17 + on_25)


def test_launcher_pins_the_version_the_python_side_reports():
    pom = (es_mod.LAUNCHER.dir / "pom.xml").read_text()
    assert f"<elasticsearch.version>{es_mod.ELASTICSEARCH_VERSION}</elasticsearch.version>" in pom


@pytest.mark.parametrize(("built", "exit_code"), [(True, 0), (False, 1)])
def test_doctor_counts_an_unbuilt_launcher_as_missing(monkeypatch, built, exit_code):
    monkeypatch.setattr(cli, "SERVERS", {"elasticsearch": SERVERS["elasticsearch"]})
    monkeypatch.setattr(es_mod.LAUNCHER, "built", lambda: built)
    monkeypatch.setattr(es_mod.LAUNCHER, "toolchain_missing", lambda java=None: [])
    with pytest.raises(typer.Exit) as exited:
        cli.doctor()
    assert exited.value.exit_code == exit_code
    expected = [] if built else [("Elasticsearch 8.13.4 launcher (Maven build)", es_mod.LAUNCHER.install_command)]
    assert ElasticsearchServer.missing() == expected


def test_bad_heap_is_refused_before_any_jvm(tmp_path):
    with pytest.raises(PGLimitsError, match=r"^elasticsearch: heap 'lots' is not a JVM size"):
        ElasticsearchServer(data_dir=tmp_path, heap="lots")
