"""What the two JVM search nodes share: a launcher built by Maven, Java 17+, and the node's life.

No Elasticsearch or OpenSearch distribution tarball can be fetched here, but their server jars
are Maven artifacts (ENGINES.md). So each has a small launcher project under ``launchers/<name>``
that ``install()`` builds once with Maven (jar + ``target/lib``) and ``start()`` runs bound to
127.0.0.1 with the JVM flags the distribution's ``jvm.options`` would give. What differs between
the two (those flags, how a node proves which product it is, what its description holds) stays
in ``elasticsearch.py`` and ``opensearch.py``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import urllib.error
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pglimits_core.config import LAUNCHERS_DIR, state_dir
from pglimits_core.errors import PGLimitsError, ServerUnavailable
from pglimits_core.servers.base import Endpoint
from pglimits_core.servers.http import get_json
from pglimits_core.servers.process import (
    LOCALHOST,
    ProcessServer,
    choose_port,
    ensure_private_dir,
    free_port,
    spawn,
)
from pglimits_core.servers.storage import directory_bytes

MIN_JAVA = 17
JAVA_INSTALL = "apt-get install -y openjdk-17-jdk-headless"
MAVEN_INSTALL = "apt-get install -y maven"
MAVEN_TIMEOUT_S = 1200.0
STARTUP_TIMEOUT_S = 120.0
# variables that would change the JVM behind the manifest's back
JVM_ENV_OVERRIDES = ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS")
#: flags both distributions pass (jvm.options and their system options), in this order
RUNTIME_FLAGS = ("-Xss1m", "-Djava.awt.headless=true", "-Dfile.encoding=UTF-8", "-Djna.nosys=true",
                 "-XX:-OmitStackTraceInFastThrow", "-XX:+ShowCodeDetailsInExceptionMessages",
                 "-Dio.netty.noUnsafe=true", "-Dio.netty.noKeySetOptimization=true",
                 "-Dio.netty.recycler.maxCapacityPerThread=0")
LOG4J_FLAGS = ("-Dlog4j.shutdownHookEnabled=false", "-Dlog4j2.disable.jmx=true",
               "-Dlog4j2.formatMsgNoLookups=true")


# --- Java and the JVM flags -----------------------------------------------------------------------
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


def heap_bytes(heap: str, product: str) -> int:
    match = re.fullmatch(r"(\d+)([kmgKMG])", heap)
    if not match:
        raise PGLimitsError(f"{product}: heap {heap!r} is not a JVM size", 'use e.g. heap="4g" or "512m"')
    return int(match.group(1)) << {"k": 10, "m": 20, "g": 30}[match.group(2).lower()]


def heap_flags(heap: str, product: str) -> list[str]:
    """-Xms = -Xmx, and direct memory capped at half the heap, as both distributions set it."""
    return [f"-Xms{heap}", f"-Xmx{heap}", f"-XX:MaxDirectMemorySize={heap_bytes(heap, product) // 2}"]


def gc_log_flag(logs: Path, decorations: str) -> str:
    return f"-Xlog:gc*,gc+age=trace,safepoint:file={logs}/gc.log:{decorations}:filecount=4,filesize=64m"


# --- the launcher ---------------------------------------------------------------------------------
def last_maven_error(output: str) -> str:
    """The last ``[ERROR]`` line that says something (not Maven's help boilerplate)."""
    boilerplate = ("[ERROR] [Help", "-e switch", "-X switch", "Re-run Maven", "For more information",
                   "after correcting the problems")
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in output.splitlines()]
    lines = [line.removesuffix("-> [Help 1]").strip() for line in lines if line]
    errors = [line for line in lines if line.startswith("[ERROR]") and line != "[ERROR]"
              and not any(noise in line for noise in boilerplate)]
    return (errors[-1] if errors else (lines[-1] if lines else "(no output)"))[:500]


