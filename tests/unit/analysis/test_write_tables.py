"""A workload's tables directory holds what its records make and nothing older: a table an
experiment no longer produces (retired, renamed) is removed when the tables are written again,
and another workload's or the report's tables are left alone."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.outputs import write_tables


def test_a_table_the_records_no_longer_make_is_removed_and_no_other_is_touched(tmp_path):
    write_tables("pubsub", {"fanout": pd.DataFrame({"a": [1]}), "cliff": pd.DataFrame({"a": [2]})}, tmp_path)
    for other in ("pubsub_x-capacity.csv", "search-ceiling.csv", "report-seed-comparison.md"):
        (tmp_path / other).write_text("kept")
    write_tables("pubsub", {"fanout": pd.DataFrame({"a": [3]}), "capacity": pd.DataFrame()}, tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["pubsub-capacity.csv", "pubsub-capacity.md", "pubsub-fanout.csv", "pubsub-fanout.md",
                     "pubsub_x-capacity.csv", "report-seed-comparison.md", "search-ceiling.csv"]
    assert (tmp_path / "pubsub-capacity.md").read_text() == "(no data)\n"
    assert pd.read_csv(tmp_path / "pubsub-fanout.csv").a.tolist() == [3]


def test_a_series_too_long_to_read_keeps_its_csv_and_its_markdown_points_at_it(tmp_path):
    from pglimits_core.analysis.outputs import MARKDOWN_ROWS

    long = pd.DataFrame({"t_s": range(MARKDOWN_ROWS + 1), "p99_ms": 1.0})
    write_tables("interference", {"timeline": long, "stalls": long.head(3)}, tmp_path)
    said = (tmp_path / "interference-timeline.md").read_text()
    assert "interference-timeline.csv" in said and "t_s, p99_ms" in said and len(said) < 300
    assert len(pd.read_csv(tmp_path / "interference-timeline.csv")) == MARKDOWN_ROWS + 1
    assert (tmp_path / "interference-stalls.md").read_text().startswith("|")
