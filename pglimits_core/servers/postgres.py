"""PostgreSQL 16 (+ pgvector, pgmq), started by the project from the pgserver wheel's binaries.

We run ``initdb`` and ``postgres`` ourselves rather than ``pgserver.get_server()``: the latter
disables TCP and ignores our configuration. Settings come from ``configs/servers/postgres.conf``.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psycopg

from pglimits_core.config import SERVER_CONFIGS_DIR, state_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers import pg_install
from pglimits_core.servers.base import Endpoint
from pglimits_core.servers.process import (
    LOCALHOST,
    ProcessServer,
    choose_port,
    ensure_private_dir,
    pid_alive,
    spawn,
    wait_until,
)
from pglimits_core.servers.settings_file import Setting, as_dict, ledger, parse_settings
from pglimits_core.servers.storage import directory_bytes

SETTINGS_FILE = SERVER_CONFIGS_DIR / "postgres.conf"
DATABASE = "pglimits"
SUPERUSER = "postgres"
EXTENSIONS = ("vector", "pgmq")
# The settings describe() reports: the tuned ones plus those that decide durability and memory.
REPORTED_SETTINGS = ("server_version", "listen_addresses", "port", "max_connections",
                     "shared_buffers", "work_mem", "maintenance_work_mem", "effective_cache_size",
                     "wal_level", "wal_compression", "wal_buffers", "max_wal_size", "min_wal_size",
                     "checkpoint_timeout", "synchronous_commit", "fsync", "full_page_writes",
                     "jit", "autovacuum", "autovacuum_naptime", "autovacuum_vacuum_cost_limit",
                     "autovacuum_vacuum_cost_delay", "autovacuum_vacuum_scale_factor",
                     "autovacuum_max_workers", "huge_pages", "track_io_timing")


def dsn_for(port: int, host: str = LOCALHOST, dbname: str = DATABASE) -> str:
    return f"host={host} port={port} user={SUPERUSER} dbname={dbname} connect_timeout=5"


class PostgresServer(ProcessServer):
    """PostgreSQL 16.2 with the tuned settings; ``settings={...}`` overrides single keys."""

    name = "postgres"
    side = "postgres"
    noop_op = "pglimits_core.studies.noop_ops:PostgresNoop"
    recovery_log_pattern = (r"was interrupted|not properly shut down|redo starts|redo done|automatic recovery"
                            r"|end-of-recovery|ready to accept connections")
    #: the committed settings files, applied in order (a later file's key wins): the tuning ledger
    settings_files: tuple[Path, ...] = (SETTINGS_FILE,)
    #: created in the study database at every start
    extensions: tuple[str, ...] = EXTENSIONS

    @classmethod
    def sampler(cls, endpoint: Endpoint, tables: list[str] | None = None) -> Any:
        from pglimits_core.samplers import PostgresSampler

        return PostgresSampler(endpoint.url, tables=tables)

    @classmethod
    def before_crash_load(cls, url: str) -> dict[str, Any]:
        """CHECKPOINT before the load: without it the WAL to replay holds whatever earlier points
        wrote since the last timed checkpoint (tens of MB, uncontrolled), not the load's."""
        with psycopg.connect(url, autocommit=True) as conn:
            started = time.monotonic()
            conn.execute("CHECKPOINT")
            took = time.monotonic() - started
            lsn = conn.execute("SELECT redo_lsn::text FROM pg_control_checkpoint()").fetchone()[0]
        return {"checkpoint": True, "checkpoint_s": round(took, 3), "redo_lsn": lsn}

    @classmethod
    def state_at_crash(cls, url: str) -> dict[str, Any]:
        """WAL written since the last checkpoint's redo point: what crash recovery must replay, the
        main driver of Postgres restart time (checkpoint_timeout and max_wal_size bound it)."""
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn), checkpoint_time "
                               "FROM pg_control_checkpoint()").fetchone()
        return {"wal_to_replay_bytes": int(row[0]), "last_checkpoint": row[1].isoformat()}

    def __init__(self, data_dir: Path | None = None, port: int | None = None,
                 settings: dict[str, str] | None = None, start_timeout_s: float = 60, **options: Any):
        super().__init__(data_dir, port, **options)
        self.overrides = dict(settings or {})
        self.start_timeout_s = start_timeout_s
        self.fallbacks: dict[str, str] = {}
        self._process: subprocess.Popen | None = None

    # --- obtaining -----------------------------------------------------------------------
    @classmethod
    def locate(cls) -> pg_install.PgInstall:
        """The binaries this server runs, with its extension files in place (PG 16: pgserver + pgmq)."""
        install = pg_install.locate_install()
        pg_install.install_pgmq_extension(install)
        return install

    @classmethod
    def install(cls) -> None:
        pg_install.install_pgmq_extension(pg_install.locate_install())
        pg_install.ensure_os_user()

    @classmethod
    def missing(cls) -> list[tuple[str, str]]:
        try:
            pg_install.locate_install()
            pg_install.pgmq_source()
        except PGLimitsError as exc:
            return [(exc.problem, "make setup")]
        return []

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> Endpoint:
        install = self.locate()
        user = pg_install.ensure_os_user()
        port = choose_port(self.requested_port, self.name)
        pgdata = self._prepare_data_dir(install, user)
        self._process = spawn(self._postgres_argv(install, pgdata, port), self.log_path, user=user)
        self.endpoint = Endpoint(self.name, dsn_for(port), port=port, pids=(self._process.pid,),
                                 extra={"data_dir": str(self.data_dir),
                                        "stop_signal": int(signal.SIGINT)})
        try:
            wait_until(self.health, self.start_timeout_s, "PostgreSQL", self.log_path,
                       alive=lambda: self._process.poll() is None)
            self._create_database_and_extensions()
        except BaseException:
            self.stop()
            raise
        return self.endpoint

    @property
    def log_path(self) -> Path:
        return self.data_dir / "postgres.log"

    def _prepare_data_dir(self, install: pg_install.PgInstall, user: str | None) -> Path:
        ensure_private_dir(state_dir())
        ensure_private_dir(self.data_dir)
        pg_install.chown_to(self.data_dir, user)
        pg_install.grant_traverse(self.data_dir, user)
        pg_install.grant_traverse(install.bin / "postgres", user)
        pgdata = self.data_dir / "pgdata"
        self._refuse_if_running(pgdata)
        if not (pgdata / "PG_VERSION").exists():
            self._initdb(install, pgdata, user)
        return pgdata

    def _refuse_if_running(self, pgdata: Path) -> None:
        pid_file = pgdata / "postmaster.pid"
        if pid_file.exists():
            pid = int(pid_file.read_text().split()[0])
            if pid_alive(pid):
                raise PGLimitsError(f"PostgreSQL is already running on {pgdata} (pid {pid})",
                                    "run `pglimits servers down` first")

    def _initdb(self, install: pg_install.PgInstall, pgdata: Path, user: str | None) -> None:
        # trust auth is safe here only because the server listens on 127.0.0.1 and a 0700 socket dir
        argv = [install.tool("initdb"), "-D", str(pgdata), "-U", SUPERUSER, "--auth=trust",
                "-E", "UTF8", "--locale=C", "--no-instructions"]
        result = subprocess.run(argv, capture_output=True, text=True, user=user)
        if result.returncode != 0:
            raise PGLimitsError(f"initdb failed: {result.stderr.strip().splitlines()[-1:]}",
                                f"remove {pgdata} and retry, or check disk space")

    def effective_settings(self, install: pg_install.PgInstall) -> dict[str, str]:
        """The committed settings, overrides applied, with build fallbacks recorded."""
        settings = {**as_dict(self.committed_settings()), **self.overrides}
        if settings.get("wal_compression") == "lz4" and not install.has_lz4():
            settings["wal_compression"] = "pglz"
            self.fallbacks["wal_compression"] = "lz4 requested; this build lacks lz4, used pglz"
        return settings

    @classmethod
    def committed_settings(cls) -> list[Setting]:
        return [setting for path in cls.settings_files for setting in parse_settings(path)]

    def _postgres_argv(self, install: pg_install.PgInstall, pgdata: Path, port: int) -> list[str]:
        settings = {**self.effective_settings(install), "listen_addresses": LOCALHOST,
                    "port": str(port), "unix_socket_directories": str(self.data_dir)}
        argv = [install.tool("postgres"), "-D", str(pgdata)]
        for key, value in settings.items():
            argv += ["-c", f"{key}={value}"]
        return argv

    def _create_database_and_extensions(self) -> None:
        with psycopg.connect(dsn_for(self.endpoint.port, dbname="postgres"), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
            if not exists:
                conn.execute(f"CREATE DATABASE {DATABASE}")
        with psycopg.connect(self.endpoint.url, autocommit=True) as conn:
            for extension in self.extensions:
                conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")

    def health(self) -> bool:
        return self.endpoint is not None and self.probe(dsn_for(self.endpoint.port, dbname="postgres"))

    @staticmethod
    def probe(url: str) -> bool:
        try:
            with psycopg.connect(url, connect_timeout=2) as conn:
                return conn.execute("SELECT 1").fetchone() == (1,)
        except psycopg.Error:
            return False

    def describe(self) -> dict[str, Any]:
        description = self.describe_url(self.endpoint.url)
        description["settings"]["fallbacks"] = dict(self.fallbacks)
        description["settings"]["tuning_ledger"] = ledger(self.committed_settings())
        return description

    @staticmethod
    def describe_url(url: str) -> dict[str, Any]:
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT name, current_setting(name) FROM pg_settings "
                                "WHERE name = ANY(%s) ORDER BY name", (list(REPORTED_SETTINGS),)).fetchall()
            version = conn.execute("SHOW server_version").fetchone()[0]
            extensions = dict(conn.execute("SELECT extname, extversion FROM pg_extension").fetchall())
        return {"version": version, "settings": {**dict(rows), "extensions": extensions}}

    def smoke(self) -> str:
        with psycopg.connect(self.endpoint.url, autocommit=True) as conn:
            conn.execute("CREATE TEMP TABLE smoke_items (id int, v vector(3))")
            conn.execute("INSERT INTO smoke_items VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0,0,1]')")
            conn.execute("CREATE INDEX ON smoke_items USING hnsw (v vector_l2_ops)")
            nearest = conn.execute("SELECT id FROM smoke_items ORDER BY v <-> '[0.9,0.1,0]' LIMIT 1").fetchone()[0]
            conn.execute("SELECT pgmq.create('smoke')")
            conn.execute("""SELECT pgmq.send('smoke', '{"hello": "pgmq"}')""")
            message = conn.execute("SELECT message FROM pgmq.read('smoke', 30, 1)").fetchone()[0]
            conn.execute("SELECT pgmq.drop_queue('smoke')")
        return f"pgvector HNSW nearest id={nearest}; pgmq send/read -> {message}"

    def storage_bytes(self) -> int:
        return directory_bytes(self.data_dir / "pgdata")

    # stop() is ProcessServer's: SIGINT to the postmaster is PostgreSQL's "fast" shutdown (roll
    # back and exit cleanly), given 30 s before SIGKILL
    stop_signal = signal.SIGINT
    stop_grace_s = 30.0

    # --- hot backup and restore (the queue's backup drill) ---------------------------------------
    hot_backup_method = "pg_basebackup -X stream -c fast -F p over a replication connection to 127.0.0.1"
    hot_backup_limit_s = 600.0  # a backup of the study's sizes takes seconds; 10 min is a failure
    # pg_hba lines initdb writes for replication: local + host 127.0.0.1/32 + ::1/128, trust
    _REPLICATION_RULES_SQL = ("SELECT type, address, auth_method FROM pg_hba_file_rules "
                              "WHERE 'replication' = ANY(database) AND error IS NULL")
    _REPLICATION_SETTINGS = ["wal_level", "max_wal_senders", "max_replication_slots", "listen_addresses"]

    def prepare_hot_backup(self, files: list[Path] | None = None) -> dict[str, Any]:
        """The replication facts pg_basebackup needs, read back and checked, then a CHECKPOINT
        (the backup's own checkpoint then flushes only what was written after it). A base
        backup covers the whole cluster: ``files`` (an embedded engine's) must be None."""
        _whole_server_only(files)
        with psycopg.connect(self.endpoint.url, autocommit=True) as conn:
            settings = dict(conn.execute("SELECT name, setting FROM pg_settings WHERE name = ANY(%s)",
                                         (self._REPLICATION_SETTINGS,)).fetchall())
            hba = [dict(zip(("type", "address", "auth_method"), row, strict=True))
                   for row in conn.execute(self._REPLICATION_RULES_SQL).fetchall()]
            cluster = conn.execute("SELECT sum(pg_database_size(datname))::bigint FROM pg_database").fetchone()[0]
            checkpoint = self.before_crash_load(self.endpoint.url)
        check_replication(settings, hba)
        return {"replication": {**settings, "pg_hba_replication": hba}, "before_load": checkpoint,
                "cluster_bytes": cluster,
                "backup_covers": "the whole cluster (every database; pg_basebackup cannot back up one table)"}

    def hot_backup(self, target: Path, files: list[Path] | None = None) -> dict[str, Any]:
        """``pg_basebackup`` of this running server into ``target/pgdata``: plain format, WAL
        streamed (``-X stream``), fast checkpoint (a spread one would wait up to 0.9 x
        checkpoint_timeout), over a replication connection to 127.0.0.1, with this server's
        own binaries. Clients keep reading and writing meanwhile."""
        from pglimits_core.servers.ownership import child_env

        _whole_server_only(files)
        argv = [self.locate().tool("pg_basebackup"), "-h", LOCALHOST,
                "-p", str(self.endpoint.port), "-U", SUPERUSER, "-w", "-D", str(target / "pgdata"),
                "-X", "stream", "-c", "fast", "-F", "p", "--label=pglimits-backup-drill"]
        # run() kills the child on any exception, Ctrl-C included; the marks make it findable
        result = subprocess.run(argv, capture_output=True, text=True, timeout=self.hot_backup_limit_s,
                                env=child_env())
        if result.returncode != 0:
            raise RuntimeError(f"pg_basebackup failed ({result.returncode}): {result.stderr.strip()[-500:]}")
        return {"command": " ".join(argv[1:]), "tool": argv[0]}

    def restored_copy(self, backup_dir: Path, restore_dir: Path,
                      start_timeout_s: float = 300.0) -> PostgresServer:
        """A server (not started) on a copy of ``hot_backup``'s artefact in the fresh data
        directory ``restore_dir``, owned by the server's OS user, with this server's settings.
        Started, it runs crash recovery from the backup label (replaying the streamed WAL)."""
        import shutil

        user = pg_install.ensure_os_user()
        ensure_private_dir(restore_dir)
        shutil.copytree(backup_dir / "pgdata", restore_dir / "pgdata")
        chown_tree(restore_dir, user)
        return type(self)(data_dir=restore_dir, settings=dict(self.overrides),
                          start_timeout_s=start_timeout_s)


