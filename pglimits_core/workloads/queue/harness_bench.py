"""``pglimits bench harness``: is the Python harness the limit? Compare it with the C tools.

The same statement, the same concurrency, the same server, the same queue state, one after the
other in one invocation: Postgres SKIP LOCKED delete-mode through our load driver vs
``pgbench -f`` (custom script); Redis LMOVE through our driver vs ``redis-benchmark``. Prints
both rates and their ratio. The queue is refilled and vacuumed before each side, because dead
tuples at the front of the index slow the same SQL several-fold (MEASURING.md).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg

from pglimits_core.errors import PGLimitsError
from pglimits_core.servers import pg_install
from pglimits_core.servers.base import Endpoint
from pglimits_core.studies.calibration import closed_loop_rate
from pglimits_core.studies.noop_ops import PostgresOp, RedisOp
from pglimits_core.workloads.queue.systems.postgres_skiplocked import (
    DELETE_CLAIM_SQL,
    SCHEMA_SQL,
    TABLE,
)

PAYLOAD_BYTES = 256
REDIS_LIST = "bench:rotate"


def delete_mode_sql(batch: int) -> str:
    """The queue study's delete-mode claim (claim-and-delete in one statement), batch inlined
    so pgbench runs the very statement the study's adapter runs."""
    return DELETE_CLAIM_SQL.replace("%s", str(int(batch)))


@dataclass
class Comparison:
    what: str
    clients: int
    harness_per_s: float
    tool_per_s: float
    tool: str
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.harness_per_s / self.tool_per_s if self.tool_per_s else float("nan")


class DeleteModeClaim(PostgresOp):
    """One delete-mode claim of ``batch`` jobs per call; items = jobs claimed."""

    name = "claim_delete"

    def __init__(self, url: str, batch: int):
        super().__init__(url)
        self.sql = delete_mode_sql(batch)

    def __call__(self) -> int:
        self.cursor.execute(self.sql, prepare=True)
        return len(self.cursor.fetchall())


class RedisRotate(RedisOp):
    """LMOVE from a list onto itself: never empty, O(1), the same command redis-benchmark runs."""

    name = "lmove"

    def __call__(self) -> None:
        self.conn.lmove(REDIS_LIST, REDIS_LIST, "RIGHT", "LEFT")


def refill_jobs(url: str, jobs: int) -> None:
    """An empty, vacuumed table refilled with ``jobs`` rows: the same state for both sides."""
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in SCHEMA_SQL:
            conn.execute(statement)
        conn.execute(f"TRUNCATE {TABLE}")
        conn.execute(f"INSERT INTO {TABLE} (payload) SELECT convert_to(repeat('x', %s), 'UTF8') "
                     "FROM generate_series(1, %s)", (PAYLOAD_BYTES, jobs))
        conn.execute(f"VACUUM ANALYZE {TABLE}")


def pgbench_rate(endpoint: Endpoint, sql: str, clients: int, duration_s: int) -> float:
    """Transactions/s of ``sql`` as a pgbench custom script (prepared protocol)."""
    install = pg_install.locate_install()
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write(sql + ";\n")
    argv = [install.tool("pgbench"), "-n", "-M", "prepared", "-f", script.name, "-c", str(clients),
            "-j", str(min(clients, 2)), "-T", str(duration_s), "-h", endpoint.host,
            "-p", str(endpoint.port), "-U", "postgres", "pglimits"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=duration_s + 60)
    Path(script.name).unlink(missing_ok=True)
    match = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out.stdout)
    if out.returncode != 0 or not match:
        raise PGLimitsError(f"pgbench failed: {(out.stderr or out.stdout).strip()[-300:]}",
                            "check the Postgres log")
    return float(match.group(1))


def compare_postgres(endpoint: Endpoint, clients: int, duration_s: int, batch: int) -> Comparison:
    jobs = max(200_000, 60_000 * batch * duration_s // 5)  # never drains within the window
    refill_jobs(endpoint.url, jobs)
    harness = closed_loop_rate(DeleteModeClaim(endpoint.url, batch), clients, duration_s,
                               server_pids=endpoint.pids, system=endpoint.system)
    refill_jobs(endpoint.url, jobs)
    tool_tps = pgbench_rate(endpoint, delete_mode_sql(batch), clients, duration_s)
    return Comparison(f"SKIP LOCKED delete-mode, batch {batch} (jobs/s)", clients,
                      harness.items_per_s, tool_tps * batch, "pgbench", _cpu_note(harness))


def _cpu_note(measured) -> str:
    cpu = f"harness clients {measured.client_cpu_pct or 0:.0f}% / server {measured.server_cpu_pct or 0:.0f}% of one core"
    return f"{cpu}; {'CLIENT-BOUND' if measured.client_bound else 'not client-bound'}: {measured.client_bound_reason}"


def redis_benchmark_rate(endpoint: Endpoint, clients: int, requests: int) -> float:
    binary = shutil.which("redis-benchmark")
    if not binary:
        raise PGLimitsError("redis-benchmark is not installed", "apt-get install -y redis-tools")
    argv = [binary, "-h", endpoint.host, "-p", str(endpoint.port), "-c", str(clients),
            "-n", str(requests), "-q", "LMOVE", REDIS_LIST, REDIS_LIST, "RIGHT", "LEFT"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    match = re.search(r"([\d.]+) requests per second", out.stdout)
    if out.returncode != 0 or not match:
        raise PGLimitsError(f"redis-benchmark failed: {out.stderr.strip()[-300:]}", "check the Redis log")
    return float(match.group(1))


def compare_redis(endpoint: Endpoint, clients: int, duration_s: int) -> Comparison:
    import redis

    with redis.Redis.from_url(endpoint.url) as client:
        client.delete(REDIS_LIST)
        client.lpush(REDIS_LIST, *[b"x" * PAYLOAD_BYTES] * 1000)
    harness = closed_loop_rate(RedisRotate(endpoint.url), clients, duration_s,
                               server_pids=endpoint.pids, system=endpoint.system)
    tool = redis_benchmark_rate(endpoint, clients, requests=max(100_000, int(harness.items_per_s * duration_s * 3)))
    return Comparison("Redis LMOVE, unpipelined (ops/s)", clients, harness.items_per_s, tool,
                      "redis-benchmark", _cpu_note(harness))
