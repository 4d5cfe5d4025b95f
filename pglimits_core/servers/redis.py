"""Redis 7 from Debian's ``redis-server``, started with flags from ``configs/servers/redis.conf``."""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import redis

from pglimits_core.config import SERVER_CONFIGS_DIR, state_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.base import Endpoint, Server
from pglimits_core.servers.process import (
    LOCALHOST,
    choose_port,
    ensure_private_dir,
    spawn,
    stop_process_group,
    wait_until,
)
from pglimits_core.servers.settings_file import ledger, parse_settings
from pglimits_core.servers.storage import directory_bytes

SETTINGS_FILE = SERVER_CONFIGS_DIR / "redis.conf"
INSTALL_COMMAND = "apt-get install -y redis-server"
REPORTED_SETTINGS = ("save", "appendonly", "appendfsync", "io-threads", "maxmemory",
                     "maxmemory-policy", "bind", "port", "protected-mode", "hz")
# What a queue variant sets at runtime (its appendfsync option): a restart must keep it, or a
# server started with the file's "appendonly no" would ignore the AOF the variant wrote.
RUNTIME_SETTINGS = ("appendonly", "appendfsync")


class RedisServer(Server):
    """redis-server in the foreground of its own process group, persistence off by default."""

    name = "redis"
    # one event-loop thread runs every command (io-threads 1 in configs/servers/redis.conf)
    cpu_ceiling_cores = 1
    noop_op = "pglimits_core.studies.noop_ops:RedisNoop"
    recovery_log_pattern = r"Loading|loaded|Ready to accept"

    @classmethod
    def sampler(cls, endpoint: Endpoint, tables: list[str] | None = None) -> Any:
        from pglimits_core.samplers import RedisSampler

        return RedisSampler(endpoint.url)

    def __init__(self, data_dir: Path | None = None, port: int | None = None,
                 settings: dict[str, str] | None = None, start_timeout_s: float = 20, **options: Any):
        super().__init__(data_dir, port, **options)
        self.overrides = dict(settings or {})
        self.start_timeout_s = start_timeout_s
        self._process: subprocess.Popen | None = None

    @classmethod
    def binary(cls) -> str:
        path = shutil.which("redis-server")
        if not path:
            raise PGLimitsError("redis-server is not installed", INSTALL_COMMAND)
        return path

    @classmethod
    def missing(cls) -> list[tuple[str, str]]:
        return [] if shutil.which("redis-server") else [("redis-server", INSTALL_COMMAND)]

    @property
    def log_path(self) -> Path:
        return self.data_dir / "redis.log"

    def start(self) -> Endpoint:
        binary = self.binary()
        port = choose_port(self.requested_port, self.name)
        ensure_private_dir(state_dir())
        ensure_private_dir(self.data_dir)
        self._process = spawn(self._argv(binary, port), self.log_path, cwd=self.data_dir)
        self.endpoint = Endpoint(self.name, f"redis://{LOCALHOST}:{port}/0", port=port,
                                 pids=(self._process.pid,),
                                 extra={"data_dir": str(self.data_dir),
                                        "stop_signal": int(signal.SIGTERM)})
        try:
            wait_until(self.health, self.start_timeout_s, "Redis", self.log_path,
                       alive=lambda: self._process.poll() is None)
        except BaseException:
            self.stop()
            raise
        return self.endpoint

    def _argv(self, binary: str, port: int) -> list[str]:
        argv = [binary, "--port", str(port), "--bind", LOCALHOST, "--dir", str(self.data_dir)]
        settings = {s.key: s.value for s in parse_settings(SETTINGS_FILE)} | self.overrides
        for key, value in settings.items():
            argv += [f"--{key}", value]
        return argv

    def health(self) -> bool:
        return self.endpoint is not None and self.probe(self.endpoint.url)

    @staticmethod
    def probe(url: str) -> bool:
        try:
            with redis.Redis.from_url(url, socket_timeout=2) as client:
                return bool(client.ping())
        except redis.RedisError:
            return False

    def describe(self) -> dict[str, Any]:
        description = self.describe_url(self.endpoint.url)
        description["settings"]["tuning_ledger"] = ledger(parse_settings(SETTINGS_FILE))
        return description

    @staticmethod
    def describe_url(url: str) -> dict[str, Any]:
        with redis.Redis.from_url(url, decode_responses=True) as client:
            info = client.info("server")
            settings = {key: client.config_get(key).get(key) for key in REPORTED_SETTINGS}
        settings["multiplexing_api"] = info.get("multiplexing_api")
        return {"version": info["redis_version"], "settings": settings}

    def smoke(self) -> str:
        with redis.Redis.from_url(self.endpoint.url, decode_responses=True) as client:
            client.delete("smoke:q", "smoke:processing")
            client.lpush("smoke:q", "job-1")
            moved = client.lmove("smoke:q", "smoke:processing", "RIGHT", "LEFT")
            client.lrem("smoke:processing", 1, moved)
        return f"LPUSH/LMOVE/LREM -> {moved}"

    def pin_runtime_settings(self) -> dict[str, str]:
        with redis.Redis.from_url(self.endpoint.url, decode_responses=True) as client:
            pinned = {key: client.config_get(key)[key] for key in RUNTIME_SETTINGS}
        self.overrides.update(pinned)
        return pinned

    def storage_bytes(self) -> int:
        # without persistence the data lives in memory only: used_memory is its footprint
        with redis.Redis.from_url(self.endpoint.url) as client:
            return int(client.info("memory")["used_memory"]) + directory_bytes(self.data_dir)

    def stop(self) -> None:
        if self._process is not None:
            stop_process_group(self._process.pid, grace_s=10, sig=signal.SIGTERM)
            self._process.wait(timeout=5)
            self._process = None
