"""The study's own process (the harness) is a third CPU series, counted with the client.

A fake process reader stands in for psutil: the harness is sampled apart from the workers and
the server and never twice; the verdict counts it with the client on a saturated box, so a box
the study itself saturated is not called a busy neighbour; "other" CPU excludes it; records
written before it was sampled read as before.
"""

import os

import pandas as pd
import pytest

from pglimits_core.analysis.runs import box_saturated, entry_rows, other_cpu_pct
from pglimits_core.samplers.classify import (
    FOREIGN_CPU_PCT,
    classify_client_bound,
    host_frame_verdict,
    window_verdict,
)
from pglimits_core.samplers.host import HostSampler, ProcessSnapshot, SystemSnapshot, study_process

HARNESS = 99


class FakeReader:
    """Processes as ``pid -> cpu_seconds``; the server (20) has one child (21)."""

    def __init__(self, processes):
        self.processes = dict(processes)
        self.system = SystemSnapshot(0.0, 0.0, 0, 0)

    def with_children(self, pids):
        return {p for pid in pids if pid in self.processes for p in (pid, *([21] if pid == 20 else []))}

    def read_process(self, pid):
        if pid not in self.processes:
            return None
        return ProcessSnapshot((pid, 1.0), self.processes[pid], 100, None)

    def read_system(self):
        return self.system


def two_samples(reader, client_pids, harness_pids=lambda: [HARNESS], grow=None):
    sampler = HostSampler(lambda: client_pids, lambda: [20], reader=reader, harness_pids=harness_pids)
    first = sampler.sample(0.0)
    for pid, seconds in (grow or {}).items():
        reader.processes[pid] += seconds
    return first, sampler.sample(1.0)


def test_the_harness_process_is_its_own_series_neither_client_nor_server():
    reader = FakeReader({10: 1.0, 20: 5.0, 21: 1.0, HARNESS: 3.0})
    first, second = two_samples(reader, [10], grow={10: 0.5, 20: 0.25, 21: 0.25, HARNESS: 0.3})
    assert first["harness_cpu_pct"] is None  # like every series: nothing before the second sample
    assert second["client_cpu_pct"] == pytest.approx(50.0)
    assert second["server_cpu_pct"] == pytest.approx(50.0)
    assert second["harness_cpu_pct"] == pytest.approx(30.0)


def test_a_harness_that_is_also_a_client_is_counted_once_as_client():
    # a load run inside the study's own process: its pid is the client's, not the harness's
    reader = FakeReader({HARNESS: 3.0, 20: 5.0})
    _, second = two_samples(reader, [HARNESS], grow={HARNESS: 0.4})
    assert second["client_cpu_pct"] == pytest.approx(40.0)
    assert second["harness_cpu_pct"] is None


def test_an_unreadable_or_absent_harness_is_no_figure_not_zero():
    reader = FakeReader({10: 1.0, 20: 5.0})
    assert two_samples(reader, [10])[1]["harness_cpu_pct"] is None
    assert two_samples(reader, [10], harness_pids=None)[1]["harness_cpu_pct"] is None


def test_the_default_harness_is_the_process_running_the_study():
    assert study_process() == [os.getpid()]


def steady(level, seconds=8):
    return [None, *([level] * seconds)]


def test_a_box_saturated_by_client_harness_and_server_is_the_studys_own_doing():
    # workers 60, harness 40, server 60: 160 % of one core; the machine 175 %; 15 % outside
    client, harness, server, machine = steady(60.0), steady(40.0), steady(60.0), steady(175.0)
    bound, reason = classify_client_bound(client, server, cores=2, machine_cpu_pct_series=machine,
                                          harness_cpu_pct_series=harness)
    assert bound is True and "client holds most" in reason and "harness process 40%" in reason
    # without the harness series the same seconds cannot be told apart from a neighbour's
    bound, reason = classify_client_bound(client, server, cores=2, machine_cpu_pct_series=machine)
    assert bound is None and "CPU outside client and server: 55% of one core" in reason


def test_a_saturated_box_counts_the_harness_with_the_client_for_the_majority():
    # workers 30 + harness 60 against a server at 90: the client side holds half the busy CPU
    bound, reason = classify_client_bound(steady(30.0), steady(90.0), cores=2,
                                          harness_cpu_pct_series=steady(60.0))
    assert bound is True and "holds most" in reason
    bound, _ = classify_client_bound(steady(30.0), steady(90.0), cores=2, harness_cpu_pct_series=steady(10.0))
    assert bound is False  # 130 %: idle CPU


