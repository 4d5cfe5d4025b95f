"""Elasticsearch 8.13.4: embedded (one node started from ``launchers/elasticsearch``) or external.

The source study measured Elasticsearch 8.13. No distribution tarball can be fetched here, but the
server jar and its netty4 transport are Maven Central artifacts, so ``install()`` builds a small
launcher with Maven (jar + ``target/lib``) and ``start()`` runs it bound to 127.0.0.1, like the
OpenSearch launcher. That node is an **embedded core-modules build**: the server's own analysis
(standard, simple, whitespace, stop, keyword analyzers; lowercase, stop, shingle filters) and field
types, without x-pack, analysis-common, mapper-extras, and with our own ``GET /`` handler in place
of rest-root (docs/ENGINES.md). A user's own full Elasticsearch 8 is attached with
``--external elasticsearch=URL``. Every description says which of the two answered, read from the
server itself, and an OpenSearch URL is refused: OpenSearch is never reported as "Elasticsearch".
"""

from __future__ import annotations

import urllib.error
from pathlib import Path
from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.http import get_json
from pglimits_core.servers.jvm_node import (
    LOG4J_FLAGS,
    RUNTIME_FLAGS,
    JvmNodeServer,
    Launcher,
    cluster_ready,
    gc_log_flag,
    heap_bytes,
    heap_flags,
    java_major,
)

SUPPORTED_MAJOR = 8  # the elasticsearch-py 8.x client we pin speaks to 8.x servers
ELASTICSEARCH_VERSION = "8.13.4"  # must match launchers/elasticsearch/pom.xml
LAUNCHER = Launcher("elasticsearch", "Elasticsearch", ELASTICSEARCH_VERSION, "pglimits.ElasticsearchLauncher",
                    maven_source="access to the Maven repository")
#: the launcher's root handler; a node that lists it among its plugins is our embedded build
ROOT_PLUGIN_CLASS = "pglimits.RootInfoPlugin"
EMBEDDED = "embedded"
EXTERNAL = "external"
#: what each deployment is, as the run records say it
BUILDS = {
    EMBEDDED: ("embedded core-modules build (launchers/elasticsearch: server + transport-netty4 from "
               "Maven Central; no x-pack, analysis-common, mapper-extras; own GET / handler)"),
    EXTERNAL: "external node run by the user (--external elasticsearch=URL)",
}


# --- what answers at a URL ------------------------------------------------------------------------
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


def deployment_of(node: dict[str, Any]) -> str:
    """``embedded`` when the node runs our launcher's root plugin, else ``external``."""
    classes = {plugin.get("classname") for plugin in node.get("plugins") or []}
    return EMBEDDED if ROOT_PLUGIN_CLASS in classes else EXTERNAL


# --- the node -------------------------------------------------------------------------------------
def jvm_flags(heap: str, home: Path, major: int, pretouch: bool = True) -> list[str]:
    """What the 8.13 distribution's jvm.options, system options and ergonomics would pass.

    No security manager is installed (the launcher replaces Bootstrap), so none is allowed here.
    """
    logs = home / "logs"
    small_heap = heap_bytes(heap, "elasticsearch") < 8 << 30  # the distribution's ergonomics tune G1 below 8 GiB
    g1 = ["-XX:G1HeapRegionSize=4m", "-XX:InitiatingHeapOccupancyPercent=30", "-XX:G1ReservePercent=15"] \
        if small_heap else ["-XX:InitiatingHeapOccupancyPercent=30", "-XX:G1ReservePercent=25"]
    return [
        *heap_flags(heap, "elasticsearch"), "-XX:+UseG1GC", *g1,
        *(["-XX:+AlwaysPreTouch"] if pretouch else []),
        "-Des.networkaddress.cache.ttl=60", "-Des.networkaddress.cache.negative.ttl=10",
        *RUNTIME_FLAGS, *LOG4J_FLAGS,
        # COMPAT is gone from Java 23 on; CLDR is what the JDK then uses anyway
        f"-Djava.locale.providers=SPI,{'COMPAT' if major < 23 else 'CLDR'}",
        # JNA (mlockall and friends) would print a restricted-method warning from Java 22 on
        *(["--enable-native-access=ALL-UNNAMED"] if major >= 22 else []),
        f"-Djava.io.tmpdir={home / 'tmp'}",
        "-XX:+HeapDumpOnOutOfMemoryError", "-XX:+ExitOnOutOfMemoryError", f"-XX:HeapDumpPath={logs}",
        f"-XX:ErrorFile={logs}/hs_err_pid%p.log",
        gc_log_flag(logs, "utctime,level,pid,tags"),
    ]


class ElasticsearchServer(JvmNodeServer):
    """A private single-node Elasticsearch 8.13.4 on 127.0.0.1; ``data_dir`` is its ``path.home``.

    Options as ``JvmNodeServer`` (heap "4g" by default, as OpenSearch); ``java`` may name e.g. a
    Temurin beside the system's. The no-op ceiling's GET / is answered by the launcher's root handler.
    """

    name = "elasticsearch"
    launcher = LAUNCHER

    def jvm_options(self, java: str) -> list[str]:
        return jvm_flags(self.heap, self.data_dir, java_major(java), self.pretouch)

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
        return cluster_ready(url, get_json)

    @staticmethod
    def describe_url(url: str) -> dict[str, Any]:
        """Version, build and settings as the server reports them, and which deployment it is:
        ``embedded`` (our launcher, known by its root plugin) or ``external``."""
        root = check_is_elasticsearch_8(get_json(f"{url}/"), url)
        version = root["version"]
        node = next(iter(get_json(f"{url}/_nodes/_local")["nodes"].values()), {})
        deployment = deployment_of(node)
        jvm = node.get("jvm", {})
        return {"version": str(version["number"]),
                "settings": {"distribution": "elasticsearch",
                             "deployment": deployment,
                             "build": BUILDS[deployment],
                             "lucene_version": version.get("lucene_version", ""),
                             "build_flavor": version.get("build_flavor", ""),
                             "build_hash": version.get("build_hash", ""),
                             "cluster_name": root.get("cluster_name", ""),
                             "jvm_version": jvm.get("version", ""),
                             "heap_max_bytes": jvm.get("mem", {}).get("heap_max_in_bytes"),
                             "jvm_flags": jvm.get("input_arguments", []),
                             "plugins": [plugin.get("name") for plugin in node.get("plugins") or []],
                             "modules": [module.get("name") for module in node.get("modules") or []],
                             "node_settings": node.get("settings", {})}}
