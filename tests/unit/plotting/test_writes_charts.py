"""The writes-while-querying figures on canned tables: one panel per write rate with the writer's
seconds shaded and each engine in its own colour; the quality bars at the three moments with the
runs' range as whiskers."""

from __future__ import annotations

import matplotlib.colors
import matplotlib.pyplot as plt
import pandas as pd

from pglimits_core.plotting.figures import ENGINE_COLOURS
from pglimits_core.plotting.writes import quality_chart, timeline_chart


def _timeline():
    rows = []
    for variant in ("pgvector hnsw", "qdrant hnsw"):
        for rate in (1, 10):
            for second in range(12):
                phase = "before" if second < 3 else "writing" if second < 9 else "after"
                stalled = variant == "qdrant hnsw" and second == 5
                rows.append({"variant": variant, "write_pct_per_min": rate, "repetition": 0, "second": second,
                             "phase": phase, "stage": "writes", "queries": 0 if stalled else 300,
                             "query_p99_ms": None if stalled else 2.0 + (rate if phase == "writing" else 0),
                             "writing_from": 3.0, "writing_to": 9.0, "cleanup_from": 17, "cleanup_to": 20.0})
            for second in range(17, 20):
                rows.append({"variant": variant, "write_pct_per_min": rate, "repetition": 0, "second": second,
                             "phase": "cleanup", "stage": "cleanup", "queries": 300, "query_p99_ms": 30.0,
                             "writing_from": 3.0, "writing_to": 9.0, "cleanup_from": 17, "cleanup_to": 20.0})
    return pd.DataFrame(rows)


def test_the_timeline_has_a_panel_per_rate_the_planned_windows_shaded_stalls_marked_and_engine_colours():
    fig = timeline_chart(_timeline())
    try:
        assert len(fig.axes) == 2
        for ax, rate in zip(fig.axes, (1, 10), strict=True):
            assert f"{rate:g} %" in ax.get_title() and ax.get_yscale() == "log"
            spans = sorted((p.get_x(), p.get_width()) for p in ax.patches)
            assert spans == [(3.0, 6.0), (17, 3.0)]  # writers planned 3-9, the cleanup run 17-20
            colours = {matplotlib.colors.to_hex(line.get_color()) for line in ax.get_lines()}
            assert colours == {ENGINE_COLOURS["pgvector"], ENGINE_COLOURS["qdrant"]}
            marks = [line for line in ax.get_lines() if line.get_marker() == "x"]
            assert len(marks) == 1 and list(marks[0].get_xdata()) == [5]  # Qdrant's stalled second
    finally:
        plt.close(fig)


def test_the_quality_bars_show_each_moment_with_the_runs_range():
    table = pd.DataFrame({"variant": ["pgvector hnsw"] * 2 + ["qdrant hnsw"] * 2, "write_pct_per_min": [10] * 4,
                          "recall_mean_before": [0.97, 0.96, 0.99, 0.99],
                          "recall_mean_after_writes": [0.80, 0.70, 0.98, 0.98],
                          "recall_mean_after_cleanup": [0.96, 0.96, 0.99, 0.99]})
    fig = quality_chart(table, "recall_mean", "recall@10")
    try:
        ax = fig.axes[0]
        bars = [p for p in ax.patches]
        assert len(bars) == 6  # 2 groups × 3 moments
        assert sorted(round(b.get_height(), 3) for b in bars)[:1] == [0.75]  # pgvector right after: median of 0.8, 0.7
        assert [t.get_text() for t in ax.get_legend().get_texts()] == [
            "before the writes", "end of the writes run", "after the cleanup"]
        assert ax.get_ylim() == (0.0, 1.05)
    finally:
        plt.close(fig)
