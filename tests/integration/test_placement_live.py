"""Placement, exact CPU and the limit side on real servers.

Under a split placement every server process and thread runs on the server set and the load on
the other, and every record says so (as configured and as seen); the exact window CPU matches
the kernel's own count of the server's processes (a cpuacct cgroup holding only them); a pinned
server under a C tool saturates its set and is called server-limited; a Python load that fills
its own set while the server idles is called load-limited: a floor.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import uuid
from pathlib import Path

import psutil
import pytest

from pglimits_core.load import ClosedLoop, Phase, Role, RunSpec
from pglimits_core.placement import affinity, placed, resolve, thread_ids
from pglimits_core.samplers.exact_cpu import TICKS_PER_S, take_snapshot, tree_pids, window_figures
from pglimits_core.studies.noop_ops import PostgresNoop, RedisNoop
from pglimits_core.studies.runner import Context, run_recorded, run_tool_recorded
from tests.conftest import TEST_ROOT

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="split placement needs 2 CPUs")]

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


@pytest.fixture(scope="module")
def split():
    return resolve("split")


@pytest.fixture(scope="module")
def pinned_servers(split):
    """Postgres and Redis started under the split placement (as ``run_workload`` starts them)."""
    from pglimits_core.servers.postgres import PostgresServer
    from pglimits_core.servers.redis import RedisServer

    root = TEST_ROOT / f"placement-{uuid.uuid4().hex[:8]}"
    servers = [PostgresServer(data_dir=root / "pg", settings={"shared_buffers": "128MB"}),
               RedisServer(data_dir=root / "redis")]
    try:
        with placed(split):
            endpoints = {server.name: server.start() for server in servers}
        yield endpoints
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


def every_thread_affinity(pids) -> set[tuple[int, ...]]:
    return {tuple(affinity(tid)) for pid in tree_pids(pids) for tid in thread_ids(pid) if affinity(tid)}


def manifest_of(recorded) -> dict:
    return json.loads((recorded.path / "manifest.json").read_text())


def test_every_server_thread_runs_on_the_server_set_and_the_study_on_the_load_set(pinned_servers, split):
    import psycopg

    with psycopg.connect(pinned_servers["postgres"].url) as conn:  # a backend forked after start
        conn.execute("SELECT 1")
        seen = every_thread_affinity(pinned_servers["postgres"].pids)
    assert seen == {split.server_cpus}, seen
    assert every_thread_affinity(pinned_servers["redis"].pids) == {split.server_cpus}
    with placed(split):
        assert {tuple(affinity(tid)) for tid in thread_ids(os.getpid())} == {split.load_cpus}
    assert set(os.sched_getaffinity(0)) == set(split.server_cpus) | set(split.load_cpus)  # restored


def test_a_record_carries_both_sets_as_configured_and_as_seen(pinned_servers, split, tmp_path):
    spec = RunSpec(phases=[Phase("warmup", 0.5, warmup=True), Phase("measure", 2.0)], seed=1,
                   roles=[Role("client", PostgresNoop(pinned_servers["postgres"].url), workers=2,
                               loop=ClosedLoop(idle_sleep_s=0))])
    with placed(split):
        ctx = Context({"postgres": pinned_servers["postgres"]}, {}, {}, runs_root=tmp_path)
        recorded = run_recorded(ctx, "placement", "postgres", "noop", "postgres", spec, {})
    manifest = manifest_of(recorded)
    placement = manifest["placement"]
    assert placement["mode"] == "split" and placement["held"] is True
    assert placement["server_cpus"] == list(split.server_cpus) and placement["load_cpus"] == list(split.load_cpus)
    assert placement["server_affinity"] == [list(split.server_cpus)]
    assert placement["load_affinity"] == [list(split.load_cpus)]
    exact = manifest["cpu"]["exact"]
    assert 1.9 <= exact["window_s"] <= 2.2, exact
    assert exact["server_cpu_s"] > 0 and exact["load_cpu_s"] > 0, exact
    assert manifest["limit"]["side"] in ("server", "load", "neither"), manifest["limit"]


def short_connection_load(url: str, seconds: float) -> int:
    """Connections opened and closed in a row: backends that start and exit inside the window
    (their CPU reaches the kernel's count only through the postmaster that reaps them)."""
    import psycopg

    done, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SELECT sum(g) FROM generate_series(1, 200000) g").fetchone()
        done += 1
    return done


@pytest.fixture
def cgroup_of(pinned_servers):
    """A cpuacct cgroup holding exactly the Postgres server's processes (v1 hierarchy)."""
    if not os.access(CPUACCT, os.W_OK):
        pytest.skip(f"no writable cpuacct cgroup at {CPUACCT}: the kernel's count cannot be isolated here")
    group = CPUACCT / f"pglimits-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        for pid in tree_pids(pinned_servers["postgres"].pids):
            (group / "cgroup.procs").write_text(str(pid))
        yield group
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):  # a backend that exited meanwhile
                (CPUACCT / "cgroup.procs").write_text(pid)
        group.rmdir()


