"""Who counts as client and what a server's CPU is judged against.

The load driver publishes its worker pids while a run is in progress (real worker processes
here, with a trivial operation); the runner reads each server kind's CPU facts from its
registered class and fails a run whose CPU figures exceed the box.
"""

import os
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from pglimits_core.load import ClosedLoop, Phase, Role, RunSpec, run_load
from pglimits_core.load.driver import active_worker_pids
from pglimits_core.samplers.classify import NOT_APPLICABLE_IN_CLIENT
from pglimits_core.studies.runner import cpu_verdict, with_cpu_check

IDLE = ClosedLoop(idle_sleep_s=0.01)


class PidNote:
    """Writes its worker's pid to a file on open; then does nothing, cheaply."""

    name = "noop"

    def __init__(self, directory: Path):
        self.directory = directory

    def open(self):
        (self.directory / str(os.getpid())).touch()

    def __call__(self):
        return 0

    def close(self):
        pass


def poll_pids(seen: set, stop: threading.Event) -> None:
    while not stop.is_set():
        seen.update(active_worker_pids())
        time.sleep(0.02)


def test_the_driver_publishes_exactly_its_workers_while_the_run_is_in_progress(tmp_path):
    spec = RunSpec(phases=[Phase("measure", 0.6)], seed=1, start_method="fork",
                   roles=[Role("a", PidNote(tmp_path), workers=2, loop=IDLE),
                          Role("b", PidNote(tmp_path), workers=1, loop=IDLE)])
    seen: set[int] = set()
    stop = threading.Event()
    poller = threading.Thread(target=poll_pids, args=(seen, stop))
    assert active_worker_pids() == []
    poller.start()
    try:
        result = run_load(spec)
    finally:
        stop.set()
        poller.join()
    assert result.status == "complete", result.error
    workers = {int(path.name) for path in tmp_path.iterdir()}
    assert len(workers) == 3 and os.getpid() not in workers
    assert seen == workers
    assert active_worker_pids() == []  # cleared once the workers are reaped


def frame(client, server):
    return pd.DataFrame({"sampler": "host", "client_cpu_pct": client, "server_cpu_pct": server})


def test_redis_is_judged_against_one_core_from_its_server_class(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    busy_redis = frame([None, 70.0, 70.0, 70.0], [None, 95.0, 95.0, 95.0])
    redis = cpu_verdict("redis", busy_redis, workers=1)
    assert redis["client_bound_reason"].startswith("server-bound")
    assert "idle CPU" in cpu_verdict("postgres", busy_redis, workers=1)["client_bound_reason"]


def test_sqlite_gets_no_client_bound_verdict(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    verdict = cpu_verdict("sqlite", frame([None, 190.0, 190.0], [None, 0.0, 0.0]), workers=4)
    assert verdict["client_bound"] is None
    assert verdict["client_bound_reason"] == NOT_APPLICABLE_IN_CLIENT


@pytest.mark.parametrize("status, error", [("complete", None), ("failed", "consumer[0]: boom")])
def test_impossible_cpu_fails_the_run_and_keeps_an_earlier_error(status, error):
    cpu = {"client_plus_server_cpu_pct_median": 330.0, "client_cpu_pct_median": 200.0,
           "server_cpu_pct_median": 130.0, "cores": 2}
    new_status, new_error = with_cpu_check(status, error, cpu)
    assert new_status == "failed"
    assert "sampler check failed" in new_error and "330%" in new_error
    assert error is None or new_error.startswith(error)


def test_possible_cpu_leaves_the_status_alone():
    cpu = {"client_plus_server_cpu_pct_median": 150.0, "cores": 2}
    assert with_cpu_check("complete", None, cpu) == ("complete", None)
    assert with_cpu_check("failed", "x", cpu) == ("failed", "x")


class ImpossibleHost:
    """A host sampler whose figures no 2-core box can produce (client and server overlap)."""

    name = "host"

    def sample(self, now):
        return {"client_cpu_pct": 190.0, "server_cpu_pct": 130.0}

    def close(self):
        pass


def test_a_recorded_run_with_impossible_cpu_is_written_as_failed(tmp_path, monkeypatch):
    import json

    from pglimits_core.servers.base import Endpoint
    from pglimits_core.studies import runner

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(runner, "samplers_for", lambda *args: [ImpossibleHost()])
    ctx = runner.Context({"postgres": Endpoint("postgres", "postgresql://unused")}, {}, {},
                         runs_root=tmp_path / "runs")
    # 2.2 s: the CPU figures come from whole sampler seconds inside the measured window only
    spec = RunSpec(phases=[Phase("measure", 2.2)], seed=1, start_method="fork",
                   roles=[Role("a", PidNote(tmp_path), workers=1, loop=IDLE)])
    recorded = runner.run_recorded(ctx, "unit", "fake", "v", "postgres", spec, params={})
    manifest = json.loads((recorded.path / "manifest.json").read_text())
    assert recorded.status == manifest["status"] == "failed"
    assert recorded.error == manifest["error"]
    assert "sampler check failed" in manifest["error"] and "320%" in manifest["error"]
    assert manifest["cpu"]["client_plus_server_cpu_pct_median"] == pytest.approx(320.0)
    start, end = manifest["cpu"]["window_t_s"]
    assert 0 < start < end and end - start == pytest.approx(2.2, abs=0.01)
    assert manifest["cpu"]["window_seconds"] >= 1
