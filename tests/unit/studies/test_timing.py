"""Where a study's time goes: per-experiment sums of the points' wall and under-load seconds."""

from __future__ import annotations

from pglimits_core.studies.runner import RecordedRun
from pglimits_core.studies.timing import PointTime, breakdown, breakdown_lines, load_seconds


def recorded(load_s: float | None) -> RecordedRun:
    return RecordedRun(path=None, summary=None, status="complete", error=None, extra={}, load_s=load_s)


def test_load_seconds_of_one_record_a_list_and_a_result_without_any():
    assert load_seconds(recorded(4.5)) == 4.5
    assert load_seconds([recorded(4.0), recorded(5.0), recorded(None)]) == 9.0
    assert load_seconds({"verdict": "a rate search's own result"}) == 0.0


def test_breakdown_sums_per_experiment_largest_first_with_the_share_around_the_load():
    times = [PointTime("throughput", "a", 18.0, 5.0).to_dict(), PointTime("throughput", "b", 12.0, 5.0).to_dict(),
             PointTime("latency", "a", 12.0, 7.0).to_dict(), PointTime("build", "a", 60.0, 0.0).to_dict()]
    rows = breakdown(times)
    assert [row["experiment"] for row in rows] == ["build", "throughput", "latency"]
    throughput = rows[1]
    assert throughput["points"] == 2 and throughput["wall_min"] == 0.5
    assert throughput["around_load_pct"] == round(100 * (1 - 10 / 30))
    assert rows[0]["around_load_pct"] == 100


def test_breakdown_lines_name_the_workload_and_the_servers_start():
    lines = breakdown_lines("queue", {"timings": [PointTime("throughput", "a", 60.0, 30.0).to_dict()],
                                      "servers_start_s": 12.4})
    assert lines == ["  queue throughput: 1.0 min over 1 points, 0.5 min under load (50 % around it)",
                     "  queue servers: 12 s to start"]
