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

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import urllib.error
from pathlib import Path
from typing import Any

from pglimits_core.config import LAUNCHERS_DIR, state_dir
from pglimits_core.errors import PGLimitsError, ServerUnavailable
from pglimits_core.servers.base import Endpoint, Server
from pglimits_core.servers.http import get_json
from pglimits_core.servers.opensearch import (  # the same JVM toolchain and Maven build as OpenSearch
    JAVA_INSTALL,
    JVM_ENV_OVERRIDES,
    MAVEN_INSTALL,
    MAVEN_TIMEOUT_S,
    MIN_JAVA,
    java_major,
    last_maven_error,
)
from pglimits_core.servers.process import (
    LOCALHOST,
    choose_port,
    ensure_private_dir,
    free_port,
    spawn,
    stop_process_group,
    wait_until,
)
from pglimits_core.servers.storage import directory_bytes

SUPPORTED_MAJOR = 8  # the elasticsearch-py 8.x client we pin speaks to 8.x servers
ELASTICSEARCH_VERSION = "8.13.4"  # must match launchers/elasticsearch/pom.xml
LAUNCHER_DIR = LAUNCHERS_DIR / "elasticsearch"
LAUNCHER_JAR = LAUNCHER_DIR / "target" / "elasticsearch-launcher.jar"
LAUNCHER_LIB = LAUNCHER_DIR / "target" / "lib"
MAIN_CLASS = "pglimits.ElasticsearchLauncher"
#: the launcher's root handler; a node that lists it among its plugins is our embedded build
ROOT_PLUGIN_CLASS = "pglimits.RootInfoPlugin"
FAILED_MARKER = "PGLIMITS ELASTICSEARCH FAILED:"
INSTALL_COMMAND = ".venv/bin/pglimits servers install elasticsearch"
STARTUP_TIMEOUT_S = 120.0
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


# --- the launcher ---------------------------------------------------------------------------------
def heap_bytes(heap: str) -> int:
    match = re.fullmatch(r"(\d+)([kmgKMG])", heap)
    if not match:
        raise PGLimitsError(f"elasticsearch: heap {heap!r} is not a JVM size", 'use e.g. heap="4g" or "512m"')
    return int(match.group(1)) << {"k": 10, "m": 20, "g": 30}[match.group(2).lower()]


def launcher_sources() -> list[Path]:
    return [LAUNCHER_DIR / "pom.xml", *sorted((LAUNCHER_DIR / "src").rglob("*.java"))]


def launcher_built() -> bool:
    """Jar and server libraries present and newer than the pom and every launcher source."""
    if not (LAUNCHER_JAR.is_file() and (LAUNCHER_LIB / f"elasticsearch-{ELASTICSEARCH_VERSION}.jar").is_file()):
        return False
    return LAUNCHER_JAR.stat().st_mtime >= max(path.stat().st_mtime for path in launcher_sources())


def toolchain_missing(java: str | None = None) -> list[tuple[str, str]]:
    """Java 17+ to run the node; Maven too while the launcher is not built."""
    needs = []
    java = java or shutil.which("java")
    major = java_major(java) if java else None
    if major is None or major < MIN_JAVA:
        found = f" ({java} is {major or 'unusable'})" if java else " (no java on PATH)"
        needs.append((f"java {MIN_JAVA}+{found}", JAVA_INSTALL))
    if shutil.which("mvn") is None and not launcher_built():
        needs.append(("maven (mvn)", MAVEN_INSTALL))
    return needs


def classpath() -> str:
    return f"{LAUNCHER_JAR}{os.pathsep}{LAUNCHER_LIB}/*"


def launcher_failure(log_path: Path, since: int = 0) -> str | None:
    """The launcher's one-line reason for not starting, if it wrote one after byte ``since``."""
    with contextlib.suppress(OSError), open(log_path, "rb") as log:
        log.seek(since)
        for line in reversed(log.read().decode(errors="replace").splitlines()):
            if FAILED_MARKER in line:
                return line.split(FAILED_MARKER, 1)[1].strip()[:500]
    return None


