"""The README's one picture: capacity at each latency target, Postgres's bar beside the dedicated
system's, per workload — the headline lines drawn (ClickBench's one bar per contender).

Drawn from the decision matrix's capacity cells (``analysis.decision.Cell``: each side's held
rate, whether it is a floor — its load generator was the limit — or below every rate tried), with
the matrix's verdict shortened beside each pair, so picture, lines and matrix cannot disagree.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from pglimits_core.analysis.decision import Cell, row
from pglimits_core.analysis.headline import HELD, short_verdict
from pglimits_core.plotting.figures import colour_for

NAME = "capacity-at-target"
CAPTION = ("Capacity at each latency target on one core: the highest offered rate whose p99 held the target over "
           "three steady 30-s windows, Postgres's bar above the dedicated system's, log scale; ≥ marks a floor (the "
           "load generator was the limit), < a rate below every one tried.")


def capacity_cells(cells: list[Cell]) -> list[Cell]:
    """The cells whose target is a p99 held over steady windows, in the matrix's order."""
    return [cell for cell in cells if HELD in cell.target and cell.postgres and cell.dedicated
            and cell.postgres.value is not None and cell.dedicated.value is not None]


def bar_text(side) -> str:
    """"1,286", "≥ 14,700" (a floor), "< 11" (held at no rate tried)."""
    mark = "< " if side.below else ("≥ " if side.floor else "")
    return f"{mark}{side.value:,.0f}"


def _label(cell: Cell) -> str:
    scale = cell.scale.removeprefix("capacity, ").split(", ")[0]
    return f"{cell.workload} · {scale} · {cell.target.split(HELD)[0]} ({cell.unit})"


def draw(cells: list[Cell]) -> plt.Figure:
    # flat enough that the README's first screen holds the answer lines and this picture
    fig, ax = plt.subplots(figsize=(12, 0.48 * len(cells) + 1.1))
    for index, cell in enumerate(cells):
        y = len(cells) - 1 - index
        for offset, side in ((0.19, cell.postgres), (-0.19, cell.dedicated)):
            ax.barh(y + offset, side.value, height=0.36, color=colour_for(side.system),
                    hatch="//" if side.floor or side.below else None, edgecolor="white", linewidth=0.5)
            ax.annotate(f"{bar_text(side)}  {side.system}", (side.value, y + offset), xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=6.5)
        matrix_row = row(cell)
        ax.annotate(short_verdict(matrix_row["verdict"], matrix_row["margin"]), (1.0, y), xycoords=("axes fraction", "data"),
                    xytext=(6, 0), textcoords="offset points", va="center", fontsize=8, fontweight="bold")
    ax.set_yticks(range(len(cells)), [_label(cell) for cell in reversed(cells)], fontsize=7.5)
    ax.set_xscale("log")
    highest = max(side.value for cell in cells for side in (cell.postgres, cell.dedicated))
    ax.set_xlim(5, highest * 60)  # room inside the axes for the longest bar's words
    ax.set_xlabel("highest offered rate holding the target (operations/s in each row's unit, log; hatched: ≥ or <)")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.set_title("Up to what rate one Postgres holds each p99 target, beside the dedicated system", fontsize=10)
    fig.tight_layout()
    return fig


def write_capacity_figure(cells: list[Cell], directory: Path, stamp: str | None = None) -> list[Path]:
    """``capacity-at-target.png``/``.svg`` in ``directory`` (nothing without a capacity cell)."""
    from pglimits_core.analysis.scoreboard import write_drawn  # it sets Agg: not at import

    return write_drawn(capacity_cells(cells), draw, NAME, directory, stamp)
