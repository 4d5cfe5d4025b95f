"""OpenSearch 2.19.6, embedded: one node started from the classpath by ``launchers/opensearch``.

No OpenSearch tarball can be fetched here, but the server and its modules are Maven artifacts
(ENGINES.md). ``install()`` builds the launcher once with Maven (jar + ``target/lib``); ``start()``
runs it with the JVM flags the distribution's ``jvm.options`` would give, bound to 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pglimits_core.config import LAUNCHERS_DIR, state_dir
from pglimits_core.errors import PGLimitsError, ServerUnavailable
from pglimits_core.servers.base import Endpoint, Server
from pglimits_core.servers.http import get_json
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

OPENSEARCH_VERSION = "2.19.6"  # must match launchers/opensearch/pom.xml
MIN_JAVA = 17
LAUNCHER_DIR = LAUNCHERS_DIR / "opensearch"
LAUNCHER_JAR = LAUNCHER_DIR / "target" / "opensearch-launcher.jar"
LAUNCHER_LIB = LAUNCHER_DIR / "target" / "lib"
LAUNCHER_SOURCES = (LAUNCHER_DIR / "pom.xml",
                    LAUNCHER_DIR / "src/main/java/pglimits/OpenSearchLauncher.java")
MAIN_CLASS = "pglimits.OpenSearchLauncher"
INSTALL_COMMAND = ".venv/bin/pglimits servers install opensearch"
JAVA_INSTALL = "apt-get install -y openjdk-17-jdk-headless"
MAVEN_INSTALL = "apt-get install -y maven"
MAVEN_TIMEOUT_S = 1200.0
STARTUP_TIMEOUT_S = 120.0
# variables that would change the JVM behind the manifest's back
JVM_ENV_OVERRIDES = ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS")


def java_major(java: str) -> int | None:
    """Feature version of ``java`` (17 for 17.0.15, 8 for 1.8.0); None if it cannot run."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def toolchain_missing(java: str | None = None) -> list[tuple[str, str]]:
    """Java 17+ to run the node; Maven too while the launcher is not built."""
    needs = []
    java = java or shutil.which("java")
    major = java_major(java) if java else None
    if major is None or major < MIN_JAVA:
        found = f" ({java} is {major or 'unusable'})" if java else ""
        needs.append((f"java {MIN_JAVA}+{found}", JAVA_INSTALL))
    if shutil.which("mvn") is None and not launcher_built():
        needs.append(("maven (mvn)", MAVEN_INSTALL))
    return needs


def launcher_built() -> bool:
    """Jar and server libraries present and newer than the pom and the launcher source."""
    if not (LAUNCHER_JAR.is_file() and (LAUNCHER_LIB / f"opensearch-{OPENSEARCH_VERSION}.jar").is_file()):
        return False
    newest_source = max(path.stat().st_mtime for path in LAUNCHER_SOURCES)
    return LAUNCHER_JAR.stat().st_mtime >= newest_source


def classpath() -> str:
    return f"{LAUNCHER_JAR}{os.pathsep}{LAUNCHER_LIB}/*"


def last_maven_error(output: str) -> str:
    """The last ``[ERROR]`` line that says something (not Maven's help boilerplate)."""
    boilerplate = ("[ERROR] [Help", "-e switch", "-X switch", "Re-run Maven", "For more information",
                   "after correcting the problems")
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in output.splitlines()]
    lines = [line.removesuffix("-> [Help 1]").strip() for line in lines if line]
    errors = [line for line in lines if line.startswith("[ERROR]") and line != "[ERROR]"
              and not any(noise in line for noise in boilerplate)]
    return (errors[-1] if errors else (lines[-1] if lines else "(no output)"))[:500]


def launcher_failure(log_path: Path, since: int = 0) -> str | None:
    """The launcher's one-line reason for not starting, if it wrote one after byte ``since``."""
    marker = "PGLIMITS OPENSEARCH FAILED:"
    with contextlib.suppress(OSError), open(log_path, "rb") as log:
        log.seek(since)
        for line in reversed(log.read().decode(errors="replace").splitlines()):
            if marker in line:
                return line.split(marker, 1)[1].strip()[:500]
    return None


