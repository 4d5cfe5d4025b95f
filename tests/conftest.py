"""Shared fixtures. Integration tests start real servers in private dirs under .pglimits/test/."""

from __future__ import annotations

import contextlib
import dataclasses
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


@dataclasses.dataclass(frozen=True)
class ExecutedNotebook:
    """A workload notebook executed with the test profile, measuring: its run records, the figures
    and tables it wrote, the executed notebook, and what it left running in its state dir."""

    runs: Path
    figures: Path
    tables: Path
    executed: Path
    data: Path  # PGLIMITS_DATA_DIR while it ran
    leaked: list

    def outcome(self, workload: str) -> dict:
        """The study's outcome file (failures, servers that could not run) beside its records."""
        import json

        return json.loads((self.runs / f"{workload}.outcome.json").read_text())


def execute_notebook(notebook: str, out: Path, with_binaries: bool = False, own_data: bool = False) -> ExecutedNotebook:
    """``notebook`` under papermill on the test profile, its servers in a private state dir (the
    installed binaries linked in where it needs Qdrant's or Redis's; ``own_data``: its datasets and
    data under ``out``, not the project's)."""
    import papermill

    from pglimits_core.config import NOTEBOOKS_DIR, data_dir

    state = TEST_ROOT / f"nb-{uuid.uuid4().hex[:8]}"  # the Postgres OS user must reach it
    state.mkdir(parents=True)
    if with_binaries:
        (state / "bin").symlink_to(PROJECT_ROOT / ".pglimits" / "bin")
    runs, figures, tables = out / "runs", out / "figures", out / "tables"
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("PGLIMITS_STATE_DIR", str(state))
            if own_data:
                patch.setenv("PGLIMITS_DATA_DIR", str(out / "data"))
            papermill.execute_notebook(str(NOTEBOOKS_DIR / notebook), str(out / "out.ipynb"),
                                       parameters={"profile": "test", "measure": True, "runs_root": str(runs),
                                                   "figures_dir": str(figures), "tables_dir": str(tables)},
                                       cwd=str(NOTEBOOKS_DIR), progress_bar=False)
        data = out / "data" if own_data else data_dir()
        return ExecutedNotebook(runs, figures, tables, out / "out.ipynb", data, processes_using(state))
    finally:
        shutil.rmtree(state, ignore_errors=True)


# One execution of each workload's notebook per test session: the notebook's own test, the
# study's integration test and the report read the same records, so the test profile is measured
# once per workload rather than once per test that needs its records.
@pytest.fixture(scope="session")
def queue_notebook(tmp_path_factory: pytest.TempPathFactory) -> ExecutedNotebook:
    return execute_notebook("10-queue.ipynb", tmp_path_factory.mktemp("queue-notebook"))


@pytest.fixture(scope="session")
def search_notebook(tmp_path_factory: pytest.TempPathFactory) -> ExecutedNotebook:
    return execute_notebook("20-search.ipynb", tmp_path_factory.mktemp("search-notebook"))


@pytest.fixture(scope="session")
def vectors_notebook(tmp_path_factory: pytest.TempPathFactory) -> ExecutedNotebook:
    from pglimits_core.servers.qdrant import QdrantServer

    QdrantServer.install()  # verifies the installed binary (fetches it only where none was installed)
    return execute_notebook("30-vectors.ipynb", tmp_path_factory.mktemp("vectors-notebook"), with_binaries=True,
                            own_data=True)


@pytest.fixture(scope="session")
def pubsub_notebook(tmp_path_factory: pytest.TempPathFactory) -> ExecutedNotebook:
    return execute_notebook("40-pubsub.ipynb", tmp_path_factory.mktemp("pubsub-notebook"))
