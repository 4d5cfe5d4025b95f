"""The README's capacity picture: one bar per side of each capacity cell, at the cell's held
rates, a floor or a rate below every one tried marked, the matrix's verdict beside the pair."""

from __future__ import annotations

import matplotlib.pyplot as plt

from pglimits_core.analysis.capacity_figure import (
    bar_text,
    capacity_cells,
    draw,
    write_capacity_figure,
)
from pglimits_core.analysis.decision import Cell
from pglimits_core.analysis.verdict import LOAD, SERVER, Side

HELD10 = "query p99 ≤ 10 ms (held over 30-s windows)"


def cells() -> list[Cell]:
    return [
        Cell("vectors", "capacity, recall ≥ 0.95", HELD10, Side("pgvector hnsw ef=64", 262.0, SERVER, (230.0, 280.0)),
             Side("qdrant hnsw ef=32", 575.0, SERVER, (560.0, 600.0)), "capacity", unit="queries/s", window_s=30.0),
        Cell("pubsub", "capacity, 1 subscriber", HELD10, Side("pg_notify batch=1", 10_987.0, SERVER),
             Side("redis_publish batch=1", 38_207.0, LOAD), "capacity", unit="messages/s"),
        Cell("search", "capacity, mixed stream", HELD10, Side("pg_gin ranked", 11.0, SERVER, below=True),
             Side("opensearch", 1_400.0, SERVER), "capacity", unit="queries/s"),
        Cell("vectors", "capacity, recall ≥ 0.95", "none (the ceiling, closed loop)", Side("pgvector", 515.0, SERVER),
             Side("qdrant", 1_026.0, SERVER), "capacity", unit="queries/s"),
    ]


def test_only_the_cells_of_a_held_target_are_drawn_and_their_marks_say_floor_or_below():
    shown = capacity_cells(cells())
    assert [cell.workload for cell in shown] == ["vectors", "pubsub", "search"]
    assert [bar_text(side) for cell in shown for side in (cell.postgres, cell.dedicated)] == \
        ["262", "575", "10,987", "≥ 38,207", "< 11", "1,400"]


def test_each_bar_is_a_side_s_held_rate_and_the_pair_carries_the_verdict():
    figure = draw(capacity_cells(cells()))
    try:
        ax = figure.axes[0]
        widths = sorted(round(bar.get_width()) for bar in ax.patches)
        texts = [text.get_text() for text in ax.texts]
    finally:
        plt.close(figure)
    assert widths == [11, 262, 575, 1_400, 10_987, 38_207]
    assert "dedicated ×2.19" in texts and "not decided" in texts  # the matrix's verdicts, shortened
    assert "≥ 38,207  redis_publish batch=1" in texts


def test_nothing_is_written_without_a_capacity_cell(tmp_path):
    assert write_capacity_figure(cells()[3:], tmp_path) == []
    assert [p.name for p in write_capacity_figure(cells(), tmp_path)] == ["capacity-at-target.png",
                                                                          "capacity-at-target.svg"]
