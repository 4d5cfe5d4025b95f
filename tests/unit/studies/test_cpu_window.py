"""A run's CPU figures cover its measured window only, never the set-up and tear-down around it.

Fake sampler frames: idle seconds while the workers fork and connect, loaded seconds in the
window, idle seconds while they drain and exit. Medians over every row (the old behaviour) mix
the two; the window's rows give the loaded figures, at record time (the runner's verdict) and
at analysis time (a committed record's ``samplers.parquet`` with the window's bounds).
"""

import json
import os

import pandas as pd
import pytest

from pglimits_core.analysis.runs import measured_samplers, measurement_window
from pglimits_core.record.results import PhaseInfo, measured_window
from pglimits_core.samplers.classify import (
    NO_WINDOW,
    WINDOW_TOO_SHORT,
    host_frame_verdict,
    measured_rows,
    window_verdict,
)
from pglimits_core.studies.runner import (
    cpu_verdict,
    on_sampler_clock,
    time_commands,
    tool_window,
    unseen_client,
)

#: (t, client %, server %): 3 idle set-up seconds, 4 loaded seconds, 3 idle tear-down seconds
SECONDS = [(0.01, None, None), (1.01, 2.0, 3.0), (2.01, 40.0, 5.0), (3.01, 30.0, 4.0),
           (4.01, 90.0, 120.0), (5.01, 92.0, 124.0), (6.01, 88.0, 118.0), (7.01, 91.0, 126.0),
           (8.01, 20.0, 2.0), (9.01, 1.0, 2.0), (10.01, 0.0, 1.0)]
#: the load's measured window on the samplers' t axis: the loaded intervals (3.01, 7.01]
WINDOW = (2.95, 7.05)


def host_frame(seconds=SECONDS) -> pd.DataFrame:
    host = pd.DataFrame([{"t": t, "sampler": "host", "client_cpu_pct": c, "server_cpu_pct": s,
                          "system_cpu_pct": None if c is None else (c + s) / 2 + 5} for t, c, s in seconds])
    pg = pd.DataFrame([{"t": t + 0.003, "sampler": "postgres", "xact_commit_per_s": 100.0} for t, _, _ in seconds])
    return pd.concat([host, pg], ignore_index=True).sort_values("t", ignore_index=True)


