"""The rotated queue (partitioned into a ring of slots, the oldest truncated once drained) against
a real Postgres the project starts: pgbench churns it while the rotator runs, and the ledger —
jobs prefilled + enqueued − acknowledged = jobs left — holds to the job; a TRUNCATE without the
emptiness check, on the same ledger, is caught losing jobs (what the check prevents); a held
horizon does not stop a rotation (TRUNCATE waits for locks, not the xmin horizon), and the
rotated partitions' dead tuples go with it."""

import threading
import time

import psycopg
import pytest

from pglimits_core.load.tools import PgbenchLoad, ToolProcess
from pglimits_core.studies.horizons import held_horizon
from pglimits_core.workloads.interference import rotation
from tests.conftest import own_postgres

pytestmark = pytest.mark.integration

BACKLOG = 500
PAYLOAD = 64


@pytest.fixture(scope="module")
def server():
    with own_postgres("rotation", {"autovacuum_naptime": "1s"}) as started:
        yield started


@pytest.fixture
def queue(server):
    url = server.endpoint.url
    with psycopg.connect(url, autocommit=True) as conn:
        rotation.reset(conn, BACKLOG, PAYLOAD)
    return url


def ids_issued(url):
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(f"SELECT last_value FROM {rotation.SEQUENCE}").fetchone()[0]


def churn(url, tmp_path, seconds=4, clients=2):
    """pgbench on the rotated churn script, closed loop; its completed transactions."""
    load = PgbenchLoad(url, rotation.churn_script(PAYLOAD), clients, seconds, op="job", script_name="rot.sql")
    result = load.run(ToolProcess(tmp_path))
    assert result.error is None, result.error
    return result.params["tool_reported"]["logged_transactions"]


def test_rotating_under_churn_loses_no_job(queue, tmp_path):
    rotator = rotation.Rotator(queue, period_s=0.5)
    origin, stop = time.monotonic(), threading.Event()
    thread = threading.Thread(target=rotator.run_until, args=(origin, stop.is_set), daemon=True)
    thread.start()
    try:
        done = churn(queue, tmp_path)
    finally:
        stop.set()
        thread.join(10)
    summary = rotator.summary()
    assert summary["error"] is None and summary["rotations"] >= 3, summary
    with psycopg.connect(queue, autocommit=True) as conn:
        left = rotation.jobs(conn)
    # every transaction enqueued one job and acknowledged one: the backlog is all that is left
    assert done > 100 and left == BACKLOG, (done, left, summary)
    assert ids_issued(queue) == BACKLOG + done  # the reset restarts the sequence


def test_the_ledger_catches_a_truncation_without_the_emptiness_check(queue):
    with psycopg.connect(queue, autocommit=True) as conn:
        conn.execute(f"UPDATE {rotation.CURRENT} SET slot = {rotation.SLOTS - 1}")  # the backlog's slot is next
        refused = rotation.rotate_once(conn)
        assert refused["rotated"] is False and "still holds jobs" in refused["why"]
        assert rotation.jobs(conn) == BACKLOG
        unchecked = rotation.rotate_once(conn, check_empty=False)
        assert unchecked["rotated"] is True and rotation.jobs(conn) == 0  # the whole backlog lost


def test_a_held_horizon_does_not_stop_the_rotation_and_the_dead_tuples_go_with_it(queue):
    with psycopg.connect(queue, autocommit=True) as conn:
        conn.execute(f"UPDATE {rotation.CURRENT} SET slot = {rotation.SLOTS - 1}")  # the backlog's slot is next
        with held_horizon("idle_xid", queue, seconds=30) as hold:
            conn.execute(f"DELETE FROM {rotation.PARTITIONS[0]}")  # drained: every job acknowledged
            conn.execute(f"VACUUM {rotation.PARTITIONS[0]}")  # the held horizon keeps every deleted row
            size_before = conn.execute("SELECT pg_relation_size(%s)", (rotation.PARTITIONS[0],)).fetchone()[0]
            done = rotation.rotate_once(conn)
            size_after = conn.execute("SELECT pg_relation_size(%s)", (rotation.PARTITIONS[0],)).fetchone()[0]
            still = conn.execute("SELECT backend_xid IS NOT NULL FROM pg_stat_activity WHERE pid = %s",
                                 (hold.pid,)).fetchone()
        assert done["rotated"] is True and done["slot"] == 0, done
        assert size_before > 0 and size_after == 0  # the dead rows went with the TRUNCATE
        assert still == (True,)  # while the horizon was still held
