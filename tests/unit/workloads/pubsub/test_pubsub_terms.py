"""Pub/sub's comparison states its terms from the records: neither system persists the message,
but the Postgres side's commit waits for a WAL flush (the server's recorded synchronous_commit,
the host's fsync figure) that the Redis side does not pay — in the decision cells and the
head-to-head caption. And a backlog row is marked with a word, not ᵇ (a saturated box elsewhere)."""

from __future__ import annotations

import pandas as pd

from pglimits_core.workloads.pubsub.decision import decisions
from pglimits_core.workloads.pubsub.head_to_head import head_to_head_table
from pglimits_core.workloads.pubsub.report import (
    CAPTIONS,
    HOW_TO_READ,
    NOTE,
    captions,
    headline,
    readme_lines,
)
from pglimits_core.workloads.pubsub.tables import all_tables, outcome_columns
from pglimits_core.workloads.pubsub.terms import disk_text, parse, recorded_settings, terms_note

PG_SERVERS = {"postgres": {"settings": {"synchronous_commit": "on", "fsync": "on", "shared_buffers": "4GB"}}}
REDIS_SERVERS = {"redis": {"settings": {"save": "", "appendonly": "no", "appendfsync": "everysec"}}}
FLUSHED = "synchronous_commit=on, fsync=on"
NOTHING = 'appendonly=no, save=""'


def test_each_run_records_the_settings_that_decide_what_reaches_the_disk():
    assert recorded_settings({"servers": PG_SERVERS}) == FLUSHED
    assert recorded_settings({"servers": REDIS_SERVERS}) == NOTHING
    assert recorded_settings({"servers": {}}) is None and recorded_settings({}) is None
    assert parse(NOTHING) == {"appendonly": "no", "save": ""}
    columns = outcome_columns({"servers": PG_SERVERS, "host": {"fsync_8k": {"median_us": 150.0}}})
    assert columns["server_persistence"] == FLUSHED and columns["fsync_median_us"] == 150.0


def _row(variant, persistence, deliveries, flush_bound=None, share=None):
    return {"variant": variant, "subscribers": 10, "publishers": 4, "loop": "closed", "rate": "flat out",
            "deliveries_per_s": deliveries, "deliveries_per_s_range": f"{deliveries:.0f}",
            "server_cpu_ms_per_1k": 40.0, "client_bound": True, "server_persistence": persistence,
            "flush_bound_per_s": flush_bound, "commits_share_of_flush_bound": share}


def _fanout(pg_persistence=FLUSHED):
    return pd.DataFrame([_row("pg_notify batch=1", pg_persistence, 18000.0, 1e6 / 152.0, 0.93),
                         _row("redis_publish batch=1", NOTHING, 26000.0)])


def test_a_decision_cell_says_neither_side_waited_for_a_disk_from_the_records():
    # a transaction that only notifies writes no WAL before its commit record: PostgreSQL does
    # not wait for its flush, synchronous_commit=on notwithstanding
    (cell,) = decisions({"fanout": _fanout()})
    assert cell.scale == "10 subscribers"
    pg, redis = cell.figures
    assert pg == ("18000 deliveries/s (4 publishers); its commit waits for no WAL flush (synchronous_commit=on, "
                  "fsync=on: a transaction that only notifies writes no WAL before its commit record); the "
                  "notification itself is not persisted")
    assert redis == '26000 deliveries/s (4 publishers); nothing written to disk (appendonly=no, save="")'


def test_a_cell_claims_nothing_the_records_do_not_hold():
    (unknown,) = decisions({"fanout": _fanout(None)})
    assert unknown.scale == "10 subscribers" and "durability settings not in these records" in unknown.figures[0]
    assert "different settings" in disk_text({"server_persistence": f"{FLUSHED} | synchronous_commit=off, fsync=on"})


def test_the_head_to_head_caption_states_the_terms_from_the_records():
    caption = captions({"fanout": _fanout()})["fanout_head_to_head"]
    assert caption.startswith(CAPTIONS["fanout_head_to_head"])
    assert "neither system persists the message itself" in caption.lower()
    assert f"pg_notify: {FLUSHED} (a bare NOTIFY's commit waits for no WAL flush" in caption
    assert f"redis_publish: {NOTHING} (nothing written to disk)" in caption
    assert "pays a WAL flush" not in caption
    older = terms_note(_fanout().drop(columns="server_persistence"))
    assert "these records do not say what each side waited for on disk" in older


def test_the_readme_lines_carry_the_terms_under_the_head_to_head():
    fanout = _fanout().assign(runs=3, failed_runs=0, busy_neighbour_runs=0, sustained=None, behind_at_end_pct=0.0,
                              published_per_s_range="—", delivery_p99_range_ms="—", lag_dominated=None,
                              publisher_lag_p99_ms=None, delivered=1, expected=1, published_per_s=1800.0)
    lines = readme_lines({"fanout": fanout, "fanout_head_to_head": head_to_head_table(fanout)}, "")
    assert any(line.startswith(CAPTIONS["fanout_head_to_head"]) and "waits for no WAL flush" in line for line in lines)


def _publisher_row(after_run):
    return {"run_id": "a", "status": "complete", "experiment": "fanout", "variant": "pg_notify batch=1",
            "subscribers": 10, "publishers": 4, "loop": "open", "rate": 1000.0, "role": "publisher",
            "published_per_s": 1000.0, "deliveries_per_s": 10000.0, "delivery_p50": 1.0, "delivery_p99": 10.0,
            "delivery_p999": 10.0, "schedule_lag_p99_ms": 1.0, "delivered": 100, "expected": 100, "lost": 0,
            "delivered_ratio": 1.0, "achieved_rate": 1000.0, "published_in_window": 10, "after_run": after_run,
            "duplicates": 0, "reordered": 0, "sustained": True, "client_bound": False, "other_cpu_pct": 0.0,
            "server_persistence": FLUSHED}


def test_a_backlog_row_says_so_in_a_word_and_pubsub_never_writes_the_saturated_box_mark():
    tables = all_tables(pd.DataFrame([_publisher_row(after_run=5)]))
    assert tables["fanout"].server_persistence.iloc[0] == FLUSHED
    shown = headline(tables)["deliveries/s"].iloc[0]
    assert shown.endswith(" (backlog)") and "ᵇ" not in shown
    assert not headline(all_tables(pd.DataFrame([_publisher_row(after_run=0)])))["deliveries/s"].iloc[0].endswith(
        "(backlog)")
    assert "(backlog) after deliveries/s" in HOW_TO_READ
    assert all("ᵇ" not in text for text in (HOW_TO_READ, NOTE, *CAPTIONS.values()))
