"""The co-location study's acts against a real Postgres the project starts: autovacuum off on the
queue until it holds a target of dead tuples, and always back on — at the act's end, when the act
fails midway, and on a real Ctrl-C of the process running it; the production holds as acts, with
the server's timeout ending the holder first (the mitigation) and the act recording when."""

import os
import signal
import subprocess
import sys
import threading
import time

import psycopg
import pytest

from pglimits_core.config import PROJECT_ROOT
from pglimits_core.workloads.interference import acts
from pglimits_core.workloads.interference.churn import QUEUE_TABLE
from tests.conftest import own_postgres

pytestmark = pytest.mark.integration

DEAD_TARGET = 3000


@pytest.fixture(scope="module")
def server():
    with own_postgres("acts", {"autovacuum_naptime": "1s"}) as started:
        yield started


@pytest.fixture
def queue(server):
    url = server.endpoint.url
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {QUEUE_TABLE}")
        conn.execute(f"CREATE TABLE {QUEUE_TABLE} (id bigserial PRIMARY KEY, body text)")
    return url


def reloptions(url):
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT reloptions FROM pg_class WHERE relname = %s", (QUEUE_TABLE,)).fetchone()
    return row[0] or []


class Churn:
    """Jobs inserted and deleted in a loop on one session: two dead tuples' worth per job."""

    def __init__(self, url):
        self.url, self.stop = url, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.is_set():
                conn.execute(f"INSERT INTO {QUEUE_TABLE} (body) SELECT 'x' FROM generate_series(1, 100)")
                conn.execute(f"DELETE FROM {QUEUE_TABLE}")

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)


def test_autovacuum_stays_off_until_the_target_of_dead_tuples_then_comes_back(queue):
    with Churn(queue):
        events = acts.autovacuum_off(queue, before_s=0, act_s=60, until_dead=DEAD_TARGET)(time.monotonic())
    assert events["reached_target"] is True and events["dead_at_act_end"] >= DEAD_TARGET
    assert events["act_end_s"] < 60  # it ended on the target, not the cap
    assert events["autovacuum_restored"] is True
    assert not any(o.startswith("autovacuum_enabled") for o in reloptions(queue))


def test_a_target_not_reached_within_the_cap_is_recorded_not_hidden(queue):
    events = acts.autovacuum_off(queue, before_s=0, act_s=1.5, until_dead=10**9)(time.monotonic())
    assert events["reached_target"] is False and events["autovacuum_restored"] is True
    assert 1.4 <= events["act_end_s"] < 5


def test_an_act_that_fails_midway_still_turns_autovacuum_back_on(queue, monkeypatch):
    def broken(*args):
        assert not acts.autovacuum_enabled(queue) and any(acts.autovacuum_off_option(o) for o in reloptions(queue))
        raise RuntimeError("the act failed")

    monkeypatch.setattr(acts, "wait_for_dead", broken)
    with pytest.raises(RuntimeError):
        acts.autovacuum_off(queue, before_s=0, act_s=30, until_dead=DEAD_TARGET)(time.monotonic())
    assert acts.autovacuum_enabled(queue)


# SIGINT raises KeyboardInterrupt as in run_all (servers/fleet.py installs that handler): a process
# started from a background job inherits SIGINT ignored, and Python then installs none of its own
ACT = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from pglimits_core.workloads.interference import acts
acts.autovacuum_off(sys.argv[1], before_s=0, act_s=600)(time.monotonic())
"""


def test_a_real_ctrl_c_during_the_act_turns_autovacuum_back_on(queue):
    process = subprocess.Popen([sys.executable, "-c", ACT, queue], cwd=PROJECT_ROOT,
                               env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    try:
        deadline = time.monotonic() + 20
        while acts.autovacuum_enabled(queue):  # wait until the act has turned it off
            assert time.monotonic() < deadline and process.poll() is None, "the act never turned autovacuum off"
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
    finally:
        process.kill()
        process.wait()
    assert acts.autovacuum_enabled(queue)


@pytest.mark.parametrize("kind", ["idle_xid", "rr_query"])
def test_a_hold_act_records_its_holder_and_leaves_nothing_behind(queue, kind):
    events = acts.hold(kind, queue, before_s=0, act_s=1.0)(time.monotonic())
    assert events["holder_kind"] == kind and events["holder_horizon"] > 0
    assert events["holder_gone"] is True and events["horizon_released_s"] is None
    assert 0.9 <= events["act_end_s"] - events["act_start_s"] < 5


@pytest.mark.parametrize("kind", ["idle_xid", "rr_query"])
def test_a_server_timeout_ends_the_hold_act_early_and_the_act_says_when(queue, kind):
    events = acts.hold(kind, queue, before_s=0, act_s=3.0, timeout_s=1.0)(time.monotonic())
    assert events["horizon_released_s"] is not None and 0.5 <= events["horizon_released_s"] <= 3
    assert events["holder_gone"] is True
