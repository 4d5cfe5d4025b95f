"""The horizons production holds (``studies.horizons``), against a real Postgres the project starts:
each kind really holds the horizon (VACUUM can remove none of the tuples deleted under it, and
its removable cutoff stays at or below the holder), shows in the pg_stat_activity column it is
verified by, and is always released — at the block's end, on an error, on a real Ctrl-C of the
process holding it, by the server's backstop when that process is SIGKILLed, and by the timeout
a production system would set (the mitigation)."""

import os
import signal
import subprocess
import sys
import time
import uuid

import psycopg
import pytest

from pglimits_core.config import PROJECT_ROOT
from pglimits_core.samplers.vacuum_log import dead_tuple_counts, removable_cutoff
from pglimits_core.studies.horizons import KINDS, SHOWN_BY, held_horizon, released_after_s
from tests.conftest import backend_exists, own_postgres, vacuum_verbose

pytestmark = pytest.mark.integration

ROWS = 2000
#: seconds a backend may take to go once its client is gone (the server notices a dead client
#: of an active statement within client_connection_check_interval, 1 s)
GONE_WITHIN_S = 5.0


@pytest.fixture(scope="module")
def server():
    with own_postgres("horizons") as started:
        yield started


def wait_gone(dsn, pid, within_s):
    deadline = time.monotonic() + within_s
    while backend_exists(dsn, pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def fresh_table(conn, kind):
    table = f"held_{kind}_{uuid.uuid4().hex[:6]}"
    conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = false)")
    conn.execute(f"INSERT INTO {table} SELECT g, repeat('x', 50) FROM generate_series(1, {ROWS}) g")
    return table


@pytest.mark.parametrize("kind", KINDS)
def test_each_hold_keeps_the_tuples_deleted_under_it_until_released(server, kind):
    dsn = server.endpoint.url
    with psycopg.connect(dsn, autocommit=True) as conn:
        table = fresh_table(conn, kind)
        with held_horizon(kind, dsn, seconds=30) as hold:
            column, state = SHOWN_BY[kind]
            row = conn.execute(f"SELECT {column}::text::bigint, state FROM pg_stat_activity WHERE pid = %s",
                               (hold.pid,)).fetchone()
            assert row == (hold.horizon, state) and hold.column == column
            assert hold.backstop_s == 60  # the planned 30 s + the 30-s margin
            conn.execute(f"DELETE FROM {table} WHERE id % 2 = 0")
            report = vacuum_verbose(conn, table)
            removed, _, not_yet = dead_tuple_counts(report)
            assert (removed, not_yet) == (0, ROWS // 2)
            cutoff, _ = removable_cutoff(report)
            assert cutoff is not None and cutoff <= hold.horizon
        removed, _, not_yet = dead_tuple_counts(vacuum_verbose(conn, table))
        assert (removed, not_yet) == (ROWS // 2, 0)
    assert not backend_exists(dsn, hold.pid)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("interruption", [RuntimeError, KeyboardInterrupt])
def test_an_error_inside_the_block_still_releases_the_hold(server, kind, interruption):
    dsn = server.endpoint.url
    started = time.monotonic()
    with pytest.raises(interruption), held_horizon(kind, dsn, seconds=30) as hold:
        assert backend_exists(dsn, hold.pid)
        raise interruption("the block failed")
    assert not backend_exists(dsn, hold.pid)
    assert time.monotonic() - started < 15  # released at once, not by the 60-s backstop


# SIGINT raises KeyboardInterrupt as in run_all (servers/fleet.py installs that handler): a process
# started from a background job inherits SIGINT ignored, and Python then installs none of its own
HOLDER = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from pglimits_core.studies.horizons import held_horizon
with held_horizon(sys.argv[1], sys.argv[2], seconds=float(sys.argv[3]), margin_s=float(sys.argv[4])) as hold:
    print(hold.pid, flush=True)
    time.sleep(600)
"""


def holding_process(dsn, kind, seconds, margin_s):
    """A separate Python process holding the horizon; returns it and the holder's backend pid."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, kind, dsn, str(seconds), str(margin_s)],
                               stdout=subprocess.PIPE, text=True, cwd=PROJECT_ROOT,
                               env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    line = process.stdout.readline()
    assert line.strip().isdigit(), f"the holding process printed {line!r} (exit {process.poll()})"
    return process, int(line)


@pytest.mark.parametrize("kind", KINDS)
def test_a_real_ctrl_c_of_the_holding_process_releases_the_hold(server, kind):
    dsn = server.endpoint.url
    process, pid = holding_process(dsn, kind, seconds=60, margin_s=30)
    try:
        assert backend_exists(dsn, pid)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
        assert wait_gone(dsn, pid, GONE_WITHIN_S)
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("kind", KINDS)
def test_a_sigkilled_holder_is_ended_by_the_server(server, kind):
    """No ``finally`` runs: the server's own checks end the backend (the dead client of an idle
    session at once, of an active statement within a second; the backstop, 3 s here, at worst)."""
    dsn = server.endpoint.url
    process, pid = holding_process(dsn, kind, seconds=1, margin_s=2)
    process.kill()
    process.wait()
    assert wait_gone(dsn, pid, 3 + GONE_WITHIN_S)


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_timeout_shorter_than_the_hold_releases_the_horizon_at_the_timeout(server, kind):
    dsn = server.endpoint.url
    with held_horizon(kind, dsn, seconds=30, timeout_s=2) as hold:
        assert hold.backstop_s == 2
        released = released_after_s(dsn, hold, limit_s=10)
    assert released is not None and 1.0 <= released <= 5.0
