"""The interference control against the churn on a real Postgres the project starts, at a
profile's rate, backlog and clients: the control's three autocommitted INSERTs per job commit as
often as the churn (each commit one WAL flush), write WAL and cost the server CPU of the same
order, and leave no dead tuple, while the churn leaves two per job. Run as a script
(``python tests/integration/workloads/interference/test_interference_control.py full``) it prints the comparison at the
full profile's sizes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import psycopg
import pytest

from pglimits_core.config import PROJECT_ROOT
from pglimits_core.load.tools.pgbench import connection_args, parse_summary, pgbench_binary
from pglimits_core.profiles import load_profile
from pglimits_core.workloads.interference import churn
from pglimits_core.workloads.interference.start_state import flush_statistics

pytestmark = pytest.mark.integration

#: seconds of churn or control per measurement (CPU: the first and last 1.5 s left out)
SECONDS = 10
#: the churn's rate here: the test profile's levels are shares of a capacity measured in the run,
#: so this comparison states its own (the rate the test profile stated before)
RATE = 200
#: how far the control's commits per job may be from the churn's (both commit three times per job)
COMMIT_TOLERANCE = 0.2
#: how far apart WAL bytes and server CPU per job may be in this test (the script's runs at the
#: test and full sizes were within about a fifth; the shared box moves CPU by tens of percent)
WAL_FACTOR = 1.5
CPU_FACTOR = 2.0

COUNTERS_SQL = """
SELECT (SELECT wal_records FROM pg_stat_wal), (SELECT wal_fpi FROM pg_stat_wal),
       pg_current_wal_lsn() - '0/0'::pg_lsn,
       (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())