def jvm_flags(heap: str, home: Path, major: int, pretouch: bool = True) -> list[str]:
    """What the 8.13 distribution's jvm.options, system options and ergonomics would pass.

    No security manager is installed (the launcher replaces Bootstrap), so none is allowed here.
    """
    logs = home / "logs"
    small_heap = heap_bytes(heap) < 8 << 30  # the distribution's ergonomics tune G1 below 8 GiB
    g1 = ["-XX:G1HeapRegionSize=4m", "-XX:InitiatingHeapOccupancyPercent=30", "-XX:G1ReservePercent=15"] \
        if small_heap else ["-XX:InitiatingHeapOccupancyPercent=30", "-XX:G1ReservePercent=25"]
    return [
        f"-Xms{heap}", f"-Xmx{heap}", f"-XX:MaxDirectMemorySize={heap_bytes(heap) // 2}", "-XX:+UseG1GC", *g1,
        *(["-XX:+AlwaysPreTouch"] if pretouch else []),
        "-Des.networkaddress.cache.ttl=60", "-Des.networkaddress.cache.negative.ttl=10",
        "-Xss1m", "-Djava.awt.headless=true", "-Dfile.encoding=UTF-8", "-Djna.nosys=true",
        "-XX:-OmitStackTraceInFastThrow", "-XX:+ShowCodeDetailsInExceptionMessages",
        "-Dio.netty.noUnsafe=true", "-Dio.netty.noKeySetOptimization=true",
        "-Dio.netty.recycler.maxCapacityPerThread=0",
        "-Dlog4j.shutdownHookEnabled=false", "-Dlog4j2.disable.jmx=true", "-Dlog4j2.formatMsgNoLookups=true",
        # COMPAT is gone from Java 23 on; CLDR is what the JDK then uses anyway
        f"-Djava.locale.providers=SPI,{'COMPAT' if major < 23 else 'CLDR'}",
        # JNA (mlockall and friends) would print a restricted-method warning from Java 22 on
        *(["--enable-native-access=ALL-UNNAMED"] if major >= 22 else []),
        f"-Djava.io.tmpdir={home / 'tmp'}",
        "-XX:+HeapDumpOnOutOfMemoryError", "-XX:+ExitOnOutOfMemoryError", f"-XX:HeapDumpPath={logs}",
        f"-XX:ErrorFile={logs}/hs_err_pid%p.log",
        f"-Xlog:gc*,gc+age=trace,safepoint:file={logs}/gc.log:utctime,level,pid,tags:filecount=4,filesize=64m",
    ]


