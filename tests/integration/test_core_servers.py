"""PostgreSQL 16, Redis 7 and SQLite, started for real, used for real, and gone afterwards."""

from __future__ import annotations

import psycopg
import pytest
import redis

from pglimits_core.errors import PGLimitsError
from pglimits_core.servers import sqlite as sqlite_mod
from pglimits_core.servers.postgres import PostgresServer
from pglimits_core.servers.redis import RedisServer
from pglimits_core.servers.sqlite import SQLiteServer
from tests.conftest import processes_using, server_processes

pytestmark = pytest.mark.integration


def test_postgres_vector_hnsw_and_pgmq_then_no_process_left(server_dir):
    server = PostgresServer(data_dir=server_dir, settings={"shared_buffers": "128MB"})
    endpoint = server.start()
    try:
        assert endpoint.host == "127.0.0.1" and "127.0.0.1" in endpoint.url
        with psycopg.connect(endpoint.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("CREATE TABLE items (id int PRIMARY KEY, v vector(2))")
            conn.execute("INSERT INTO items SELECT i, ARRAY[i, i * 2]::real[]::vector FROM generate_series(1, 50) i")
            conn.execute("CREATE INDEX items_v_idx ON items USING hnsw (v vector_l2_ops) WITH (m = 16, ef_construction = 64)")
            conn.execute("SET enable_seqscan = off")
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN SELECT id FROM items ORDER BY v <-> '[10,20]' LIMIT 3"))
            nearest = conn.execute("SELECT id FROM items ORDER BY v <-> '[10,20]' LIMIT 1").fetchone()[0]
            conn.execute("SELECT pgmq.create('jobs')")
            sent = conn.execute("""SELECT pgmq.send('jobs', '{"n": 7}')""").fetchone()[0]
            read = conn.execute("SELECT msg_id, message FROM pgmq.read('jobs', 30, 1)").fetchone()
        assert "index scan using items_v_idx" in plan.lower() and nearest == 10
        assert read == (sent, {"n": 7})
        described = server.describe()
        assert described["version"].startswith("16.2")
        assert described["settings"]["jit"] == "off"
        assert described["settings"]["autovacuum_naptime"] == "10s"
        assert described["settings"]["extensions"]["vector"] == "0.6.2"
        assert described["settings"]["extensions"]["pgmq"] == "1.13.0"
        assert described["settings"]["wal_compression"] in {"lz4", "pglz"}
        assert server.storage_bytes() > 10_000_000
    finally:
        server.stop()
    assert processes_using(server_dir) == []
    assert not PostgresServer.probe(endpoint.url)


def test_postgres_that_dies_during_startup_shows_its_log(server_dir):
    server = PostgresServer(data_dir=server_dir, settings={"shared_buffers": "not-a-size"})
    with pytest.raises(PGLimitsError, match="shared_buffers"):
        server.start()
    assert processes_using(server_dir) == []


def test_redis_reliable_queue_commands_then_no_process_left(server_dir):
    server = RedisServer(data_dir=server_dir)
    endpoint = server.start()
    try:
        client = redis.Redis.from_url(endpoint.url)
        client.lpush("q", b"a", b"b")
        moved = client.lmove("q", "processing", "RIGHT", "LEFT")
        assert moved == b"a" and client.lrem("processing", 1, moved) == 1
        described = server.describe()
        assert described["version"].startswith("7.")
        assert described["settings"]["save"] == "" and described["settings"]["appendonly"] == "no"
        assert described["settings"]["bind"] == "127.0.0.1"
        client.close()
        started = server_processes(endpoint.pids)
    finally:
        server.stop()
    assert started and server_processes(endpoint.pids) == []


def test_sqlite_seed_claim_statement_in_wal_mode(server_dir):
    server = SQLiteServer(data_dir=server_dir)
    endpoint = server.start()
    conn = sqlite_mod.connect(endpoint.url)
    conn.execute("""CREATE TABLE queue (id INTEGER PRIMARY KEY, payload BLOB NOT NULL,
        visible_at INTEGER NOT NULL, claimed_by TEXT, claimed_at INTEGER,
        attempts INTEGER NOT NULL DEFAULT 0, enqueued_at INTEGER NOT NULL)""")
    conn.execute("CREATE INDEX queue_visible ON queue(visible_at) WHERE claimed_by IS NULL")
    conn.executemany("INSERT INTO queue (payload, visible_at, enqueued_at) VALUES (?, ?, ?)",
                     [(b"p1", 1, 1), (b"p2", 2, 2)])
    claimed = conn.execute("""UPDATE queue SET claimed_by = ?, claimed_at = ?, attempts = attempts + 1
        WHERE id = (SELECT id FROM queue WHERE claimed_by IS NULL AND visible_at <= ?
                    ORDER BY visible_at LIMIT 1)
        RETURNING id, payload, attempts""", ("w1", 10, 10)).fetchone()
    conn.close()
    assert claimed == (1, b"p1", 1)
    settings = server.describe()["settings"]
    assert settings["journal_mode"] == "wal" and settings["synchronous"] == 1  # NORMAL
    server.stop()
