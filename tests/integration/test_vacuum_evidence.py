"""The interference study's vacuum evidence against a real Postgres the project starts: a held
snapshot keeps dead tuples from vacuum until it is released, the holder always goes away, and a
vacuum window the sampler sees lines up with the server log's autovacuum line for that table."""

import time

import psycopg
import pytest

from pglimits_core.samplers import SamplerSet
from pglimits_core.samplers.vacuum import (
    ServerLogTail,
    VacuumSampler,
    parse_autovacuum_log,
    vacuum_windows,
    windows_from_log,
)
from pglimits_core.samplers.vacuum_log import dead_tuple_counts
from pglimits_core.studies.held_xmin import held_xmin
from tests.conftest import backend_exists, own_postgres, vacuum_verbose

pytestmark = pytest.mark.integration

#: the autovacuum launcher's wake-up here (10 s in the committed config): a test need not wait for it
NAPTIME = "1s"
#: seconds the log may take to show the autovacuum run (naptime + the slowed-down vacuum itself)
AUTOVACUUM_WAIT_S = 40
#: rows of the autovacuum probe: with the cost delay below its vacuum lasts a few seconds,
#: long enough for several one-second samples
PROBE_ROWS = 100_000
#: seconds a sampler window and the log's window may differ at either end (one sample interval
#: plus the sampler's own lag)
ALIGNMENT_SLACK_S = 2.0


@pytest.fixture(scope="module")
def server():
    with own_postgres("vacuum-evidence", {"autovacuum_naptime": NAPTIME}) as started:
        yield started


def test_held_snapshot_keeps_dead_tuples_until_released(server):
    dsn = server.endpoint.url
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE held_probe (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = false)")
        conn.execute("INSERT INTO held_probe SELECT g, repeat('x', 50) FROM generate_series(1, 2000) g")
        with held_xmin(dsn, seconds=30) as held:
            row = conn.execute("SELECT backend_xmin::text::bigint, state FROM pg_stat_activity WHERE pid = %s",
                               (held.pid,)).fetchone()
            assert row == (held.xmin, "idle in transaction")
            assert held.backstop_s == 60
            conn.execute("DELETE FROM held_probe WHERE id % 2 = 0")
            removed, _, not_yet = dead_tuple_counts(vacuum_verbose(conn, "held_probe"))
            assert (removed, not_yet) == (0, 1000)
        removed, _, not_yet = dead_tuple_counts(vacuum_verbose(conn, "held_probe"))
        assert (removed, not_yet) == (1000, 0)
        dead = conn.execute("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'held_probe'").fetchone()
        assert dead == (0,)
    assert not backend_exists(dsn, held.pid)


@pytest.mark.parametrize("interruption", [RuntimeError, KeyboardInterrupt])
def test_an_error_inside_the_block_still_ends_the_transaction(server, interruption):
    dsn = server.endpoint.url
    with pytest.raises(interruption), held_xmin(dsn, seconds=5) as held:
        assert backend_exists(dsn, held.pid)
        raise interruption("the block failed")
    assert not backend_exists(dsn, held.pid)


def prepare_probe(conn, table):
    """A table with PROBE_ROWS rows, half of them deleted while autovacuum is off for it."""
    conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = false)")
    conn.execute(f"INSERT INTO {table} SELECT g, repeat('y', 100) FROM generate_series(1, {PROBE_ROWS}) g")
    conn.execute(f"DELETE FROM {table} WHERE id % 2 = 0")


def let_autovacuum_in(conn, table):
    """Any dead tuple triggers it; a cost delay stretches it over seconds: its ~5,500 buffer hits
    (the pages are still dirty from the DELETE, so they cost 1 each) at 20 ms per 50 units."""
    conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = true, autovacuum_vacuum_threshold = 100, "
                 "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_cost_delay = 20, "
                 "autovacuum_vacuum_cost_limit = 50)")


def wait_for_logged_vacuum(tail, table):
    deadline = time.monotonic() + AUTOVACUUM_WAIT_S
    while time.monotonic() < deadline:
        logged = [v for v in parse_autovacuum_log(tail.read()) if v.table == table]
        if logged:
            return logged
        time.sleep(0.5)
    pytest.fail(f"no autovacuum of {table} was logged within {AUTOVACUUM_WAIT_S} s")


def test_sampler_window_lines_up_with_the_logged_autovacuum(server):
    dsn, table = server.endpoint.url, "vacuum_probe"
    with psycopg.connect(dsn, autocommit=True) as conn:
        prepare_probe(conn, table)
        tail = ServerLogTail(server.log_path)
        with SamplerSet([VacuumSampler(dsn, tables=[table])]) as samplers:
            let_autovacuum_in(conn, table)
            logged = wait_for_logged_vacuum(tail, table)
            time.sleep(1.2)  # one more sample after the run ended
    frame = samplers.dataframe()
    assert samplers.errors() == {"vacuum": 0}
    assert logged[0].tuples_removed > 0 and logged[0].not_yet_removable == 0
    from_log = windows_from_log(logged, frame, tables=[table])[0]
    seen = vacuum_windows(frame, tables=[table], auto_only=True)
    assert seen, f"the sampler saw no vacuum of {table}; the log says it took {logged[0].elapsed_s} s"
    nearest = min(seen, key=lambda w: abs(w.start_s - from_log.start_s))
    assert abs(nearest.start_s - from_log.start_s) <= ALIGNMENT_SLACK_S, (nearest, from_log)
    assert abs(nearest.end_s - from_log.end_s) <= ALIGNMENT_SLACK_S, (nearest, from_log)
    assert frame[f"{table}.autovacuum_count_delta"].max() == 1