class ElasticsearchServer(Server):
    """A private single-node Elasticsearch 8.13.4 on 127.0.0.1; ``data_dir`` is its ``path.home``.

    Options: ``heap`` (default "4g", as OpenSearch; -Xms = -Xmx), ``pretouch`` (default True, as
    shipped), ``settings`` (extra node settings, like the distribution's ``-E``),
    ``transport_port`` (default: a free one), ``java`` (default: ``java`` on PATH; e.g. a Temurin
    beside it), ``startup_timeout_s`` (120).
    """

    name = "elasticsearch"
    noop_op = "pglimits_core.studies.noop_ops:HttpNoop"  # GET /, answered by the launcher's root handler

    def __init__(self, data_dir: Path | None = None, port: int | None = None, **options: Any):
        super().__init__(data_dir, port, **options)
        self.heap = str(options.get("heap", "4g"))
        heap_bytes(self.heap)  # a bad size fails here, not in a JVM log
        self._process: subprocess.Popen | None = None

    # --- obtaining -------------------------------------------------------------------------

    @classmethod
    def install(cls) -> None:
        if launcher_built():
            return
        problems = toolchain_missing()
        if problems:
            what, command = problems[0]
            raise ServerUnavailable(f"elasticsearch: cannot build the launcher, missing {what}", command)
        lock_path = state_dir() / "locks" / "elasticsearch-build.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two installs at once would clean each other's target/
            if not launcher_built():
                _maven_package()

    @classmethod
    def missing(cls) -> list[tuple[str, str]]:
        needs = toolchain_missing()
        if not launcher_built():
            needs.append((f"Elasticsearch {ELASTICSEARCH_VERSION} launcher (Maven build)", INSTALL_COMMAND))
        return needs

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Endpoint:
        if self.endpoint is not None and self.health():
            return self.endpoint
        java, major = self._java()
        http_port = choose_port(self.requested_port, "elasticsearch (HTTP)")
        transport_port = self._transport_port(http_port)
        ensure_private_dir(self.data_dir)
        (self.data_dir / "tmp").mkdir(exist_ok=True)  # java.io.tmpdir
        log_path = self.data_dir / "logs" / "elasticsearch.log"
        log_start = log_path.stat().st_size if log_path.exists() else 0  # the log is appended to
        self._process = spawn(self._argv(java, major, http_port, transport_port), log_path,
                              env=self._env(), cwd=self.data_dir)
        self.endpoint = Endpoint(system=self.name, url=f"http://{LOCALHOST}:{http_port}",
                                 port=http_port, pids=(self._process.pid,),
                                 extra={"transport_port": transport_port, "log": str(log_path)})
        try:
            wait_until(self.health, float(self.options.get("startup_timeout_s", STARTUP_TIMEOUT_S)),
                       f"elasticsearch on port {http_port}", log_path,
                       alive=lambda: self._process.poll() is None, poll_s=0.25)
        except PGLimitsError as exc:
            self.stop()
            cause = launcher_failure(log_path, log_start)
            if cause is None:
                raise
            raise ServerUnavailable(f"elasticsearch on port {http_port} failed to start: {cause}",
                                    f"fix that and retry; full log: {log_path}") from exc
        except BaseException:
            self.stop()  # Ctrl-C during start-up leaves no JVM behind
            raise
        return self.endpoint

    def _java(self) -> tuple[str, int]:
        java = self.options.get("java") or shutil.which("java")
        problems = toolchain_missing(java)
        if not launcher_built():
            problems.append((f"the Elasticsearch {ELASTICSEARCH_VERSION} launcher is not built", INSTALL_COMMAND))
        if problems:
            what, command = problems[0]
            raise ServerUnavailable(f"elasticsearch: missing {what}", command)
        return java, java_major(java)

    def _transport_port(self, http_port: int) -> int:
        port = choose_port(self.options.get("transport_port"), "elasticsearch (transport)")
        while port == http_port:
            port = free_port()
        return port

    def node_settings(self, transport_port: int) -> dict[str, str]:
        """Settings passed beyond the launcher's fixed ones (127.0.0.1, single-node, no disk watermarks)."""
        extra = {str(k): str(v) for k, v in self.options.get("settings", {}).items()}
        return {"transport.port": str(transport_port), **extra}

    def _argv(self, java: str, major: int, http_port: int, transport_port: int) -> list[str]:
        settings = [f"{key}={value}" for key, value in self.node_settings(transport_port).items()]
        flags = jvm_flags(self.heap, self.data_dir, major, bool(self.options.get("pretouch", True)))
        return [java, *flags, "-cp", classpath(), MAIN_CLASS, str(self.data_dir), str(http_port), *settings]

    def _env(self) -> dict[str, str]:
        return {key: value for key, value in os.environ.items() if key not in JVM_ENV_OVERRIDES}

    def health(self) -> bool:
        return self.endpoint is not None and self.probe(self.endpoint.url)

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

    def describe(self) -> dict[str, Any]:
        if self.endpoint is None:
            raise PGLimitsError("elasticsearch is not running", "start it before describing it")
        description = self.describe_url(self.endpoint.url)
        description["settings"]["heap"] = self.heap
        return description

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

    def storage_bytes(self) -> int:
        return directory_bytes(self.data_dir / "data")

    def stop(self) -> None:
        process, self._process = self._process, None
        self.endpoint = None
        if process is None:
            return
        if process.poll() is None:
            # the launcher's shutdown hook closes the node (flushes shards) in well under a second
            stop_process_group(process.pid, grace_s=float(self.options.get("stop_grace_s", 45)))
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)  # reap it, so no zombie outlives the fleet


def _maven_package() -> None:
    """``mvn clean package`` in the launcher dir; clean, so no jar of an older pin stays in lib/."""
    argv = ["mvn", "-q", "-B", "-Dstyle.color=never", "clean", "package"]
    try:
        result = subprocess.run(argv, cwd=LAUNCHER_DIR, capture_output=True, text=True,
                                timeout=MAVEN_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ServerUnavailable(f"elasticsearch: Maven build took longer than {MAVEN_TIMEOUT_S:.0f}s",
                                f"check access to the Maven repository, then run {INSTALL_COMMAND}") from None
    if result.returncode != 0 or not launcher_built():
        detail = re.sub(r"\s+", " ", last_maven_error(result.stdout + "\n" + result.stderr))
        raise ServerUnavailable(f"elasticsearch: Maven build of {LAUNCHER_DIR} failed: {detail}",
                                f"check access to the Maven repository and ~/.m2/settings.xml, "
                                f"then run {INSTALL_COMMAND}")
