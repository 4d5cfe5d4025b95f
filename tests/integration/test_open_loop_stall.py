"""A server stall must show up as open-loop latency, not vanish (coordinated omission).

Real PostgreSQL, open-loop ``SELECT 1`` from worker processes (a psycopg connection each).
The server's processes are SIGSTOPped for 1 s mid-run: the recorded max latency must be at
least that second, while the service time before and after stays small.
"""

from __future__ import annotations

import signal
import threading
import time

import psutil
import pytest

from pglimits_core.load import OpenLoop, Phase, Role, RunSpec, run_load
from pglimits_core.record.summary import build_summary
from pglimits_core.servers.postgres import PostgresServer

pytestmark = pytest.mark.integration

WORKERS = 2
STALL_S = 1.0
RATE = 200.0
#: The first op behind the freeze may be intended up to one arrival gap after it (mean 5 ms at
#: 200/s); holding 50 ms longer makes "it waited >= 1 s" certain but for a e^-10 chance.
HOLD_S = STALL_S + 0.05


class SelectOne:
    """Verb only: one ``SELECT 1`` round trip on this worker's own connection."""

    name = "select1"

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.conn = None

    def open(self) -> None:
        import psycopg

        self.conn = psycopg.connect(self.dsn, autocommit=True)

    def __call__(self) -> None:
        self.conn.execute("SELECT 1").fetchone()

    def close(self) -> None:
        self.conn.close()


def server_processes(postmaster_pid: int) -> list[psutil.Process]:
    postmaster = psutil.Process(postmaster_pid)
    return [postmaster, *postmaster.children(recursive=True)]


def client_backends(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = "
                            "'client backend' AND pid <> pg_backend_pid()").fetchone()[0]


def stall_when_workers_connected(postmaster_pid: int, dsn: str, after_s: float) -> None:
    """Wait until the workers are connected, let the run get going, then freeze the server."""
    deadline = time.monotonic() + 120
    while client_backends(dsn) < WORKERS:
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)
    time.sleep(after_s)
    frozen = server_processes(postmaster_pid)
    try:
        for process in frozen:
            process.send_signal(signal.SIGSTOP)
        time.sleep(HOLD_S)
    finally:
        for process in reversed(frozen):
            process.send_signal(signal.SIGCONT)


def test_sigstopped_postgres_shows_up_as_latency(server_dir):
    server = PostgresServer(data_dir=server_dir)
    endpoint = server.start()
    try:
        stall = threading.Thread(target=stall_when_workers_connected,
                                 args=(endpoint.pids[0], endpoint.url, 1.6), daemon=True)
        stall.start()
        spec = RunSpec(
            phases=[Phase("before", 1.5), Phase("stall", 1.5), Phase("after", 2.0)],
            roles=[Role("q", SelectOne(endpoint.url), workers=WORKERS,
                        loop=OpenLoop(rate=RATE, arrival="poisson"))],
            seed=4)
        result = run_load(spec)
        stall.join(timeout=30)
    finally:
        server.stop()
    assert result.status == "complete", result.error
    entries = {e.phase: e for e in build_summary(result, "stall-test").entries}
    worst = max(e.latencies["latency"].max_us for e in entries.values())
    assert worst >= STALL_S * 1e6, entries
    for phase in ("before", "after"):
        assert entries[phase].latencies["service_time"].p50_us < 50_000, entries[phase]
    assert sum(e.ops + e.missed for e in entries.values()) > 0.8 * RATE * 5  # nothing skipped
