"""The pub/sub ceiling's pieces without servers: received/lost sequence ranges, the pgbench
script in the harness's message shape, the launcher's command line, the ceiling and head-to-head
tables from hand-made rows, and the flush-bound note derived from a record's fsync."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.verdict import BY_RATE, LOAD_LIMITED, NO_RATE, sweep_class
from pglimits_core.workloads.pubsub.ceiling_listen import launcher_argv
from pglimits_core.workloads.pubsub.ceiling_tools import notify_script, publish_steps
from pglimits_core.workloads.pubsub.head_to_head import head_to_head_table
from pglimits_core.workloads.pubsub.ledger import (
    MAX_RANGES,
    Seen,
    account,
    lost_ranges_text,
    missing_ranges,
    received_ranges,
)


def test_received_ranges_compress_the_bitmap_and_the_gaps_are_the_complement():
    seen = Seen()
    for seq in [*range(0, 5), *range(8, 10), 12]:
        seen.add(seq)
    assert received_ranges(seen.bitmap) == [[0, 4], [8, 9], [12, 12]]
    assert missing_ranges([[0, 4], [8, 9], [12, 12]], 0, 14) == [[5, 7], [10, 11], [13, 14]]
    assert missing_ranges([[0, 9]], 0, 9) == []
    assert len(received_ranges(bytearray(b"\x01\x00" * (MAX_RANGES + 5)))) == MAX_RANGES


def test_account_names_each_subscribers_lost_ranges_and_reconnects():
    seen = Seen()
    for seq in [*range(0, 100), *range(177, 300)]:  # 77 warm-up messages missed, as in the review
        seen.add(seq)
    sub = {"subscriber": "s1", "subscribed_ns": 0, "in_window": 0, "reconnects": 1,
           "publishers": {"p0": seen.summary()}}
    result = account([{"publisher": "p0", "published": 300, "first_start_ns": 10}], [sub])
    row = result["per_subscriber"][0]
    assert result["lost"] == 77 and row["lost_ranges"] == {"p0": [[100, 176]]} and row["reconnects"] == 1
    assert lost_ranges_text(result["per_subscriber"]) == "s1: 77 lost (p0 100–176, client reconnected 1×)"


def test_an_older_record_without_ranges_says_so():
    older = [{"subscriber": "s1", "lost": 77, "in_window": 0, "drain_complete": True}]
    assert lost_ranges_text(older) == "s1: 77 lost (ranges not recorded in this record)"
    assert lost_ranges_text([{"subscriber": "s0", "lost": 0}]) == ""


def test_the_pgbench_script_builds_the_harness_message_and_numbers_it():
    one = notify_script("pl_x", 1, 64)
    assert one.startswith("SELECT pg_notify('pl_x', rpad('p' || :client_id::text") and ", 64, 'x')" in one
    assert one.rstrip().endswith("\\set seq :seq + 1")
    many = notify_script("pl_x", 10, 64)
    assert "unnest(array(SELECT" in many and "generate_series(0, 9)" in many and ":seq + 10" in many
    (step, command), = publish_steps("pl_x", 64)
    assert step == "PUBLISH" and command[:2] == ["PUBLISH", "pl_x"] and len(command[2]) == 64


def test_the_launcher_keeps_the_url_off_the_command_line():
    argv = launcher_argv("pg_notify", "pl_x", 2, "/tmp/ledger")
    assert argv[-1] == "--" and "--listeners" in argv and not any("postgresql://" in a for a in argv)


def _fanout(rate, pg_bound, redis_bound):
    row = {"subscribers": 10, "publishers": 4, "rate": rate, "server_cpu_us_low": None, "server_cpu_us_high": None}
    return [{**row, "variant": "pg_notify batch=1", "deliveries_per_s": 18000.0,
             "deliveries_per_s_range": "18000 (17000–19000)", "server_cpu_ms_per_1k": 43.0,
             "server_cpu_us_low": 40.0, "server_cpu_us_high": 45.0, "client_bound": pg_bound},
            {**row, "variant": "redis_publish batch=1", "deliveries_per_s": 26000.0,
             "deliveries_per_s_range": "26000 (24000–35000)", "server_cpu_ms_per_1k": 10.0,
             "server_cpu_us_low": 9.0, "server_cpu_us_high": 12.0, "client_bound": redis_bound}]


def test_head_to_head_gives_each_point_a_verdict_class_and_the_cpu_per_delivery():
    table = head_to_head_table(pd.DataFrame(_fanout("flat out", True, True) + _fanout(1000.0, False, False)))
    flat, offered = (table[table.rate == r].iloc[0] for r in ("flat out", 1000.0))
    # both client-bound: two floors decide nothing, whatever the server CPU per delivery (printed)
    assert flat.verdict_class == LOAD_LIMITED and flat.ahead == "—"
    assert flat.postgres_server_cpu_us_per_delivery == "43.0 (40.0–45.0)"
    # at an offered rate both deliver what is offered: no rate to decide on
    assert offered.verdict_class == NO_RATE and offered.ahead == "—"
    both_measured = head_to_head_table(pd.DataFrame(_fanout("flat out", False, False))).iloc[0]
    assert both_measured.verdict_class == sweep_class(BY_RATE) and both_measured.ahead == "redis_publish batch=1"
    assert head_to_head_table(pd.DataFrame()).empty


def _tool_run(run_id, system, listeners, rate, received, lost_ranges=None):
    outcome = {"published": 10_000, "lost": 10_000 * listeners - received,
               "per_listener": [{"subscriber": "s0", "lost": 10_000 - received, "reconnects": 0,
                                 "lost_ranges": lost_ranges}] if listeners else []}
    return {"run_id": run_id, "status": "complete", "experiment": "ceiling", "phase": "measure",
            "variant": f"{system} batch=1", "system": system, "batch": 1, "publishers": 4, "listeners": listeners,
            "items_per_s": rate, "ops_per_s": rate, "expected": 10_000 * listeners, "received": received,
            "server_cpu_pct": 50.0, "client_bound": False, "fsync_median_us": 150.0, "tool": "pgbench",
            "tool_version": "16", "outcome": outcome}


def test_the_ceiling_table_sets_the_tool_beside_the_harness_and_counts_what_listeners_got():
    from pglimits_core.workloads.pubsub.ceiling_tables import ceiling_table

    frame = pd.DataFrame([_tool_run("a", "pg_notify", 0, 6000.0, 0),
                          _tool_run("b", "pg_notify", 1, 5000.0, 9_990, {"p1": [[100, 109]]})])
    fanout = pd.DataFrame([{"variant": "pg_notify batch=1", "publishers": 4, "subscribers": 1, "rate": "flat out",
                            "published_per_s": 4000.0}])
    table = ceiling_table(frame, fanout).set_index("listeners")
    nobody, one = table.loc[0], table.loc[1]
    assert pd.isna(nobody.harness_published_per_s) and pd.isna(nobody.server_cpu_us_per_delivery)
    assert nobody.server_cpu_us_per_publish == 50.0 / 100 * 1e6 / 6000.0
    assert one.harness_over_tool == 4000.0 / 5000.0 and one["received/published"] == "9990/10000"
    assert one.lost == 10 and "p1 100–109" in one.lost_where
    assert ceiling_table(pd.DataFrame(), fanout).empty