def heap_bytes(heap: str) -> int:
    match = re.fullmatch(r"(\d+)([kmgKMG])", heap)
    if not match:
        raise PGLimitsError(f"opensearch: heap {heap!r} is not a JVM size", 'use e.g. heap="4g" or "512m"')
    return int(match.group(1)) << {"k": 10, "m": 20, "g": 30}[match.group(2).lower()]


def jvm_flags(heap: str, home: Path, pretouch: bool = True) -> list[str]:
    """What the 2.19 distribution's jvm.options + SystemJvmOptions + JvmErgonomics would pass.

    No security manager is installed (Node, unlike Bootstrap, does not install one), so
    ``-Djava.security.manager=allow`` is not needed.
    """
    logs = home / "logs"
    return [
        f"-Xms{heap}", f"-Xmx{heap}", f"-XX:MaxDirectMemorySize={heap_bytes(heap) // 2}",
        "-XX:+UseG1GC", "-XX:G1ReservePercent=25", "-XX:InitiatingHeapOccupancyPercent=30",
        *(["-XX:+AlwaysPreTouch"] if pretouch else []),
        "-Xss1m", "-Djava.awt.headless=true", "-Dfile.encoding=UTF-8", "-Djna.nosys=true",
        "-XX:-OmitStackTraceInFastThrow", "-XX:+ShowCodeDetailsInExceptionMessages",
        "-Dio.netty.noUnsafe=true", "-Dio.netty.noKeySetOptimization=true",
        "-Dio.netty.recycler.maxCapacityPerThread=0", "-Dio.netty.allocator.numDirectArenas=0",
        "-Dlog4j.shutdownHookEnabled=false", "-Dlog4j2.disable.jmx=true",
        "-Dlog4j2.formatMsgNoLookups=true", "-Djava.locale.providers=SPI,COMPAT",
        "-Dopensearch.networkaddress.cache.ttl=60", "-Dopensearch.networkaddress.cache.negative.ttl=10",
        f"-Djava.io.tmpdir={home / 'tmp'}",
        "-XX:+HeapDumpOnOutOfMemoryError", f"-XX:HeapDumpPath={logs}",
        f"-XX:ErrorFile={logs}/hs_err_pid%p.log",
        f"-Xlog:gc*,gc+age=trace,safepoint:file={logs}/gc.log:utctime,pid,tags:filecount=4,filesize=64m",
    ]






