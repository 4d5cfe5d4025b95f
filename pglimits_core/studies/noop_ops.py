"""The cheapest real round trip per system: the harness ceiling (SELECT 1, PING, GET /).

A study's figure is only a claim about the server when it is well below what the harness can
do against a no-op on the same box; these operations measure that ceiling.
"""

from __future__ import annotations

import urllib.request


class PostgresNoop:
    name = "select_1"

    def __init__(self, url: str):
        self.url = url

    def open(self) -> None:
        import psycopg

        self.conn = psycopg.connect(self.url, autocommit=True)
        self.cursor = self.conn.cursor()

    def __call__(self) -> None:
        self.cursor.execute("SELECT 1", prepare=True)
        self.cursor.fetchone()

    def close(self) -> None:
        self.conn.close()


class RedisNoop:
    name = "ping"

    def __init__(self, url: str):
        self.url = url

    def open(self) -> None:
        import redis

        self.client = redis.Redis.from_url(self.url)

    def __call__(self) -> None:
        self.client.ping()

    def close(self) -> None:
        self.client.close()


class SQLiteNoop:
    name = "select_1"

    def __init__(self, url: str):
        self.url = url

    def open(self) -> None:
        from pglimits_core.servers.sqlite import connect

        self.conn = connect(self.url)

    def __call__(self) -> None:
        self.conn.execute("SELECT 1").fetchone()

    def close(self) -> None:
        self.conn.close()


class HttpNoop:
    name = "http_get_root"

    def __init__(self, url: str):
        self.url = url

    def open(self) -> None:
        self.opener = urllib.request.build_opener()

    def __call__(self) -> None:
        with self.opener.open(self.url + "/", timeout=5) as response:
            response.read()

    def close(self) -> None:
        pass


NOOP_OPS = {"postgres": PostgresNoop, "redis": RedisNoop, "sqlite": SQLiteNoop,
            "opensearch": HttpNoop, "qdrant": HttpNoop}
