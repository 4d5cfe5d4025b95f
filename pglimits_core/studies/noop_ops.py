"""The cheapest real round trip per system: the harness ceiling (SELECT 1, PING, GET /).

A study's figure is only a claim about the server when it is well below what the harness can
do against a no-op on the same box; these operations measure that ceiling. The connection
bases (``PostgresOp``, ``RedisOp``) are shared with other one-statement operations.
"""

from __future__ import annotations

import urllib.request


class ConnectedOp:
    """A load operation holding one connection, opened in the worker process (see load.operation)."""

    name = "op"

    def __init__(self, url: str):
        self.url = url

    def open(self) -> None:
        self.conn = self.connect()

    def connect(self):
        raise NotImplementedError

    def close(self) -> None:
        self.conn.close()


class PostgresOp(ConnectedOp):
    def connect(self):
        import psycopg

        conn = psycopg.connect(self.url, autocommit=True)
        self.cursor = conn.cursor()
        return conn


class RedisOp(ConnectedOp):
    def connect(self):
        import redis

        return redis.Redis.from_url(self.url)


class PostgresNoop(PostgresOp):
    name = "select_1"

    def __call__(self) -> None:
        self.cursor.execute("SELECT 1", prepare=True)
        self.cursor.fetchone()


class RedisNoop(RedisOp):
    name = "ping"

    def __call__(self) -> None:
        self.conn.ping()


class SQLiteNoop(ConnectedOp):
    name = "select_1"

    def connect(self):
        from pglimits_core.servers.sqlite import connect

        return connect(self.url)

    def __call__(self) -> None:
        self.conn.execute("SELECT 1").fetchone()


class HttpNoop(ConnectedOp):
    name = "http_get_root"

    def connect(self):
        return urllib.request.build_opener()

    def __call__(self) -> None:
        with self.conn.open(self.url + "/", timeout=5) as response:
            response.read()

    def close(self) -> None:
        pass  # an opener holds no connection between requests