def _whole_server_only(files: list[Path] | None) -> None:
    if files is not None:
        raise ValueError("a PostgreSQL backup covers the whole cluster: it takes no list of files")


def check_replication(settings: dict[str, str], hba: list[dict[str, Any]]) -> None:
    """pg_basebackup -X stream needs two WAL senders and a replication rule for 127.0.0.1."""
    if settings.get("wal_level") not in ("replica", "logical"):
        raise PGLimitsError(f"Postgres runs wal_level={settings.get('wal_level')}: pg_basebackup needs replica",
                            "set wal_level = replica in configs/servers/postgres.conf")
    if int(settings.get("max_wal_senders", 0)) < 2:
        raise PGLimitsError("Postgres max_wal_senders < 2: pg_basebackup -X stream needs two",
                            "set max_wal_senders = 10 in configs/servers/postgres.conf")
    if not any(rule["type"] == "host" and str(rule["address"]).startswith("127.0.0.1") for rule in hba):
        raise PGLimitsError("pg_hba has no replication rule for 127.0.0.1",
                            "re-create the data dir (initdb writes one) or add `host replication all 127.0.0.1/32 trust`")


def chown_tree(root: Path, user: str | None) -> None:
    """Give a copied data directory to the server's OS user (copies made as root are root's)."""
    if not user:
        return
    import os
    import pwd

    uid, gid = pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid
    os.chown(root, uid, gid)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.lchown(os.path.join(folder, name), uid, gid)
