"""The samplers against real servers: writes show up as WAL bytes, commands as ops/s, and the
host sampler tells client CPU from server CPU."""

import os
import shutil
import time
import uuid

import psycopg
import pytest
import redis

from pglimits_core.config import PROJECT_ROOT
from pglimits_core.samplers import (
    HostSampler,
    PostgresSampler,
    RedisSampler,
    SamplerSet,
    describe_host,
)

pytestmark = pytest.mark.integration

SAMPLE_SECONDS = 3.2  # at least three one-second intervals, so at least two rates
TABLE = "sampler_probe"
CORES = os.cpu_count() or 1


def unique_dir(system):
    return PROJECT_ROOT / ".pglimits" / "test" / f"samplers-{system}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def postgres():
    from pglimits_core.servers.postgres import PostgresServer

    server = PostgresServer(data_dir=unique_dir("postgres"))
    try:
        yield server.start()
    finally:
        server.stop()
        shutil.rmtree(server.data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def redis_endpoint():
    from pglimits_core.servers.redis import RedisServer

    server = RedisServer(data_dir=unique_dir("redis"))
    try:
        yield server.start()
    finally:
        server.stop()
        shutil.rmtree(server.data_dir, ignore_errors=True)


def write_postgres_for(dsn, seconds):
    """Small committed inserts until ``seconds`` pass (throttled: the box is shared)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id bigserial PRIMARY KEY, body text)")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            conn.execute(
                f"INSERT INTO {TABLE} (body) SELECT repeat('x', 200) FROM generate_series(1, 50)"
            )
            time.sleep(0.005)


def write_redis_for(url, seconds):
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        client.lpush("sampler:probe", *range(20))
        client.ltrim("sampler:probe", 0, 999)
    client.close()


def server_pids_of(endpoint):
    return lambda: endpoint.pids


def this_process():
    return [os.getpid()]


def steady(frame, sampler, column):
    rows = frame[frame["sampler"] == sampler]
    return rows[column].dropna()


def test_postgres_and_host_samplers_see_writes(postgres):
    pg = PostgresSampler(postgres.url, tables=[TABLE])
    host = HostSampler(this_process, server_pids_of(postgres))
    with SamplerSet([pg, host]) as samplers:
        write_postgres_for(postgres.url, SAMPLE_SECONDS)
    frame = samplers.dataframe()
    assert samplers.errors() == {"postgres": 0, "host": 0}
    assert (steady(frame, "postgres", "wal_bytes_per_s") > 0).any()
    assert (steady(frame, "postgres", "xact_commit_per_s") > 0).any()
    assert steady(frame, "postgres", f"{TABLE}.total_bytes").iloc[-1] > 0
    assert (steady(frame, "postgres", "oldest_xmin_age_xacts") >= 0).all()
    assert steady(frame, "postgres", f"{TABLE}.n_live_tup").iloc[-1] > 0
    assert (steady(frame, "postgres", "notification_queue_usage") == 0).all()

    server_cpu = steady(frame, "host", "server_cpu_pct")
    client_cpu = steady(frame, "host", "client_cpu_pct")
    assert len(server_cpu) >= 2 and (server_cpu > 0).any()
    assert (client_cpu > 0).any()
    assert (server_cpu <= 100 * CORES * 1.1).all() and (client_cpu <= 100 * CORES * 1.1).all()
    assert (steady(frame, "host", "server_processes") > 1).all()  # postmaster + children
    assert (steady(frame, "host", "server_rss_bytes") > 0).all()
    assert (steady(frame, "host", "server_write_chars_per_s") > 0).any()  # WAL writes


def test_redis_sampler_sees_commands(redis_endpoint):
    sampler = RedisSampler(redis_endpoint.url, commands=["lpush", "ltrim"])
    with SamplerSet([sampler]) as samplers:
        write_redis_for(redis_endpoint.url, SAMPLE_SECONDS)
    frame = samplers.dataframe()
    assert samplers.errors() == {"redis": 0}
    assert (steady(frame, "redis", "total_commands_processed_per_s") > 0).any()
    assert (steady(frame, "redis", "cmd_lpush_calls_per_s") > 0).any()
    assert (steady(frame, "redis", "cmd_lpush_usec_per_call") > 0).any()
    assert (steady(frame, "redis", "used_memory") > 0).all()
    assert steady(frame, "redis", "keys_total").iloc[-1] >= 1


def test_describe_host_on_the_data_disk():
    facts = describe_host(PROJECT_ROOT / ".pglimits")
    assert facts["filesystem"]["free_bytes"] > 0
    assert facts["logical_cores"] == CORES


def test_held_snapshot_shows_as_xmin_age_and_sampling_is_cheap(postgres):
    pg = PostgresSampler(postgres.url)  # no table filter: every user table
    with psycopg.connect(postgres.url) as holder:
        holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT 1")  # takes the snapshot and keeps it until rollback
        with SamplerSet([pg]) as samplers:
            write_postgres_for(postgres.url, 2.2)
        holder.rollback()
    frame = samplers.dataframe()
    assert samplers.errors() == {"postgres": 0}
    assert steady(frame, "postgres", "oldest_xmin_age_xacts").max() > 10
    assert f"{TABLE}.n_dead_tup" in frame.columns

    started = time.perf_counter()
    for second in range(5):
        pg.sample(1000.0 + second)
    pg.close()
    assert (time.perf_counter() - started) / 5 < 0.1  # seconds per sample: well under budget