@pytest.fixture(autouse=True)
def two_cores(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def test_the_window_keeps_the_rows_whose_whole_second_lies_inside_it():
    rows = measured_rows(host_frame(), WINDOW)
    host = rows[rows.sampler == "host"]
    assert list(host.t) == [4.01, 5.01, 6.01, 7.01]
    assert list(rows[rows.sampler == "postgres"].t) == pytest.approx([4.013, 5.013, 6.013, 7.013])


def test_a_row_half_inside_the_window_is_left_out():
    # the window starts at 3.5: the second (3.01, 4.01] is half set-up, so it is not kept whole
    host = measured_rows(host_frame(), (3.5, 7.05)).query("sampler == 'host'")
    assert list(host.t) == [5.01, 6.01, 7.01]


def test_medians_over_the_window_differ_from_medians_over_the_whole_run():
    whole = host_frame_verdict(host_frame(), client_workers=4)["cpu"]
    windowed = window_verdict(host_frame(), WINDOW, client_workers=4)["cpu"]
    assert windowed["server_cpu_pct_median"] == pytest.approx(122.0)
    assert windowed["client_cpu_pct_median"] == pytest.approx(90.5)
    assert whole["server_cpu_pct_median"] == pytest.approx(4.5)  # the old figure: mostly idle seconds
    assert windowed["window_t_s"] == [2.95, 7.05] and windowed["window_seconds"] == 4


def test_the_runner_judges_the_window_not_the_set_up_seconds():
    verdict = cpu_verdict("postgres", host_frame(), workers=4, window_t_s=WINDOW)
    assert verdict["cpu"]["server_cpu_pct_median"] == pytest.approx(122.0)
    assert verdict["client_bound"] is False and verdict["client_bound_reason"].startswith("box saturated mostly by the server")
    whole = cpu_verdict("postgres", host_frame(), workers=4)  # a frame that is its window already
    assert "idle CPU" in whole["client_bound_reason"]


def test_a_window_with_no_whole_second_draws_no_split():
    verdict = window_verdict(host_frame(), (4.3, 5.2), client_workers=4)
    assert verdict["client_bound"] is None
    assert verdict["client_bound_reason"].startswith(WINDOW_TOO_SHORT)
    assert verdict["cpu"]["server_cpu_pct_median"] is None and verdict["cpu"]["window_seconds"] == 0
    # a tool run too short for the split keeps that reason, not "the client was not seen"
    assert unseen_client(verdict) == verdict


def test_an_unknown_window_draws_no_split_from_the_whole_run():
    verdict = cpu_verdict("postgres", host_frame(), workers=4, window_t_s=None)
    assert verdict["client_bound"] is None and verdict["client_bound_reason"] == NO_WINDOW
    assert verdict["cpu"]["client_cpu_pct_median"] is None


def test_the_measured_window_starts_after_the_warm_up_and_stops_where_the_load_did():
    phases = [PhaseInfo("warmup", 1.0, warmup=True), PhaseInfo("measure", 4.0)]
    assert measured_window(phases, 100.0) == (101.0, 105.0)
    assert measured_window(phases, 100.0, ended_s=103.5) == (101.0, 103.5)
    assert measured_window([PhaseInfo("warmup", 1.0, warmup=True)], 100.0) is None


class FakeThread:
    def __init__(self, start_time):
        self.start_time = start_time


class FakeSamplers:
    threads = [FakeThread(50.0), FakeThread(50.0)]


def test_a_monotonic_window_lands_on_the_samplers_t_axis():
    assert on_sampler_clock((53.0, 57.0), FakeSamplers()) == (3.0, 7.0)
    assert on_sampler_clock(None, FakeSamplers()) is None


class FakeProcess:
    def __init__(self, clock):
        self.clock = clock

    def run(self, command):
        self.clock.now += command
        return command


def test_a_tool_window_is_its_commands_phases_not_its_post_processing(monkeypatch):
    from pglimits_core.studies import runner

    class Clock:
        now = 10.0

    monkeypatch.setattr(runner.time, "monotonic", lambda: Clock.now)
    process = FakeProcess(Clock)
    spans = time_commands(process)
    process.run(5.1)  # vegeta attack: 1 s warm-up + 4 s measured, a little start-up
    process.run(2.0)  # vegeta encode: after the load
    assert spans == [(10.0, 15.1), (15.1, 17.1)]
    phases = [PhaseInfo("warmup", 1.0, warmup=True), PhaseInfo("measure", 4.0)]
    assert tool_window(phases, spans) == (11.0, 15.0)
    # a tool that failed early: the window ends with its command
    assert tool_window(phases, [(10.0, 12.0)]) == (11.0, 12.0)
    assert tool_window(phases, []) is None


def test_redis_benchmark_steps_make_one_window():
    steps = [PhaseInfo("LPUSH", 2.0), PhaseInfo("LMOVE", 2.0), PhaseInfo("LREM", 2.0)]
    spans = [(10.0, 12.05), (12.05, 14.1), (14.1, 16.15)]
    assert tool_window(steps, spans) == (10.0, 16.0)


def write_record(path, frame, window):
    path.mkdir()
    frame.to_parquet(path / "samplers.parquet", index=False)
    cpu = {"server_cpu_pct_median": 4.5} if window is None else {"window_t_s": list(window)}
    (path / "manifest.json").write_text(json.dumps({"cpu": cpu}))


def test_analysis_reads_a_records_samplers_within_its_recorded_window(tmp_path):
    write_record(tmp_path / "new", host_frame(), WINDOW)
    rows = measured_samplers(tmp_path / "new")
    assert rows.query("sampler == 'host'").server_cpu_pct.median() == pytest.approx(122.0)
    assert measurement_window(json.loads((tmp_path / "new" / "manifest.json").read_text())) == WINDOW


def test_a_record_without_the_windows_bounds_keeps_every_row(tmp_path):
    write_record(tmp_path / "old", host_frame(), None)
    assert len(measured_samplers(tmp_path / "old")) == len(host_frame())
    assert measured_samplers(tmp_path / "missing").empty


def test_the_queue_resources_table_uses_the_window(tmp_path):
    from types import SimpleNamespace

    from pglimits_core.workloads.queue.health import resources_row

    write_record(tmp_path / "run", host_frame(), WINDOW)
    run = SimpleNamespace(variant="pg_delete batch=1", offered_rate=1000.0, consumed_per_s=1000.0)
    row = resources_row(run, measured_samplers(tmp_path / "run"))
    assert row["server_cpu_pct"] == pytest.approx(122.0)
    assert row["server_cpu_us_per_msg_with_polling"] == pytest.approx(1220.0)


def test_a_late_reading_and_the_row_after_it_are_left_out_of_the_split():
    # the sampler thread starved: the row stamped 5.01 was read 0.9 s late, so it measured part
    # of the next second, and the 6.01 row's interval starts at that late reading
    frame = host_frame()
    frame["cpu_read_s"] = [0.9 if (s == "host" and t == 5.01) else 0.01 for t, s in zip(frame.t, frame.sampler, strict=True)]
    host = measured_rows(frame, WINDOW).query("sampler == 'host'")
    assert list(host.t) == [4.01, 7.01]


def test_a_window_whose_every_second_was_read_late_has_no_split_and_says_why():
    from pglimits_core.samplers.classify import SLOW_READS

    frame = host_frame()
    frame["cpu_read_s"] = [0.5 if s == "host" else 0.0 for s in frame.sampler]
    verdict = window_verdict(frame, WINDOW, client_workers=4)
    assert verdict["client_bound"] is None and verdict["cpu"]["server_cpu_pct_median"] is None
    assert verdict["client_bound_reason"].startswith(SLOW_READS)
