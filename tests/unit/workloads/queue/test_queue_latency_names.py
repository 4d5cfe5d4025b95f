"""The queue's cross-process latency is named for what it measures — from the scheduled send to the
claim's return, not end to end — in every table, figure, caption and decision cell, while the run
records keep the kind's recorded name (``end_to_end``) so committed records still load."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from pglimits_core.workloads.queue import latency_names
from pglimits_core.workloads.queue.charts import latency_chart
from pglimits_core.workloads.queue.decision import TARGET, latency_cells
from pglimits_core.workloads.queue.readme import HOW_TO_READ, headline_table
from pglimits_core.workloads.queue.report import CAPTIONS, CLIENT_BOUND_NOTE
from pglimits_core.workloads.queue.tables import latency_table
from tests.unit.workloads.queue.test_queue_head_to_head import sweep_row
from tests.unit.workloads.queue.test_queue_tables import frame, latency_rows

OLD_NAMES = ("e2e", "end to end", "end-to-end", "end_to_end")


def said_old_name(text: str) -> bool:
    return any(old in text.lower() for old in OLD_NAMES)


def latency_runs(variant: str, p99s: list[float]) -> list[dict]:
    return [{"variant": variant, "durability_class": "per_commit", "offered_per_s": 1000.0, "sustained": True,
             latency_names.P99: p99, latency_names.P50: p99 / 4, "client_bound": False} for p99 in p99s]


def test_the_decision_target_names_send_to_claim_from_the_scheduled_send():
    assert TARGET == "send → claim p99 ≤ 50 ms (from the scheduled send)"
    (cell,) = latency_cells(pd.DataFrame(latency_runs("pg_skiplocked batch=1", [20, 25, 30])
                                         + latency_runs("redis_reliable batch=1", [5, 6, 7])))
    assert cell.target == TARGET and not said_old_name(cell.target)


def test_the_latency_table_reads_the_recorded_kind_and_shows_send_to_claim():
    rows = latency_rows("a", "pgmq batch=1", "per_commit")
    rows[1] |= {"end_to_end_p50_ms": 1.0, "end_to_end_p95_ms": 2.0}  # the names the records keep
    table = latency_table(frame(rows))
    row = table.iloc[0]
    assert (row.send_to_claim_p50_ms, row.send_to_claim_p95_ms, row.send_to_claim_p99_ms) == (1.0, 2.0, 3.0)
    assert not [column for column in table.columns if said_old_name(column)]


def test_captions_and_readme_say_what_the_two_ends_are():
    for text in (CAPTIONS["latency"], CLIENT_BOUND_NOTE, HOW_TO_READ):
        assert "send → claim" in text and not said_old_name(text.replace("not end to end", ""))
    assert "scheduled send" in CAPTIONS["latency"] and "ack" in CAPTIONS["latency"]
    assert "scheduled send" in HOW_TO_READ and "before its ack" in HOW_TO_READ
    head = headline_table({"throughput": pd.DataFrame([sweep_row("pgmq batch=1", 1, 100.0, None)]),
                           "steady": pd.DataFrame(),
                           "latency": pd.DataFrame(latency_runs("pgmq batch=1", [3.0]))})
    assert "send → claim p99 ms at 1,000/s" in head.columns
    assert not [column for column in head.columns if said_old_name(column)]


def test_the_figures_label_the_axis_and_title_send_to_claim():
    figure = latency_chart(pd.DataFrame(latency_runs("pgmq batch=1", [3.0, 4.0])))
    ax = figure.axes[0]
    assert ax.get_ylabel() == "send → claim latency (ms)\nfrom the scheduled send"
    assert "send → claim" in ax.get_title() and "scheduled send" in ax.get_title()
    assert not said_old_name(ax.get_title() + ax.get_ylabel())
    plt.close(figure)
