"""The idle-listener figure on a canned table: the listener counts as evenly spaced labelled ticks
(0, 100, 1,000, 2,000 are not a scale), published/s and the server's memory on log axes (Postgres's
GiB beside Redis's MiB), each system in its own colour."""

from __future__ import annotations

import matplotlib.colors
import matplotlib.pyplot as plt
import pandas as pd

from pglimits_core.plotting.figures import POSTGRES, REDIS
from pglimits_core.workloads.pubsub.report import idle_chart

ROWS = [("pg_notify batch=1", 0, 4532, 220.2), ("pg_notify batch=1", 100, 415, 331.3),
        ("pg_notify batch=1", 1000, 34, 1270.0), ("pg_notify batch=1", 2000, 14, 2338.4),
        ("redis_publish batch=1", 0, 4566, 8.0), ("redis_publish batch=1", 100, 4787, 9.1),
        ("redis_publish batch=1", 1000, 5566, 18.2), ("redis_publish batch=1", 2000, 6711, 26.7)]


def test_counts_are_labelled_ticks_both_axes_log_and_each_system_its_colour():
    table = pd.DataFrame(ROWS, columns=["variant", "idle_listeners", "published_per_s", "server_pss_mib"])
    fig = idle_chart(table)
    try:
        left, right = fig.axes
        for ax in (left, right):
            assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "100", "1,000", "2,000"]
            assert ax.get_yscale() == "log"
            assert {matplotlib.colors.to_hex(line.get_color()) for line in ax.get_lines()} == {POSTGRES, REDIS}
        postgres = next(line for line in left.get_lines()
                        if matplotlib.colors.to_hex(line.get_color()) == POSTGRES and line.get_marker() == "o")
        assert list(postgres.get_xdata()) == [0, 1, 2, 3] and list(postgres.get_ydata()) == [4532, 415, 34, 14]
    finally:
        plt.close(fig)


def test_the_runs_range_is_drawn_as_whiskers():
    table = pd.DataFrame(ROWS, columns=["variant", "idle_listeners", "published_per_s", "server_pss_mib"])
    table["published_per_s_min"], table["published_per_s_max"] = table.published_per_s * 0.5, table.published_per_s * 2
    fig = idle_chart(table)
    try:
        left = fig.axes[0]
        whiskers = [c for c in left.containers if c.has_yerr]
        assert len(whiskers) == 2  # one per system
        segments = whiskers[0].lines[2][0].get_segments()
        assert [tuple(seg[:, 1]) for seg in segments][0] == (4532 * 0.5, 4532 * 2)
    finally:
        plt.close(fig)


def test_a_table_without_memory_readings_draws_no_memory_line():
    table = pd.DataFrame(ROWS, columns=["variant", "idle_listeners", "published_per_s", "server_pss_mib"])
    table["server_pss_mib"] = None
    fig = idle_chart(table)
    try:
        assert not fig.axes[1].get_lines()
    finally:
        plt.close(fig)
