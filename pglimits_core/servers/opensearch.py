"""OpenSearch 2.19.6, embedded: one node started from the classpath by ``launchers/opensearch``.

No OpenSearch tarball can be fetched here, but the server and its modules are Maven artifacts
(ENGINES.md). ``install()`` builds the launcher once with Maven (jar + ``target/lib``); ``start()``
runs it with the JVM flags the distribution's ``jvm.options`` would give, bound to 127.0.0.1
(``jvm_node.py`` holds what this shares with the Elasticsearch node).
"""

from __future__ import annotations

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
    heap_flags,
)

OPENSEARCH_VERSION = "2.19.6"  # must match launchers/opensearch/pom.xml
LAUNCHER = Launcher("opensearch", "OpenSearch", OPENSEARCH_VERSION, "pglimits.OpenSearchLauncher",
                    maven_source="network access to Maven Central")


def jvm_flags(heap: str, home: Path, pretouch: bool = True) -> list[str]:
    """What the 2.19 distribution's jvm.options + SystemJvmOptions + JvmErgonomics would pass.

    No security manager is installed (Node, unlike Bootstrap, does not install one), so
    ``-Djava.security.manager=allow`` is not needed.
    """
    logs = home / "logs"
    return [
        *heap_flags(heap, "opensearch"),
        "-XX:+UseG1GC", "-XX:G1ReservePercent=25", "-XX:InitiatingHeapOccupancyPercent=30",
        *(["-XX:+AlwaysPreTouch"] if pretouch else []),
        *RUNTIME_FLAGS, "-Dio.netty.allocator.numDirectArenas=0",
        *LOG4J_FLAGS, "-Djava.locale.providers=SPI,COMPAT",
        "-Dopensearch.networkaddress.cache.ttl=60", "-Dopensearch.networkaddress.cache.negative.ttl=10",
        f"-Djava.io.tmpdir={home / 'tmp'}",
        "-XX:+HeapDumpOnOutOfMemoryError", f"-XX:HeapDumpPath={logs}",
        f"-XX:ErrorFile={logs}/hs_err_pid%p.log",
        gc_log_flag(logs, "utctime,pid,tags"),
    ]


class OpenSearchServer(JvmNodeServer):
    """A private single-node OpenSearch on 127.0.0.1; ``data_dir`` is its ``path.home``.

    Options as ``JvmNodeServer`` (heap "4g" by default).
    """

    name = "opensearch"
    launcher = LAUNCHER

    def jvm_options(self, java: str) -> list[str]:
        return jvm_flags(self.heap, self.data_dir, self.pretouch)

    @staticmethod
    def probe(url: str) -> bool:
        return cluster_ready(url, get_json)

    def own_settings(self) -> dict[str, Any]:
        return {"heap": self.heap, "distribution": f"embedded ({LAUNCHER.dir.name} launcher, Maven artifacts)"}

    @staticmethod
    def describe_url(url: str) -> dict[str, Any]:
        root = get_json(f"{url}/")
        _refuse_elasticsearch(root, url)
        node = next(iter(get_json(f"{url}/_nodes/_local")["nodes"].values()))
        return {"version": root["version"]["number"],
                "settings": {"distribution": root["version"].get("distribution", ""),
                             **_node_settings(root, node)}}


def _refuse_elasticsearch(root: dict[str, Any], url: str) -> None:
    """A real Elasticsearch must never be measured and labelled as OpenSearch."""
    version = root.get("version") or {}
    if "You Know, for Search" in str(root.get("tagline", "")) and version.get("distribution") != "opensearch":
        raise PGLimitsError(f"{url} answers as Elasticsearch {version.get('number', '?')}, not OpenSearch",
                            f"this is Elasticsearch; use --external elasticsearch={url}")


def _node_settings(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    jvm = node.get("jvm", {})
    return {
        "lucene_version": root["version"].get("lucene_version", ""),
        "build_hash": root["version"].get("build_hash", ""),
        "jvm_version": jvm.get("version", ""),
        "jvm_vm": f"{jvm.get('vm_vendor', '')} {jvm.get('vm_name', '')}".strip(),
        "heap_max_bytes": jvm.get("mem", {}).get("heap_max_in_bytes"),
        "gc_collectors": jvm.get("gc_collectors", []),
        "jvm_flags": jvm.get("input_arguments", []),
        "available_processors": node.get("os", {}).get("available_processors"),
        "plugins": [plugin.get("name") for plugin in node.get("plugins", [])],
        "node_settings": node.get("settings", {}),
    }
