"""SQLite in WAL mode: a file, not a process. The "server" is the database file and its PRAGMAs.

There is no server process: whichever process opens the file *is* the database engine, which
is the point the SQLite seed makes. ``connect()`` is the one place that applies the PRAGMAs of
``configs/servers/sqlite.pragmas`` so every connection of every worker runs the same settings.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pglimits_core.config import SERVER_CONFIGS_DIR, state_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.base import Endpoint, Server
from pglimits_core.servers.process import ensure_private_dir
from pglimits_core.servers.settings_file import as_dict, ledger, parse_settings
from pglimits_core.servers.storage import directory_bytes

PRAGMAS_FILE = SERVER_CONFIGS_DIR / "sqlite.pragmas"
MIN_VERSION = (3, 35, 0)  # UPDATE ... RETURNING, which the seed's claim statement needs


def pragmas(overrides: dict[str, str] | None = None) -> dict[str, str]:
    return {**as_dict(parse_settings(PRAGMAS_FILE)), **(overrides or {})}


def connect(path: str | Path, overrides: dict[str, str] | None = None,
            timeout_s: float = 5.0) -> sqlite3.Connection:
    """A connection with every PRAGMA applied; autocommit (isolation_level=None) like the seed's Go code."""
    conn = sqlite3.connect(str(path), timeout=timeout_s, isolation_level=None,
                           check_same_thread=False)
    for key, value in pragmas(overrides).items():
        conn.execute(f"PRAGMA {key} = {value}")
    return conn


def read_pragmas(conn: sqlite3.Connection, keys: list[str]) -> dict[str, Any]:
    return {key: conn.execute(f"PRAGMA {key}").fetchone()[0] for key in keys}


class SQLiteServer(Server):
    """A WAL-mode database file under ``.pglimits/sqlite/``; ``pragmas={...}`` overrides keys."""

    name = "sqlite"
    engine_in_client = True  # whichever process opens the file runs the engine
    noop_op = "pglimits_core.studies.noop_ops:SQLiteNoop"
    crash_kill_target = "producer"  # no server: the process writing the file is the one to crash

    def __init__(self, data_dir: Path | None = None, port: int | None = None,
                 pragmas: dict[str, str] | None = None, filename: str = "queue.db", **options: Any):
        super().__init__(data_dir, port, **options)
        self.overrides = dict(pragmas or {})
        self.path = self.data_dir / filename

    @classmethod
    def missing(cls) -> list[tuple[str, str]]:
        if sqlite3.sqlite_version_info < MIN_VERSION:
            return [(f"SQLite >= 3.35 (have {sqlite3.sqlite_version})", "use a Python built with a newer SQLite")]
        return []

    def start(self) -> Endpoint:
        if self.missing():
            raise PGLimitsError(*self.missing()[0])
        ensure_private_dir(state_dir())
        ensure_private_dir(self.data_dir)
        with connect(self.path, self.overrides) as conn:  # creates the file, sets WAL (persistent)
            conn.execute("SELECT 1")
        self.endpoint = Endpoint(self.name, str(self.path), host="", port=None,
                                 extra={"pragmas": pragmas(self.overrides)})
        return self.endpoint

    def health(self) -> bool:
        return self.endpoint is not None and self.probe(self.endpoint.url)

    @staticmethod
    def probe(url: str) -> bool:
        try:
            conn = sqlite3.connect(url, timeout=2)
            try:
                return conn.execute("SELECT 1").fetchone() == (1,)
            finally:
                conn.close()
        except sqlite3.Error:
            return False

    def describe(self) -> dict[str, Any]:
        conn = connect(self.endpoint.url, self.overrides)
        try:
            effective = read_pragmas(conn, list(pragmas(self.overrides)))
        finally:
            conn.close()
        return {"version": sqlite3.sqlite_version,
                "settings": {**effective, "tuning_ledger": ledger(parse_settings(PRAGMAS_FILE)),
                             "overrides": self.overrides}}

    def smoke(self) -> str:
        conn = connect(self.endpoint.url, self.overrides)
        try:
            conn.execute("CREATE TEMP TABLE smoke (id INTEGER PRIMARY KEY, claimed_by TEXT)")
            conn.execute("INSERT INTO smoke (claimed_by) VALUES (NULL)")
            row = conn.execute("UPDATE smoke SET claimed_by = 'w1' WHERE id = (SELECT id FROM smoke "
                               "WHERE claimed_by IS NULL LIMIT 1) RETURNING id").fetchone()
        finally:
            conn.close()
        return f"UPDATE ... RETURNING claimed id={row[0]}"

    def storage_bytes(self) -> int:
        return directory_bytes(self.data_dir)

    def stop(self) -> None:
        """Nothing runs; the file stays (it is the data)."""
        self.endpoint = None

    # --- hot backup and restore (the queue's backup drill) ---------------------------------------
    hot_backup_method = "online backup API (sqlite3.Connection.backup, all pages in one step)"

    def prepare_hot_backup(self, files: list[Path] | None = None) -> dict[str, Any]:
        """Nothing to prepare; which database files the backup covers (``files``, e.g. a
        sharded queue's; default this server's own file)."""
        return {"files": [str(p) for p in files or [self.path]],
                "backup_covers": "the database file(s) named in files"}

    def hot_backup(self, target: Path, files: list[Path] | None = None) -> dict[str, Any]:
        """The online backup API (what the shell's ``.backup`` runs) into ``target``, one copy per
        database file: one read transaction each, a consistent snapshot of that file that never
        blocks the WAL writers, pages copied as they are (``VACUUM INTO`` would rebuild every
        b-tree: more CPU and a compacted copy). Writers keep writing meanwhile."""
        paths = list(files or [self.path])
        for path in paths:
            source = connect(path)
            destination = sqlite3.connect(str(target / Path(path).name))
            try:
                source.backup(destination, pages=-1)
            finally:
                destination.close()
                source.close()
        return {"shards_backed_up": len(paths)}

    def restored_copy(self, backup_dir: Path, restore_dir: Path,
                      start_timeout_s: float = 300.0) -> SQLiteServer:
        """A "server" on a copy of ``hot_backup``'s files in ``restore_dir`` (opening the copied
        file is the whole restore: no process to start)."""
        import shutil

        shutil.copytree(backup_dir, restore_dir, dirs_exist_ok=True)
        return SQLiteServer(data_dir=restore_dir, filename=self.path.name)
