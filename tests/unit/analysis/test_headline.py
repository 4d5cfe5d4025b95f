"""The README's first-screen lines: a workload's capacity cells, target by target, each with its
two figures, the unit said once and the matrix's verdict shortened to who is ahead by how much
(rows canned from the committed matrix)."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.headline import (
    END,
    START,
    headline_block,
    headline_lines,
    short_verdict,
)

COLUMNS = ["workload", "machine", "scale", "target", "verdict", "postgres", "postgres_figure", "dedicated",
           "dedicated_figure", "margin"]
HELD10 = "send → claim p99 ≤ 10 ms (held over 30-s windows)"
ROWS = [
    ("queue", "amd", "capacity, durability none, a process kill loses acknowledged jobs", HELD10, "dedicated wins",
     "pg_skiplocked batch=1", "1,286 jobs/s", "redis_reliable batch=1", "14,700 jobs/s", "dedicated ×11.43 (figure)"),
    ("queue", "amd", "capacity, durability per_commit, survives a process kill", HELD10,
     "not decided here: inside the tie band", "pg_skiplocked batch=10", "1,925 jobs/s",
     "redis_reliable appendfsync=always batch=10 pipeline=10", "2,450 jobs/s", "dedicated ×1.27 (figure); undecided"),
    ("queue", "amd", "capacity, durability per_commit, survives a process kill", "none (the ceiling, closed loop)",
     "dedicated wins", "pg_skiplocked batch=10", "9,701 jobs/s", "redis_reliable", "40,275 jobs/s", "dedicated ×4.15"),
    ("search", "amd", "capacity, mixed stream", "query p99 ≤ 10 ms (held over 30-s windows)", "dedicated wins",
     "pg_gin ranked", "< 11 queries/s (held at no rate tried); top 10 = exact BM25's 0.72", "opensearch",
     "1,400 queries/s; top 10 = exact BM25's 0.99", "dedicated > ×130.61 (over the rate the other missed at)"),
    ("pubsub", "amd", "capacity, 1 subscriber", "delivery p99 ≤ 10 ms (held over 30-s windows)", "dedicated wins",
     "pg_notify batch=1", "10,987 messages/s", "redis_publish batch=1", "≥ 38,207 messages/s",
     "dedicated ≥ ×2.91 (floor's worst run over the other's best)"),
    ("interference", "amd", "co-location: full-text search beside the queue's churn", "bystander p99 within ×1.25",
     "not decided here: x", "postgres (one server)", "holds at no churn level run", "dedicated engines", "—", "—"),
]


def matrix(rows=ROWS):
    return pd.DataFrame(rows, columns=COLUMNS)


def test_a_line_reads_each_target_s_cells_with_the_unit_once_and_the_verdict_short():
    queue, search, pubsub = headline_lines(matrix())
    assert queue == ("- **queue**, Postgres against Redis: send → claim p99 ≤ 10 ms — durability none: 1,286 against "
                     "14,700 jobs/s (dedicated ×11.43); durability per_commit: 1,925 against 2,450 jobs/s (not decided).")
    # a side below every rate it tried keeps its words and its unit; quality notes stay in the matrix
    assert search == ("- **search**, Postgres against OpenSearch: query p99 ≤ 10 ms — mixed stream: < 11 queries/s "
                      "(held at no rate tried) against 1,400 queries/s (dedicated).")
    assert "10,987 against ≥ 38,207 messages/s (dedicated ≥ ×2.91)" in pubsub


def test_workloads_without_capacity_cells_have_no_line_and_machines_are_named_only_when_several():
    assert not any("interference" in line for line in headline_lines(matrix()))
    two = matrix([ROWS[0], (*ROWS[4][:1], "intel", *ROWS[4][2:])])
    assert [line.endswith(("(`amd`)", "(`intel`)")) for line in headline_lines(two)] == [True, True]


def test_short_verdicts():
    assert short_verdict("Postgres suffices (Postgres ahead)", "Postgres ×2.21 (figure)") == "Postgres ×2.21"
    assert short_verdict("no measurable difference", "—") == "no measurable difference"
    assert short_verdict("Postgres suffices (no measurable difference; Postgres meets the target)", "—") == \
        "Postgres meets it too"


def test_the_block_has_its_markers_and_says_so_when_empty():
    block = headline_block(matrix([]))
    assert block.startswith(START) and block.endswith(END) and "make results" in block


def test_the_block_shows_the_lines_picture_under_them():
    from pglimits_core.analysis.headline import FIGURE

    lines = headline_block(matrix()).splitlines()
    assert lines[-2] == FIGURE and "figures/capacity-at-target.png" in FIGURE
    assert FIGURE not in headline_block(matrix([]))
