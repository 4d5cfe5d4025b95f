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
from pglimits_core.servers.base import Endpoint
from pglimits_core.servers.process import (
    LOCALHOST,
    ProcessServer,
    choose_port,
    ensure_private_dir,
    spawn,
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


class RedisServer(ProcessServer):
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

    # stop() is ProcessServer's: SIGTERM, on which Redis exits cleanly, then 10 s before SIGKILL
    stop_signal = signal.SIGTERM
    stop_grace_s = 10.0

    # --- hot backup and restore (the queue's backup drill) ---------------------------------------
    hot_backup_method = "BGSAVE SCHEDULE, wait for rdb_saves to grow, copy the RDB file"
    hot_backup_limit_s = 600.0  # a save of the study's sizes takes seconds; 10 min is a failure
    #: a restored copy loads the RDB: with an AOF on it would read the (absent) AOF instead
    RESTORED_SETTINGS = {"appendonly": "no"}

    def prepare_hot_backup(self, files: list[Path] | None = None) -> dict[str, Any]:
        """Nothing to prepare; what the copy will run with. A snapshot covers the whole
        dataset: ``files`` (an embedded engine's) must be None."""
        _whole_server_only(files)
        return {"restored_settings": dict(self.RESTORED_SETTINGS),
                "backup_covers": "the whole dataset (every key of the server)"}

    def hot_backup(self, target: Path, files: list[Path] | None = None) -> dict[str, Any]:
        """``BGSAVE SCHEDULE`` (an AOF rewrite in progress defers it instead of refusing it),
        wait until a new RDB save finished, copy the RDB to ``target/dump.rdb``. Clients keep
        reading and writing meanwhile (the save runs in a forked child)."""
        _whole_server_only(files)
        with redis.Redis.from_url(self.endpoint.url, decode_responses=True) as client:
            saves = int(client.info("persistence")["rdb_saves"])
            client.execute_command("BGSAVE", "SCHEDULE")
            waited = wait_for_bgsave(client, saves, self.hot_backup_limit_s)
            folder, name = client.config_get("dir")["dir"], client.config_get("dbfilename")["dbfilename"]
        shutil.copy2(Path(folder) / name, target / "dump.rdb")
        # the live server keeps no RDB of its own: a later restart (a crash drill) would load this
        # snapshot and serve data that was never in its run
        (Path(folder) / name).unlink(missing_ok=True)
        return {"bgsave": waited, "rdb": name}

    def restored_copy(self, backup_dir: Path, restore_dir: Path,
                      start_timeout_s: float = 300.0) -> RedisServer:
        """A server (not started) that loads ``hot_backup``'s RDB from the fresh data directory
        ``restore_dir``, without an AOF (``RESTORED_SETTINGS``)."""
        ensure_private_dir(restore_dir)
        shutil.copy2(backup_dir / "dump.rdb", restore_dir / "dump.rdb")
        return RedisServer(data_dir=restore_dir, settings=dict(self.RESTORED_SETTINGS),
                           start_timeout_s=start_timeout_s)


def _whole_server_only(files: list[Path] | None) -> None:
    if files is not None:
        raise ValueError("a Redis snapshot covers the whole dataset: it takes no list of files")


def wait_for_bgsave(client: Any, saves_before: int, limit_s: float, poll_s: float = 0.01) -> dict[str, Any]:
    """Until a new RDB save finished (``rdb_saves`` grew, nothing in progress), bounded."""
    import time

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        info = client.info("persistence")
        if int(info["rdb_saves"]) > saves_before and not int(info["rdb_bgsave_in_progress"]):
            if info["rdb_last_bgsave_status"] != "ok":
                raise RuntimeError(f"Redis BGSAVE failed ({info['rdb_last_bgsave_status']}): see the server log")
            return {"rdb_last_bgsave_time_sec": info.get("rdb_last_bgsave_time_sec"),
                    "rdb_last_cow_size": info.get("rdb_last_cow_size")}
        time.sleep(poll_s)
    raise RuntimeError(f"Redis BGSAVE still running after {limit_s:.0f}s")
