"""Reading durability classes and worker counters out of run records (new and older records)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pglimits_core.analysis.runs import entry_rows
from pglimits_core.workloads.queue.durability_tables import (
    UNKNOWN,
    design,
    fill_by_variant,
    run_class,
    sort_by_class,
)
from pglimits_core.workloads.queue.tables import queue_run_columns


def manifest(adapter: dict | None = None, **outcome) -> dict:
    return {"run_id": "r1", "system": "x", "status": "complete",
            "params": {"experiment": "throughput", "variant": "v", "outcome": {"adapter": adapter or {}, **outcome}}}


def test_a_recorded_class_wins_over_anything_derived():
    recorded = {"durability_class": "periodic", "server_settings": {"synchronous_commit": "on"}}
    assert run_class(manifest(recorded)) == "periodic"


def test_older_records_are_classed_from_the_settings_they_described():
    assert run_class(manifest({"server_settings": {"synchronous_commit": "on", "fsync": "on"}})) == "per_commit"
    assert run_class(manifest({"server_settings": {"synchronous_commit": "off", "fsync": "on"}})) == "periodic"
    assert run_class(manifest({"pragmas": {"synchronous": 2}})) == "per_commit"  # FULL
    assert run_class(manifest({"pragmas": {"synchronous": 1}})) == "periodic"  # NORMAL, WAL mode
    assert run_class(manifest({"pragmas": {"synchronous": 0}})) == "none"
    assert run_class(manifest({"durability": "aof_enabled=0, rdb_bgsave_in_progress=0"})) == "none"
    assert run_class(manifest()) == UNKNOWN
    assert run_class({"params": {}}) == UNKNOWN  # no outcome at all (a failed run)


def test_a_drill_without_a_class_takes_its_variants():
    frame = pd.DataFrame({"variant": ["a", "a", "b"], "durability_class": ["per_commit", UNKNOWN, UNKNOWN]})
    assert list(fill_by_variant(frame).durability_class) == ["per_commit", "per_commit", UNKNOWN]


def test_sorting_puts_the_strictest_promise_first_and_the_class_after_the_variant():
    table = pd.DataFrame({"rate": [1, 1, 1, 1], "variant": ["r", "s", "p", "q"],
                          "durability_class": ["none", UNKNOWN, "per_commit", "periodic"]})
    ordered = sort_by_class(table, ["variant"])
    assert list(ordered.variant) == ["p", "q", "r", "s"]
    assert list(ordered.columns) == ["rate", "variant", "durability_class"]


def test_a_design_is_the_variant_without_its_durability_options():
    assert design("sqlite_wal batch=1 synchronous=full") == "sqlite_wal batch=1"
    assert design("redis_reliable appendfsync=always batch=10 pipeline=10") == "redis_reliable batch=10 pipeline=10"
    assert design("pgmq batch=1 mode=archive") == "pgmq batch=1 mode=archive"


def test_busy_waits_come_from_the_workers_not_the_draining_parent():
    record = {"path": Path("/r1"), "summary": {"entries": []}, "manifest": manifest(
        {"pragmas": {"synchronous": 2}}, adapter_stats={"busy_events": 0},
        worker_stats={"busy_events": 41, "busy_wait_ns": 2_500_000, "busy_timeouts": 0})}
    row = entry_rows([record], queue_run_columns).iloc[0]
    assert row.durability_class == "per_commit"
    assert (row.worker_busy_events, row.worker_busy_wait_ms, row.worker_busy_timeouts) == (41, 2.5, 0)
    older = {**record, "manifest": manifest({}, adapter_stats={"busy_events": 0})}
    assert entry_rows([older], queue_run_columns).iloc[0].worker_busy_events is None  # not recorded, not zero
