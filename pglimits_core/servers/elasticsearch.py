"""Elasticsearch 8, external only: a real Elasticsearch the user runs, given as a URL.

No Elasticsearch server can be obtained on these machines (ENGINES.md: no registry ships one;
packages that claim to download it at run time). The study still measures a real Elasticsearch 8
when the user brings one (``--external elasticsearch=URL``), and labels every row by what
answered: an OpenSearch URL is refused here, so OpenSearch is never reported as "Elasticsearch".
"""

from __future__ import annotations

import urllib.error
from typing import Any

from pglimits_core.errors import PGLimitsError, ServerUnavailable
from pglimits_core.servers.base import Endpoint, Server
from pglimits_core.servers.http import get_json

SUPPORTED_MAJOR = 8  # the elasticsearch-py 8.x client we pin speaks to 8.x servers
CANNOT_INSTALL = "Elasticsearch cannot be installed here (no registry ships the server; external only)"
EXTERNAL_FIX = ("run one yourself (docker compose up elasticsearch) and pass "
                "--external elasticsearch=http://127.0.0.1:9200, or use the embedded opensearch")


def is_opensearch(root: dict[str, Any]) -> bool:
    """OpenSearch says so in ``version.distribution``; older forks only in the tagline."""
    version = root.get("version") or {}
    return version.get("distribution") == "opensearch" or "opensearch" in str(root.get("tagline", "")).lower()


def check_is_elasticsearch_8(root: Any, url: str) -> dict[str, Any]:
    """``root`` (the body of GET /) if it is an Elasticsearch 8.x; a one-line refusal otherwise."""
    if not isinstance(root, dict) or not isinstance(root.get("version"), dict) \
            or "number" not in root["version"]:
        raise PGLimitsError(f"{url} does not look like Elasticsearch (GET / has no version.number)",
                            "pass the URL of an Elasticsearch 8 node's HTTP port")
    number = str(root["version"]["number"])
    if is_opensearch(root):
        raise PGLimitsError(f"{url} answers as OpenSearch {number}, not Elasticsearch",
                            f"this is OpenSearch {_major_minor(number)}; use --external opensearch={url}")
    if _major(number) != SUPPORTED_MAJOR:
        raise PGLimitsError(f"{url} is Elasticsearch {number}; only {SUPPORTED_MAJOR}.x is supported",
                            f"point --external elasticsearch= at an Elasticsearch {SUPPORTED_MAJOR}.x node")
    return root


def _major(number: str) -> int | None:
    head = number.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _major_minor(number: str) -> str:
    return ".".join(number.split(".")[:2])


class ElasticsearchServer(Server):
    """Only ever attached to through ``ExternalServer``; starting one here is a clear error."""

    name = "elasticsearch"
    #: read by `pglimits doctor`: nothing to install, so not "missing" either
    external_only = True

    @classmethod
    def missing(cls) -> list[tuple[str, str]]:
        return [(CANNOT_INSTALL, EXTERNAL_FIX)]

    def start(self) -> Endpoint:
        raise ServerUnavailable(CANNOT_INSTALL, EXTERNAL_FIX)

    def health(self) -> bool:
        return False  # never started by us; external endpoints are checked through probe()

    def describe(self) -> dict[str, Any]:
        raise PGLimitsError("elasticsearch is external only", EXTERNAL_FIX)

    def storage_bytes(self) -> int:
        return -1  # not ours on disk; like every external server

    def stop(self) -> None:
        self.endpoint = None

    @staticmethod
    def probe(url: str) -> bool:
        """True when an Elasticsearch 8 answers at ``url`` with a yellow/green cluster.

        A server that answers but is another product raises instead of returning False: that
        is the one-line reason the user needs ("this is OpenSearch ..."), not "does not answer".
        """
        try:
            root = get_json(f"{url}/", timeout_s=2.0)
        except (urllib.error.URLError, OSError, ValueError):
            return False
        check_is_elasticsearch_8(root, url)
        try:
            status = get_json(f"{url}/_cluster/health", timeout_s=2.0)["status"]
        except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError):
            return False
        return status in ("yellow", "green")

    @staticmethod
    def describe_url(url: str) -> dict[str, Any]:
        root = check_is_elasticsearch_8(get_json(f"{url}/"), url)
        version = root["version"]
        return {"version": str(version["number"]),
                "settings": {"distribution": "elasticsearch",
                             "lucene_version": version.get("lucene_version", ""),
                             "build_flavor": version.get("build_flavor", ""),
                             "build_hash": version.get("build_hash", ""),
                             "cluster_name": root.get("cluster_name", "")}}