class Launcher:
    """One ``launchers/<name>`` Maven project: its jar, the server's libraries, its main class."""

    def __init__(self, name: str, title: str, version: str, main_class: str, maven_source: str):
        self.name, self.title, self.version, self.main_class = name, title, version, main_class
        #: what to check when Maven cannot fetch the artifacts
        self.maven_source = maven_source
        self.dir = LAUNCHERS_DIR / name
        self.jar = self.dir / "target" / f"{name}-launcher.jar"
        self.lib = self.dir / "target" / "lib"
        self.install_command = f".venv/bin/pglimits servers install {name}"
        #: the line the launcher writes when the node refuses to start
        self.failed_marker = f"PGLIMITS {name.upper()} FAILED:"

    def sources(self) -> list[Path]:
        return [self.dir / "pom.xml", *sorted((self.dir / "src").rglob("*.java"))]

    def built(self) -> bool:
        """Jar and server libraries present and newer than the pom and every launcher source."""
        if not (self.jar.is_file() and (self.lib / f"{self.name}-{self.version}.jar").is_file()):
            return False
        return self.jar.stat().st_mtime >= max(path.stat().st_mtime for path in self.sources())

    def classpath(self) -> str:
        return f"{self.jar}{os.pathsep}{self.lib}/*"

    def toolchain_missing(self, java: str | None = None) -> list[tuple[str, str]]:
        """Java 17+ to run the node; Maven too while the launcher is not built."""
        needs = []
        java = java or shutil.which("java")
        major = java_major(java) if java else None
        if major is None or major < MIN_JAVA:
            found = f" ({java} is {major or 'unusable'})" if java else " (no java on PATH)"
            needs.append((f"java {MIN_JAVA}+{found}", JAVA_INSTALL))
        if shutil.which("mvn") is None and not self.built():
            needs.append(("maven (mvn)", MAVEN_INSTALL))
        return needs

    def missing(self) -> list[tuple[str, str]]:
        needs = self.toolchain_missing()
        if not self.built():
            needs.append((f"{self.title} {self.version} launcher (Maven build)", self.install_command))
        return needs

    def build(self) -> None:
        """Build the launcher unless it is built (one build at a time across processes)."""
        if self.built():
            return
        problems = self.toolchain_missing()
        if problems:
            what, command = problems[0]
            raise ServerUnavailable(f"{self.name}: cannot build the launcher, missing {what}", command)
        lock_path = state_dir() / "locks" / f"{self.name}-build.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two installs at once would clean each other's target/
            if not self.built():
                self._maven_package()

    def _maven_package(self) -> None:
        """``mvn clean package`` in the launcher dir; clean, so no jar of an older pin stays in lib/."""
        argv = ["mvn", "-q", "-B", "-Dstyle.color=never", "clean", "package"]
        try:
            result = subprocess.run(argv, cwd=self.dir, capture_output=True, text=True,
                                    timeout=MAVEN_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise ServerUnavailable(f"{self.name}: Maven build took longer than {MAVEN_TIMEOUT_S:.0f}s",
                                    f"check {self.maven_source}, then run {self.install_command}") from None
        if result.returncode != 0 or not self.built():
            detail = re.sub(r"\s+", " ", last_maven_error(result.stdout + "\n" + result.stderr))
            raise ServerUnavailable(f"{self.name}: Maven build of {self.dir} failed: {detail}",
                                    f"check {self.maven_source} and ~/.m2/settings.xml, "
                                    f"then run {self.install_command}")

    def failure(self, log_path: Path, since: int = 0) -> str | None:
        """The launcher's one-line reason for not starting, if it wrote one after byte ``since``."""
        with contextlib.suppress(OSError), open(log_path, "rb") as log:
            log.seek(since)
            for line in reversed(log.read().decode(errors="replace").splitlines()):
                if self.failed_marker in line:
                    return line.split(self.failed_marker, 1)[1].strip()[:500]
        return None


def cluster_ready(url: str, get: Callable[..., Any] = get_json) -> bool:
    """True when the cluster at ``url`` is yellow or green (``get``: the caller's JSON getter)."""
    try:
        status = get(f"{url}/_cluster/health", timeout_s=2.0)["status"]
    except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError):
        return False
    return status in ("yellow", "green")