def test_cpu_outside_all_three_is_named_as_such_not_as_a_neighbour():
    outside = FOREIGN_CPU_PCT + 30.0
    machine = steady(60.0 + 20.0 + 60.0 + outside)
    bound, reason = classify_client_bound(steady(60.0), steady(60.0), cores=2, machine_cpu_pct_series=machine,
                                          harness_cpu_pct_series=steady(20.0))
    assert bound is None and reason.startswith("cannot tell")
    assert f"CPU outside client (workers and harness) and server: {outside:.0f}% of one core" in reason


def host_rows(harness=True, other=10.0, cores=2):
    """Host-sampler rows: client 60, server 70, harness 30 (when sampled), and ``other`` besides."""
    rows = []
    for second in range(6):
        row = {"t": second + 0.01, "sampler": "host", "client_cpu_pct": None if second == 0 else 60.0,
               "server_cpu_pct": None if second == 0 else 70.0,
               "system_cpu_pct": None if second == 0 else (60.0 + 70.0 + 30.0 + other) / cores}
        if harness:
            row["harness_cpu_pct"] = None if second == 0 else 30.0
        rows.append(row)
    return pd.DataFrame(rows)


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def test_the_run_record_carries_the_harness_median_and_other_without_it(two_cores):
    cpu = host_frame_verdict(host_rows(), client_workers=4)["cpu"]
    assert cpu["harness_cpu_pct_median"] == pytest.approx(30.0)
    assert cpu["other_cpu_pct_median"] == pytest.approx(10.0)
    assert cpu["client_plus_server_over_busy_pct_median"] == pytest.approx(-40.0)  # unchanged meaning
    windowed = window_verdict(host_rows(), (0.5, 6.5), client_workers=4)["cpu"]
    assert windowed["harness_cpu_pct_median"] == pytest.approx(30.0)


def test_frames_without_the_harness_series_keep_the_old_figures(two_cores):
    verdict = host_frame_verdict(host_rows(harness=False), client_workers=4)
    assert verdict["cpu"]["harness_cpu_pct_median"] is None and verdict["cpu"]["other_cpu_pct_median"] is None
    assert verdict["cpu"]["client_plus_server_over_busy_pct_median"] == pytest.approx(-40.0)
    too_short = window_verdict(host_rows(), (0.5, 0.6), client_workers=4)["cpu"]
    assert too_short["harness_cpu_pct_median"] is None and too_short["other_cpu_pct_median"] is None


def manifest(cpu, run_id="r1"):
    return {"path": f"/runs/{run_id}", "summary": None,
            "manifest": {"run_id": run_id, "system": "postgres", "status": "complete", "params": {}, "cpu": cpu}}


def test_other_cpu_excludes_the_harness_where_recorded_and_old_records_read_as_before():
    new = {"client_cpu_pct_median": 60.0, "server_cpu_pct_median": 70.0, "harness_cpu_pct_median": 30.0,
           "client_plus_server_over_busy_pct_median": -40.0, "other_cpu_pct_median": 10.0, "cores": 2}
    old = {"client_cpu_pct_median": 60.0, "server_cpu_pct_median": 70.0,
           "client_plus_server_over_busy_pct_median": -40.0, "cores": 2}
    rows = entry_rows([manifest(new, "new"), manifest(old, "old"), manifest({}, "none")]).set_index("run_id")
    assert rows.loc["new", "other_cpu_pct"] == pytest.approx(10.0)
    assert rows.loc["new", "harness_cpu_pct"] == pytest.approx(30.0)
    assert rows.loc["old", "other_cpu_pct"] == pytest.approx(40.0)  # the harness is in it: unknown apart
    assert pd.isna(rows.loc["old", "harness_cpu_pct"]) and pd.isna(rows.loc["none", "other_cpu_pct"])
    assert other_cpu_pct({"other_cpu_pct_median": -3.0}) == 0.0  # jitter below zero is none


def test_box_saturated_counts_the_harness_where_recorded():
    runs = pd.DataFrame({"client_cpu_pct": [60.0], "server_cpu_pct": [90.0], "cores": [2]})
    assert box_saturated(runs) is False
    assert box_saturated(runs.assign(harness_cpu_pct=[30.0])) is True
    assert box_saturated(runs.assign(harness_cpu_pct=[None])) is False  # an old record: as before
