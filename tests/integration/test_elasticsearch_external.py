"""OpenSearch is never attached or labelled as Elasticsearch, and the client follows the server.

The refusals are checked against our real embedded OpenSearch: it is exactly what a user could
wrongly pass as ``elasticsearch=URL``. (The embedded Elasticsearch itself is tested in
test_elasticsearch_server.py.)
"""

import os
import shutil
import subprocess
import sys
import uuid

import pytest

from pglimits_core.config import PROJECT_ROOT
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.elasticsearch import ElasticsearchServer
from pglimits_core.servers.opensearch import OpenSearchServer
from pglimits_core.servers.search_clients import search_client_for
from tests.conftest import TEST_ROOT, processes_using

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def opensearch_url():
    OpenSearchServer.install()
    data_dir = TEST_ROOT / f"opensearch-es-{uuid.uuid4().hex[:12]}"
    server = OpenSearchServer(data_dir=data_dir, heap="512m")
    try:
        yield server.start().url
    finally:
        server.stop()
        leaked = processes_using(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)
        assert leaked == [], f"JVM left running: {leaked}"


def run_cli(*args: str, state_dir) -> subprocess.CompletedProcess:
    env = {**os.environ, "PGLIMITS_STATE_DIR": str(state_dir)}
    return subprocess.run([sys.executable, "-m", "pglimits_core", *args], capture_output=True,
                          text=True, env=env, cwd=PROJECT_ROOT, timeout=120, stdin=subprocess.DEVNULL)


def test_describe_refuses_opensearch_as_elasticsearch(opensearch_url):
    with pytest.raises(PGLimitsError) as raised:
        ElasticsearchServer.describe_url(opensearch_url)
    assert "OpenSearch 2.19" in str(raised.value)
    assert f"--external opensearch={opensearch_url}" in raised.value.fix


def test_elasticsearch_client_refuses_opensearch(opensearch_url):
    """Why the client must follow the server: elasticsearch-py 8's product check."""
    from elasticsearch import Elasticsearch, UnsupportedProductError

    client = Elasticsearch(opensearch_url, request_timeout=30)
    try:
        with pytest.raises(UnsupportedProductError):
            client.info()
    finally:
        client.close()


def test_search_client_follows_the_server(opensearch_url):
    client = search_client_for("opensearch", opensearch_url)
    try:
        assert client.cluster.health()["status"] in ("yellow", "green")
    finally:
        client.close()


def test_wrong_client_for_the_server_is_one_line_error(opensearch_url):
    with pytest.raises(PGLimitsError, match="UnsupportedProductError") as raised:
        search_client_for("elasticsearch", opensearch_url)
    assert f"--external opensearch={opensearch_url}" in raised.value.fix
    assert "\n" not in str(raised.value)


def test_opensearch_is_still_described_as_opensearch(opensearch_url):
    info = OpenSearchServer.describe_url(opensearch_url)
    assert info["version"].startswith("2.19.")
    assert info["settings"]["distribution"] == "opensearch"


def test_cli_refuses_opensearch_given_as_elasticsearch(opensearch_url, isolated_state):
    result = run_cli("servers", "up", "--external", f"elasticsearch={opensearch_url}",
                     state_dir=isolated_state)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "OpenSearch" in lines[0] and f"--external opensearch={opensearch_url}" in lines[0]
    assert not (isolated_state / "fleet.json").exists()


def test_cli_elasticsearch_without_java_names_the_fix(isolated_state, tmp_path):
    """Without a URL the project starts its own node; with no Java that is one line naming the fix."""
    env = {**os.environ, "PGLIMITS_STATE_DIR": str(isolated_state), "PATH": str(tmp_path)}  # no java on it
    result = subprocess.run([sys.executable, "-m", "pglimits_core", "servers", "up", "elasticsearch"],
                            capture_output=True, text=True, env=env, cwd=PROJECT_ROOT, timeout=120,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "java 17+" in lines[0] and "fix: apt-get install -y openjdk-17-jdk-headless" in lines[0]
    assert not (isolated_state / "fleet.json").exists()