def test_the_exact_window_cpu_matches_the_kernels_count_for_the_server(pinned_servers, split, cgroup_of):
    url, pids = pinned_servers["postgres"].url, pinned_servers["postgres"].pids
    sides = lambda: {"server": tree_pids(pids)}  # noqa: E731
    kernel_before, start = int((cgroup_of / "cpuacct.usage").read_text()), take_snapshot(sides())
    connections = short_connection_load(url, 4.0)
    end, kernel_after = take_snapshot(sides()), int((cgroup_of / "cpuacct.usage").read_text())
    exact = window_figures(start, end, split.describe())
    kernel_s = (kernel_after - kernel_before) / 1e9
    # every backend of the window has exited: only the postmaster's reaped count can hold them
    assert connections > 10 and start.sides["server"].keys() & end.sides["server"].keys()
    tolerance = 0.03 * kernel_s + 2 * len(end.sides["server"]) / TICKS_PER_S
    print(f"exact {exact['server_cpu_s']:.3f} s, kernel {kernel_s:.3f} s, {connections} connections")
    assert abs(exact["server_cpu_s"] - kernel_s) <= tolerance, (exact["server_cpu_s"], kernel_s, connections)


def test_a_pinned_server_under_a_c_tool_saturates_its_set_and_is_server_limited(pinned_servers, split, tmp_path):
    from pglimits_core.load.tools import PgbenchLoad

    load = PgbenchLoad(pinned_servers["postgres"].url, "SELECT sum(g) FROM generate_series(1, 20000) g;\n",
                       clients=4, duration_s=3, warmup_s=1)
    with placed(split):
        ctx = Context({"postgres": pinned_servers["postgres"]}, {}, {}, runs_root=tmp_path)
        recorded = run_tool_recorded(ctx, "placement", "postgres", "pgbench", "postgres", load, {})
    manifest = manifest_of(recorded)
    exact, limit = manifest["cpu"]["exact"], manifest["limit"]
    assert recorded.status == "complete", recorded.error
    assert exact["server_set_busy"] >= 0.85 and exact["server_cores_used"] >= 0.8, exact
    assert limit["side"] == "server", limit
    assert manifest["placement"]["held"] is True, manifest["placement"]


def test_a_python_load_that_fills_its_set_beside_an_idle_redis_is_a_floor(pinned_servers, split, tmp_path):
    spec = RunSpec(phases=[Phase("warmup", 0.5, warmup=True), Phase("measure", 3.0)], seed=1,
                   roles=[Role("client", RedisNoop(pinned_servers["redis"].url), workers=2,
                               loop=ClosedLoop(idle_sleep_s=0))])
    with placed(split):
        ctx = Context({"redis": pinned_servers["redis"]}, {}, {}, runs_root=tmp_path)
        recorded = run_recorded(ctx, "placement", "redis", "ping", "redis", spec, {})
    manifest = manifest_of(recorded)
    exact, limit = manifest["cpu"]["exact"], manifest["limit"]
    assert exact["load_set_busy"] >= 0.85 and exact["server_cores_used"] < 0.6, exact
    assert limit["side"] == "load" and "floor" in limit["reason"], limit
    # nothing of the load ran on the server's set
    assert all(set(s) <= set(split.load_cpus) for s in manifest["placement"]["load_affinity"])
    assert psutil.Process().cpu_affinity() == sorted(set(split.server_cpus) | set(split.load_cpus))