class OpenSearchServer(Server):
    """A private single-node OpenSearch on 127.0.0.1; ``data_dir`` is its ``path.home``.

    Options: ``heap`` (default "4g"; -Xms = -Xmx), ``pretouch`` (default True, as shipped),
    ``settings`` (extra node settings, like the distribution's ``-E``), ``transport_port``
    (default: a free one), ``java`` (default: ``java`` on PATH), ``startup_timeout_s`` (120).
    """

    name = "opensearch"
    noop_op = "pglimits_core.studies.noop_ops:HttpNoop"

    def __init__(self, data_dir: Path | None = None, port: int | None = None, **options: Any):
        super().__init__(data_dir, port, **options)
        self.data_dir = self.data_dir.resolve()
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
            raise ServerUnavailable(f"opensearch: cannot build the launcher, missing {what}", command)
        lock_path = state_dir() / "locks" / "opensearch-build.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two installs at once would clean each other's target/
            if not launcher_built():
                _maven_package()

    @classmethod
    def missing(cls) -> list[tuple[str, str]]:
        needs = toolchain_missing()
        if not launcher_built():
            needs.append((f"OpenSearch {OPENSEARCH_VERSION} launcher (Maven build)", INSTALL_COMMAND))
        return needs

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Endpoint:
        if self.endpoint is not None and self.health():
            return self.endpoint
        java = self._java()
        http_port = choose_port(self.requested_port, "opensearch (HTTP)")
        transport_port = self._transport_port(http_port)
        ensure_private_dir(self.data_dir)
        (self.data_dir / "tmp").mkdir(exist_ok=True)  # java.io.tmpdir
        log_path = self.data_dir / "logs" / "opensearch.log"
        log_start = log_path.stat().st_size if log_path.exists() else 0  # the log is appended to
        self._process = spawn(self._argv(java, http_port, transport_port), log_path,
                              env=self._env(), cwd=self.data_dir)
        self.endpoint = Endpoint(system=self.name, url=f"http://{LOCALHOST}:{http_port}",
                                 port=http_port, pids=(self._process.pid,),
                                 extra={"transport_port": transport_port, "log": str(log_path)})
        try:
            wait_until(self.health, float(self.options.get("startup_timeout_s", STARTUP_TIMEOUT_S)),
                       f"opensearch on port {http_port}", log_path,
                       alive=lambda: self._process.poll() is None, poll_s=0.25)
        except PGLimitsError as exc:
            self.stop()
            cause = launcher_failure(log_path, log_start)
            if cause is None:
                raise
            raise ServerUnavailable(f"opensearch on port {http_port} failed to start: {cause}",
                                    f"fix that and retry; full log: {log_path}") from exc
        except BaseException:
            self.stop()
            raise
        return self.endpoint

    def _java(self) -> str:
        java = self.options.get("java") or shutil.which("java")
        problems = toolchain_missing(java)
        if not launcher_built():
            problems.append((f"the OpenSearch {OPENSEARCH_VERSION} launcher is not built", INSTALL_COMMAND))
        if problems:
            what, command = problems[0]
            raise ServerUnavailable(f"opensearch: missing {what}", command)
        return java

    def _transport_port(self, http_port: int) -> int:
        port = choose_port(self.options.get("transport_port"), "opensearch (transport)")
        while port == http_port:
            port = free_port()
        return port

    def node_settings(self, transport_port: int) -> dict[str, str]:
        """Settings passed beyond the launcher's fixed ones (127.0.0.1, single-node, no disk watermarks)."""
        extra = {str(k): str(v) for k, v in self.options.get("settings", {}).items()}
        return {"transport.port": str(transport_port), **extra}

    def _argv(self, java: str, http_port: int, transport_port: int) -> list[str]:
        settings = [f"{key}={value}" for key, value in self.node_settings(transport_port).items()]
        flags = jvm_flags(self.heap, self.data_dir, bool(self.options.get("pretouch", True)))
        return [java, *flags, "-cp", classpath(), MAIN_CLASS, str(self.data_dir), str(http_port), *settings]

    def _env(self) -> dict[str, str]:
        return {key: value for key, value in os.environ.items() if key not in JVM_ENV_OVERRIDES}

    def health(self) -> bool:
        return self.endpoint is not None and self.probe(self.endpoint.url)

    @staticmethod
    def probe(url: str) -> bool:
        try:
            status = get_json(f"{url}/_cluster/health", timeout_s=2.0)["status"]
        except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError):
            return False
        return status in ("yellow", "green")

    def describe(self) -> dict[str, Any]:
        if self.endpoint is None:
            raise PGLimitsError("opensearch is not running", "start it before describing it")
        description = self.describe_url(self.endpoint.url)
        description["settings"].update(heap=self.heap, distribution=(
            f"embedded ({LAUNCHER_DIR.name} launcher, Maven artifacts)"))
        return description

    @staticmethod
    def describe_url(url: str) -> dict[str, Any]:
        root = get_json(f"{url}/")
        _refuse_elasticsearch(root, url)
        node = next(iter(get_json(f"{url}/_nodes/_local")["nodes"].values()))
        return {"version": root["version"]["number"],
                "settings": {"distribution": root["version"].get("distribution", ""),
                             **_node_settings(root, node)}}


    def storage_bytes(self) -> int:
        return directory_bytes(self.data_dir / "data")

    def stop(self) -> None:
        process, self._process = self._process, None
        self.endpoint = None
        if process is None:
            return
        if process.poll() is None:
            # the launcher's shutdown hook closes the node (flushes shards) in a few seconds
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
        raise ServerUnavailable(f"opensearch: Maven build took longer than {MAVEN_TIMEOUT_S:.0f}s",
                                f"check network access to Maven Central, then run {INSTALL_COMMAND}") from None
    if result.returncode != 0 or not launcher_built():
        detail = last_maven_error(result.stdout + "\n" + result.stderr)
        raise ServerUnavailable(f"opensearch: Maven build of {LAUNCHER_DIR} failed: {detail}",
                                f"check network access to Maven Central and ~/.m2/settings.xml, "
                                f"then run {INSTALL_COMMAND}")


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
