"""The soak (``queue/soak.py``, ``soak_tables.py``): its rate learned from the first depth's record,
a failed ceiling failing the soak with why, and the tables read from records alone."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.queue.soak import Ceilings, soak_points
from pglimits_core.workloads.queue.soak_tables import bucketed, edge_p99s, server_over_time


def recorded(status: str, rate: float | None, error: str | None = None):
    entries = [SimpleNamespace(phase="measure", role="tool", items_per_s=rate)]
    return SimpleNamespace(status=status, error=error, summary=SimpleNamespace(entries=entries))


def test_the_soak_rate_is_a_share_of_the_first_depths_ceiling_and_a_failed_one_says_why():
    ceilings = Ceilings()
    ceilings.learn("pg", recorded("complete", 2000.04))
    ceilings.learn("redis", recorded("failed", None, "queue ran dry"))
    assert ceilings.of("pg") == 2000.0
    with pytest.raises(PGLimitsError, match="redis.*queue ran dry"):
        ceilings.of("redis")
    with pytest.raises(PGLimitsError, match="has not run"):
        ceilings.of("never")


def test_a_soak_naming_a_design_without_a_ceiling_tool_is_a_plan_error():
    """Every queue system has a tool today; a new one added without it must not be soaked by the harness."""
    from pglimits_core.workloads.queue.points import variant

    spec = SimpleNamespace(includes=lambda label: True, depths=[10, 20], clients=1, ceiling_s=1, ceiling_warmup_s=0,
                           share=0.5, duration_s=1, warmup_s=0, producers=1, consumers=1)
    known = variant(system="pg_skiplocked", batch=1)
    assert [p.experiment for p in soak_points(spec, [known])] == ["depth", "depth", "soak"]
    newcomer = SimpleNamespace(system="kafka", label="kafka batch=1", server="kafka")
    with pytest.raises(PGLimitsError, match="no ceiling tool"):
        soak_points(spec, [known, newcomer])


def test_the_first_and_last_minute_are_medians_of_their_seconds_and_the_worst_second_is_kept():
    seconds = pd.DataFrame({"t": range(300), "p99_ms": [2.0] * 60 + [3.0] * 180 + [9.0] * 59 + [80.0]})
    assert edge_p99s(seconds) == {"first_minute_p99_ms": 2.0, "last_minute_p99_ms": 9.0, "worst_second_p99_ms": 80.0}
    assert edge_p99s(pd.DataFrame({"t": [], "p99_ms": []}))["worst_second_p99_ms"] is None


def test_the_server_over_time_sums_the_queue_tables_and_counts_vacuums_and_checkpoints():
    samplers = pd.DataFrame({"t": [0, 1, 2, 0, 1],
                             "q.n_dead_tup": [10, 500, 20, None, None], "q.total_bytes": [2**20, 3 * 2**20, 3 * 2**20, None, None],
                             "q.autovacuum_count_delta": [0, 1, 0, None, None],
                             "checkpoints_timed_delta": [None, None, None, 0, 1],
                             "checkpoints_req_delta": [None, None, None, 1, 0]})
    found = server_over_time(samplers)
    assert found["dead_tuples_max"] == 500 and found["table_mib_first"] == 1 and found["table_mib_last"] == 3
    assert found["autovacuum_runs"] == 1 and found["checkpoints"] == 2 and found["redis_memory_mib_first"] is None


def test_the_time_line_puts_the_samplers_after_the_warm_up_on_the_windows_seconds(tmp_path):
    rows = pd.DataFrame({"role": "consumer", "op": "claim", "phase": "measure", "second": range(5, 95),
                         "items": 100, "end_to_end_p99_us": [2000.0] * 30 + [4000.0] * 60})
    rows.to_parquet(tmp_path / "timeseries.parquet")
    pd.DataFrame({"t": [4.0, 6.0, 36.0], "q.n_dead_tup": [999, 10, 20],
                  "q.total_bytes": [2**20] * 3}).to_parquet(tmp_path / "samplers.parquet")
    line = bucketed("pg", tmp_path, warmup_s=5)
    assert line.t_s.tolist() == [0, 30, 60] and line.p99_ms.tolist() == [2.0, 4.0, 4.0]
    assert line.dead_tuples.tolist()[:2] == [10, 20]  # the warm-up's 999 is not in the window
