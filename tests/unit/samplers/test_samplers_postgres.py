"""PostgresSampler arithmetic against a fake psycopg connection returning canned rows."""

from decimal import Decimal

import pytest

from pglimits_core.samplers.postgres import PostgresSampler, as_number


def canned_stats(wal_bytes, commits, dead=10, autovacuums=0, checkpoints_req=0):
    """Rows keyed by a fragment of each statement the sampler sends."""
    return {
        "pg_stat_wal": [(100, 5, Decimal(wal_bytes))],
        "pg_stat_database": [(commits, 2, 1000, 10, 50, 20, 5, 0, 0)],
        "pg_stat_bgwriter": [(7, checkpoints_req, 300, 40, 12)],
        "pg_stat_user_tables": [("jobs", 1000, dead, autovacuums, 1, 1700000000.5, 81920)],
        "pg_stat_progress_vacuum": [(1, "scanning heap", "jobs", Decimal(42))],
        "pg_stat_activity": [(1, "autovacuum: VACUUM public.jobs", 17, 0.0)],
    }


class FakeCursor:
    def __init__(self, connection):
        self.connection = connection
        self.rows = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute(self, sql, params=None):
        self.connection.executed.append((sql, params))
        if self.connection.fail_next:
            self.connection.fail_next = False
            raise RuntimeError("canceling statement due to statement timeout")
        # the activity query mentions other views in its text; match it first
        key = next(k for k in ("pg_stat_activity", *self.connection.stats) if k in sql)
        self.rows = self.connection.stats[key]

    def fetchone(self):
        return self.rows[0] if self.rows else None

    def fetchall(self):
        return self.rows


class FakeConnection:
    def __init__(self):
        self.stats = {}
        self.executed = []
        self.closed = False
        self.fail_next = False

    def cursor(self):
        return FakeCursor(self)

    def close(self):
        self.closed = True


@pytest.fixture
def fake():
    connections = []

    def connect(dsn):
        connections.append(FakeConnection())
        return connections[-1]

    return connections, connect


def test_two_samples_give_per_second_rates_and_levels(fake):
    connections, connect = fake
    sampler = PostgresSampler("dbname=x", tables=["jobs"], connect=connect)
    sampler.connection = connect("dbname=x")
    connections[-1].stats.update(canned_stats(wal_bytes=1_000_000, commits=500))
    first = sampler.sample(10.0)
    assert first["wal_bytes_per_s"] is None and first["xact_commit_per_s"] is None
    assert first["jobs.n_dead_tup"] == 10 and first["jobs.total_bytes"] == 81920

    connections[-1].stats.update(
        canned_stats(wal_bytes=3_000_000, commits=1500, dead=400, autovacuums=1, checkpoints_req=1)
    )
    second = sampler.sample(12.0)
    assert second["wal_bytes_per_s"] == 1_000_000.0
    assert second["xact_commit_per_s"] == 500.0
    assert second["xact_rollback_per_s"] == 0.0
    assert second["jobs.n_dead_tup"] == 400
    assert second["jobs.autovacuum_count_delta"] == 1
    assert second["checkpoints_req_delta"] == 1
    assert second["buffers_backend_per_s"] == 0.0
    assert second["vacuums_running"] == 1 and second["vacuum_phases"] == "scanning heap"
    assert second["vacuum_heap_blks_scanned"] == 42
    assert second["autovacuum_workers"] == 1
    assert second["oldest_xmin_age_xacts"] == 17
    assert second["notification_queue_usage"] == 0.0
    assert len(connections) == 1  # the connection is kept between samples


def test_counter_reset_gives_none_not_negative(fake):
    connections, connect = fake
    sampler = PostgresSampler("dbname=x", connect=connect)
    sampler.connection = connect("dbname=x")
    connections[-1].stats.update(canned_stats(wal_bytes=9_000_000, commits=900))
    sampler.sample(1.0)
    connections[-1].stats.update(canned_stats(wal_bytes=9_500_000, commits=3))  # pg_stat_reset()
    row = sampler.sample(2.0)
    assert row["xact_commit_per_s"] is None
    assert row["wal_bytes_per_s"] == 500_000.0


def test_one_round_trip_per_view_and_table_filter_is_a_parameter(fake):
    connections, connect = fake
    sampler = PostgresSampler("dbname=x", tables=["jobs", "events"], connect=connect)
    sampler.connection = connect("dbname=x")
    connections[-1].stats.update(canned_stats(1, 1))
    sampler.sample(1.0)
    executed = connections[-1].executed
    assert len(executed) == 6
    assert "pg_stat_user_tables" in executed[3][0] and executed[3][1] == {
        "tables": ["jobs", "events"]
    }


def test_failed_sample_drops_the_connection_and_reconnects(fake):
    connections, connect = fake
    sampler = PostgresSampler("dbname=x", connect=connect)
    sampler.connection = connect("dbname=x")
    connections[-1].fail_next = True
    with pytest.raises(RuntimeError):
        sampler.sample(1.0)
    assert connections[0].closed and sampler.connection is None
    with pytest.raises(StopIteration):  # the new fake has no canned rows: proves a reconnect
        sampler.sample(2.0)
    assert len(connections) == 2


def test_numeric_values_become_plain_numbers():
    assert as_number(Decimal("123")) == 123 and isinstance(as_number(Decimal("123")), int)
    assert as_number(Decimal("1.5")) == 1.5
    assert as_number(None) is None