"""
TABLE_SQL = ("SELECT relname, n_dead_tup, n_tup_upd, n_tup_del, n_tup_ins FROM pg_stat_user_tables "
             "WHERE relname = ANY(%s) ORDER BY relname")


def server_cpu_s(root: int) -> dict[int, float]:
    """CPU seconds (user + system) of the postmaster and every child, by pid."""
    found = {}
    try:
        parent = psutil.Process(root)
        for proc in [parent, *parent.children(recursive=True)]:
            try:
                times = proc.cpu_times()
                found[proc.pid] = times.user + times.system
            except psutil.NoSuchProcess:
                continue
    except psutil.NoSuchProcess:
        pass
    return found


def counters(url: str) -> tuple[float, ...]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        return tuple(float(v) for v in conn.execute(COUNTERS_SQL).fetchone())


def tables_seen(url: str) -> dict[str, tuple[int, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        flush_statistics(conn)
        return {row[0]: row[1:] for row in conn.execute(TABLE_SQL, (list(churn.QUEUE_TABLES),)).fetchall()}


def measure(url: str, postmaster: int, script: str, section) -> dict[str, float]:
    """Run ``script`` at the profile's rate for ``SECONDS``: per second over the whole run, WAL
    bytes, WAL records, full-page images and commits (the server's counters before it started and
    after every backend left); server CPU (% of one core) over the middle seconds."""
    with psycopg.connect(url, autocommit=True) as conn:
        churn.reset_queue(conn, section.backlog, section.payload_bytes)
        conn.execute("CHECKPOINT")  # both start right after a checkpoint: the same full-page images
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "script.sql"
        path.write_text(script)
        connection, env = connection_args(url)
        threads = min(section.churn_clients, os.cpu_count() or 1)  # as the study's PgbenchLoad runs it
        argv = [pgbench_binary(), "-n", "-M", "prepared", "-f", str(path), "-c", str(section.churn_clients),
                "-j", str(threads), "-T", str(SECONDS), "-R", f"{RATE:g}", *connection]
        first = counters(url)
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, **env}) as tool:
            time.sleep(1.5)
            cpu0, t0 = server_cpu_s(postmaster), time.monotonic()
            time.sleep(SECONDS - 3)
            cpu1, t1 = server_cpu_s(postmaster), time.monotonic()
            output = tool.communicate()[0]
    assert tool.returncode == 0, output
    time.sleep(1.0)  # the exited backends' last counters reach the shared statistics
    last = counters(url)
    cpu = sum(cpu1[pid] - cpu0[pid] for pid in cpu1 if pid in cpu0)
    names = ("wal_records_per_s", "wal_fpi_per_s", "wal_bytes_per_s", "commits_per_s")
    found = {name: (b - a) / SECONDS for name, a, b in zip(names, first, last, strict=True)}
    jobs = parse_summary(output)["transactions"] / SECONDS
    return {"server_cpu_pct": 100 * cpu / (t1 - t0), **found, "jobs_per_s": jobs, "tables": tables_seen(url)}


def per_job(row: dict) -> dict[str, float]:
    """Server CPU (ms), WAL bytes and commits per job: a run that fell behind its rate (the first
    on a fresh cluster creates its WAL files) compares like one that did not."""
    jobs = row["jobs_per_s"]
    return {"cpu_ms_per_job": 10 * row["server_cpu_pct"] / jobs, "wal_bytes_per_job": row["wal_bytes_per_s"] / jobs,
            "commits_per_job": row["commits_per_s"] / jobs}


def compare(url: str, postmaster: int, section) -> dict[str, dict]:
    return {"churn": measure(url, postmaster, churn.churn_script(section.payload_bytes), section),
            "control": measure(url, postmaster, churn.control_script(section.payload_bytes), section)}


def printed(found: dict[str, dict]) -> str:
    keys = ("jobs_per_s", "server_cpu_pct", "wal_bytes_per_s", "wal_records_per_s", "wal_fpi_per_s", "commits_per_s")
    lines = [f"{'':8} " + " ".join(f"{k:>18}" for k in keys)]
    for name, row in found.items():
        lines.append(f"{name:8} " + " ".join(f"{row[k]:18.1f}" for k in keys) + f"  per job: {per_job(row)}")
        lines += [f"    {table}: dead {seen[0]}, updated {seen[1]}, deleted {seen[2]}, inserted {seen[3]}"
                  for table, seen in row["tables"].items()]
    ratio = {k: found["control"][k] / found["churn"][k] for k in keys if found["churn"][k]}
    return "\n".join([*lines, "control / churn: " + ", ".join(f"{k} {v:.2f}" for k, v in ratio.items())])


def started_server():
    from pglimits_core.servers.postgres import PostgresServer

    data_dir = PROJECT_ROOT / ".pglimits" / "test" / f"interference-control-{uuid.uuid4().hex[:12]}"
    return PostgresServer(data_dir=data_dir, settings={"shared_buffers": "512MB"})


def run(profile_name: str) -> dict[str, dict]:
    server = started_server()
    try:
        endpoint = server.start()
        return compare(endpoint.url, endpoint.pids[0], load_profile(profile_name).section("interference"))
    finally:
        server.stop()
        shutil.rmtree(server.data_dir, ignore_errors=True)


def test_the_control_matches_the_churns_commits_without_dead_tuples():
    found = run("test")
    print(printed(found))
    churned, control = per_job(found["churn"]), per_job(found["control"])
    assert abs(control["commits_per_job"] / churned["commits_per_job"] - 1) <= COMMIT_TOLERANCE, printed(found)
    assert 1 / WAL_FACTOR <= control["wal_bytes_per_job"] / churned["wal_bytes_per_job"] <= WAL_FACTOR, printed(found)
    assert 1 / CPU_FACTOR <= control["cpu_ms_per_job"] / churned["cpu_ms_per_job"] <= CPU_FACTOR, printed(found)
    # the churn makes two dead tuples per job; the control changes and removes nothing
    tables = found["churn"]["tables"]
    assert tables[churn.QUEUE_TABLE][1] > 0 and tables[churn.QUEUE_TABLE][2] > 0
    seen = found["control"]["tables"]
    assert all(seen[table][:3] == (0, 0, 0) for table in churn.QUEUE_TABLES if table != churn.QUEUE_TABLE)
    assert all(seen[table][3] > 0 for table in churn.APPEND_ONLY_TABLES)


if __name__ == "__main__":
    print(printed(run(sys.argv[1] if len(sys.argv) > 1 else "test")))