# --- the node -------------------------------------------------------------------------------------
class JvmNodeServer(ProcessServer):
    """A private single-node search server on 127.0.0.1 run from its launcher; ``data_dir`` is its
    ``path.home``. Subclasses give the ``launcher``, ``jvm_options``, ``probe`` and ``describe_url``.

    Options: ``heap`` (default "4g"; -Xms = -Xmx), ``pretouch`` (default True, as shipped),
    ``settings`` (extra node settings, like the distribution's ``-E``), ``transport_port``
    (default: a free one), ``java`` (default: ``java`` on PATH), ``startup_timeout_s`` (120).
    """

    launcher: Launcher
    noop_op = "pglimits_core.studies.noop_ops:HttpNoop"  # GET /, which both nodes answer
    # the launcher's shutdown hook closes the node (flushes shards) in a few seconds
    stop_grace_s = 45.0

    def __init__(self, data_dir: Path | None = None, port: int | None = None, **options: Any):
        super().__init__(data_dir, port, **options)
        self.heap = str(options.get("heap", "4g"))
        heap_bytes(self.heap, self.name)  # a bad size fails here, not in a JVM log
        self.pretouch = bool(options.get("pretouch", True))

    @classmethod
    def install(cls) -> None:
        cls.launcher.build()

    @classmethod
    def missing(cls) -> list[tuple[str, str]]:
        return cls.launcher.missing()

    def jvm_options(self, java: str) -> list[str]:
        """The JVM flags the distribution would pass to ``java``."""
        raise NotImplementedError

    @staticmethod
    def probe(url: str) -> bool:
        """True when a node of this product answers at ``url`` and its cluster is usable."""
        raise NotImplementedError

    @staticmethod
    def describe_url(url: str) -> dict[str, Any]:
        """Version and settings as the node at ``url`` reports them."""
        raise NotImplementedError

    def start(self) -> Endpoint:
        if self.endpoint is not None and self.health():
            return self.endpoint
        java = self._java()
        http_port = choose_port(self.requested_port, f"{self.name} (HTTP)")
        transport_port = self._transport_port(http_port)
        ensure_private_dir(self.data_dir)
        (self.data_dir / "tmp").mkdir(exist_ok=True)  # java.io.tmpdir
        log_path = self.data_dir / "logs" / f"{self.name}.log"
        log_start = log_path.stat().st_size if log_path.exists() else 0  # the log is appended to
        self._process = spawn(self._argv(java, http_port, transport_port), log_path,
                              env=self._env(), cwd=self.data_dir)
        self.endpoint = Endpoint(system=self.name, url=f"http://{LOCALHOST}:{http_port}",
                                 port=http_port, pids=(self._process.pid,),
                                 extra={"transport_port": transport_port, "log": str(log_path)})
        self._wait_for_node(http_port, log_path, log_start)
        return self.endpoint

    def _wait_for_node(self, http_port: int, log_path: Path, log_start: int) -> None:
        """Ready, or stopped with the launcher's own reason when it wrote one (else the log tail)."""
        timeout_s = float(self.options.get("startup_timeout_s", STARTUP_TIMEOUT_S))
        try:
            self._wait_ready(timeout_s, f"{self.name} on port {http_port}", log_path, poll_s=0.25)
        except PGLimitsError as exc:
            cause = self.launcher.failure(log_path, log_start)
            if cause is None:
                raise
            raise ServerUnavailable(f"{self.name} on port {http_port} failed to start: {cause}",
                                    f"fix that and retry; full log: {log_path}") from exc

    def _java(self) -> str:
        java = self.options.get("java") or shutil.which("java")
        problems = self.launcher.toolchain_missing(java)
        if not self.launcher.built():
            problems.append((f"the {self.launcher.title} {self.launcher.version} launcher is not built",
                             self.launcher.install_command))
        if problems:
            what, command = problems[0]
            raise ServerUnavailable(f"{self.name}: missing {what}", command)
        return java

    def _transport_port(self, http_port: int) -> int:
        port = choose_port(self.options.get("transport_port"), f"{self.name} (transport)")
        while port == http_port:
            port = free_port()
        return port

    def node_settings(self, transport_port: int) -> dict[str, str]:
        """Settings passed beyond the launcher's fixed ones (127.0.0.1, single-node, no disk watermarks)."""
        extra = {str(k): str(v) for k, v in self.options.get("settings", {}).items()}
        return {"transport.port": str(transport_port), **extra}

    def _argv(self, java: str, http_port: int, transport_port: int) -> list[str]:
        settings = [f"{key}={value}" for key, value in self.node_settings(transport_port).items()]
        return [java, *self.jvm_options(java), "-cp", self.launcher.classpath(), self.launcher.main_class,
                str(self.data_dir), str(http_port), *settings]

    def _env(self) -> dict[str, str]:
        return {key: value for key, value in os.environ.items() if key not in JVM_ENV_OVERRIDES}

    def health(self) -> bool:
        return self.endpoint is not None and self.probe(self.endpoint.url)

    def describe(self) -> dict[str, Any]:
        if self.endpoint is None:
            raise PGLimitsError(f"{self.name} is not running", "start it before describing it")
        description = self.describe_url(self.endpoint.url)
        description["settings"].update(self.own_settings())
        return description

    def own_settings(self) -> dict[str, Any]:
        """What this object knows about the node beyond what the node reports."""
        return {"heap": self.heap}

    def storage_bytes(self) -> int:
        return directory_bytes(self.data_dir / "data")
