"""Shared fixtures. Integration tests start real servers in private dirs under .pglimits/test/."""

from __future__ import annotations

import contextlib
import shutil
import uuid
from pathlib import Path

import psutil
import pytest

from pglimits_core.config import PROJECT_ROOT

TEST_ROOT = PROJECT_ROOT / ".pglimits" / "test"


@pytest.fixture
def server_dir() -> Path:
    """A fresh data dir the Postgres OS user can reach (pytest's tmp_path under /tmp is 0700 root)."""
    path = TEST_ROOT / f"t-{uuid.uuid4().hex[:10]}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def isolated_state(server_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the whole package (and any CLI it spawns) at a private state dir."""
    monkeypatch.setenv("PGLIMITS_STATE_DIR", str(server_dir))
    return server_dir


def processes_using(path: Path) -> list[psutil.Process]:
    """Live processes whose command line mentions ``path`` (leak check after stop)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if str(path) in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


def server_processes(pids) -> list[psutil.Process]:
    """The recorded server pids and all their children that are alive (redis renames itself)."""
    procs = []
    for pid in pids:
        try:
            root = psutil.Process(pid)
            procs += [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
    return [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.fixture(scope="session")
def postgres_endpoint():
    """One real PostgreSQL for a whole session of tests that only need to talk to it."""
    from pglimits_core.servers.postgres import PostgresServer

    path = TEST_ROOT / f"session-pg-{uuid.uuid4().hex[:8]}"
    server = PostgresServer(data_dir=path, settings={"shared_buffers": "256MB"})
    yield server.start()
    server.stop()
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_endpoint():
    from pglimits_core.servers.redis import RedisServer

    path = TEST_ROOT / f"session-redis-{uuid.uuid4().hex[:8]}"
    server = RedisServer(data_dir=path)
    yield server.start()
    server.stop()
    shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def placed_study(names: list[str], runs_root: Path, prefix: str, options: dict | None = None):
    """``(StudyRun, split placement)`` over real servers started as a study starts them: on the
    server CPU set, the context built under the placement; every server stopped afterwards, and
    none of their processes left behind."""
    from pglimits_core.placement import placed, resolve
    from pglimits_core.servers.fleet import Fleet
    from pglimits_core.studies.runner import build_context
    from pglimits_core.studies.study import StudyRun

    root = TEST_ROOT / f"{prefix}-{uuid.uuid4().hex[:8]}"
    split = resolve("split")
    with placed(split):
        fleet = Fleet(names, data_root=root, options=options).start()
    try:
        with placed(split):
            ctx = build_context(fleet, ceilings=False, runs_root=runs_root)
        yield StudyRun(ctx, fleet, seed=7), split
    finally:
        pids = [pid for server in fleet.servers.values() if server.endpoint for pid in server.endpoint.pids]
        fleet.stop()
        assert not server_processes(pids), "fleet left server processes behind"
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def own_postgres(prefix: str, settings: dict | None = None):
    """A PostgreSQL of a test module's own (with its ``settings``), stopped and removed after."""
    from pglimits_core.servers.postgres import PostgresServer

    server = PostgresServer(data_dir=TEST_ROOT / f"{prefix}-{uuid.uuid4().hex[:12]}", settings=settings or {})
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.data_dir, ignore_errors=True)


def vacuum_verbose(conn, table: str) -> str:
    """VACUUM (VERBOSE) ``table``: the INFO report it sends (tuples removed / not yet removable)."""
    messages = []

    def keep(diag):
        messages.append(diag.message_primary or "")

    conn.add_notice_handler(keep)
    try:
        conn.execute(f"VACUUM (VERBOSE) {table}")
    finally:
        conn.remove_notice_handler(keep)
    return "\n".join(messages)


def backend_exists(dsn: str, pid: int) -> bool:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() is not None
