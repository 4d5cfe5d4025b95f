"""Starting another server in the same state dir must not cut Postgres off from its data.

Postgres runs as an unprivileged user that reaches its data dir through a traverse-only ACL on
the 0700 state dir; a later chmod of that dir resets the ACL mask and the next checkpoint
PANICs ("could not open file .../global/pg_control: Permission denied"). Seen in a study run.
"""

from __future__ import annotations

import psycopg
import pytest

from pglimits_core.servers.postgres import PostgresServer
from pglimits_core.servers.redis import RedisServer
from pglimits_core.servers.sqlite import SQLiteServer

pytestmark = pytest.mark.integration


def test_postgres_survives_a_checkpoint_after_other_servers_start(isolated_state):
    postgres = PostgresServer(data_dir=isolated_state / "postgres", settings={"shared_buffers": "128MB"})
    endpoint = postgres.start()
    redis = RedisServer(data_dir=isolated_state / "redis")
    try:
        redis.start()
        SQLiteServer(data_dir=isolated_state / "sqlite").start()
        with psycopg.connect(endpoint.url, autocommit=True) as conn:
            conn.execute("CREATE TABLE t AS SELECT generate_series(1, 1000) AS i")
            conn.execute("CHECKPOINT")
        with psycopg.connect(endpoint.url, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 1000
    finally:
        redis.stop()
        postgres.stop()
