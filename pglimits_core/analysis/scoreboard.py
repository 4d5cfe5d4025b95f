"""The decision matrix as one picture: a tile per cell, coloured by its verdict.

A reader skimming the README sees at a glance where Postgres suffices, where the dedicated
system wins and where this box could not decide; the tile's text names the scale and target,
and its verdict with the ratio ("dedicated ×2.19"); the matrix beside it gives the figures. Drawn from the same rows as the matrix (``decision.row``),
so the picture and the table cannot disagree.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from pglimits_core.analysis.decision import indicative  # noqa: E402
from pglimits_core.analysis.headline import short_verdict  # noqa: E402
from pglimits_core.plotting.figures import GREY, POSTGRES, save_figure  # noqa: E402

NAME = "decision-scoreboard"
PER_ROW = 4  # tiles a row: at README width a tile's words stay ~9 px high
# verdict text starts with -> (legend label, tile colour)
FAMILIES = [("Postgres suffices", "Postgres suffices", POSTGRES),
            ("dedicated wins", "dedicated system wins", "#c55a11"),
            ("no measurable difference", "no measurable difference", "#a6a6a6"),
            ("neither meets", "neither meets the target", "#f4b183"),
            ("not decided", "not decided on this box", "#ffffff")]


def family(verdict: str) -> tuple[str, str]:
    """The legend label and colour of a cell's verdict."""
    return next(((label, colour) for prefix, label, colour in FAMILIES if verdict.startswith(prefix)),
                ("not decided on this box", "#ffffff"))


def _rows(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(workload heading, a chunk of at most PER_ROW cells): long workloads wrap onto more rows."""
    rows = []
    for workload, cells in table.groupby("workload", sort=False):
        for start in range(0, len(cells), PER_ROW):
            rows.append((workload if start == 0 else "", cells.iloc[start:start + PER_ROW]))
    return rows


def tile_words(text: str) -> str:
    """A scale or target as a tile names it: without its parenthesised details and what follows a
    ";" (the SIGKILL drill's count, a design left out of the pairing) — the matrix's table holds
    them, and a tile has room for a dozen words."""
    return re.sub(r" \([^()]*\)", "", str(text)).split(";")[0].strip()


#: characters a tile line holds at its font size, and the lines it has room for above the verdict
TILE_LINE_CHARS, TILE_LINES = 25, 4


def _cut(lines: list[str], room: int) -> list[str]:
    if len(lines) <= room:
        return lines
    kept = lines[:room]
    return kept[:-1] + [kept[-1][:TILE_LINE_CHARS - 1].rstrip() + "…"] if kept else []


def tile_label(scale: str, target: str) -> str:
    """The scale, then its target from a line of its own, wrapped to the tile's width: the scale
    (what tells two tiles apart) keeps the lines it needs, the target gets what is left, cut
    with "…"."""
    head = _cut(textwrap.wrap(scale, TILE_LINE_CHARS), TILE_LINES)
    return "\n".join(head + _cut(textwrap.wrap(target, TILE_LINE_CHARS), TILE_LINES - len(head)))


def _tile(ax, x: float, y: float, cell: pd.Series) -> None:
    would = indicative(str(cell["verdict"]))
    _, colour = family(would or str(cell["verdict"]))
    # an indicative verdict (short windows) is the pale, hatched version of its colour: seen, not decided
    ax.add_patch(plt.Rectangle((x, y), 0.95, 0.9, facecolor=colour, edgecolor=GREY, linewidth=0.6,
                               alpha=0.35 if would else 1.0, hatch="///" if would else None))
    ink = "white" if colour in (POSTGRES, "#c55a11") and not would else "black"
    target = tile_words(cell["target"])
    scale = tile_words(cell["scale"]).removeprefix("capacity, ")  # the target says "held" already
    label = tile_label(scale, "flat out" if target == "none" else target.split(": ")[0])
    ax.text(x + 0.475, y + 0.61, label, ha="center", va="center", fontsize=7, color=ink, linespacing=1.1)
    # the verdict's words and ratio on the tile: the colour alone says who, not by how much
    ax.text(x + 0.475, y + 0.18, short_verdict(str(cell["verdict"]), str(cell.get("margin", ""))), ha="center",
            va="center", fontsize=9.5, fontweight="bold", color=ink)


def draw(table: pd.DataFrame) -> plt.Figure:
    rows = _rows(table)
    fig, ax = plt.subplots(figsize=(PER_ROW * 2.3 + 1.4, 1.05 * len(rows) + 0.9))
    for index, (workload, cells) in enumerate(rows):
        y = len(rows) - 1 - index
        ax.text(-0.1, y + 0.45, workload, ha="right", va="center", fontsize=9, fontweight="bold")
        for column, (_, cell) in enumerate(cells.iterrows()):
            _tile(ax, column, y, cell)
    ax.set_xlim(-1.3, PER_ROW)
    ax.set_ylim(-0.2, len(rows))
    ax.axis("off")
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=colour, edgecolor=GREY) for _, _, colour in FAMILIES]
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor=GREY, edgecolor=GREY, alpha=0.35, hatch="///"))
    labels = [label for _, label, _ in FAMILIES] + ["hatched: indicative only (windows < 30 s)"]
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
              ncol=3, fontsize=7, frameon=False)
    ax.set_title("Where one Postgres suffices: every cell of the decision matrix", fontsize=10)
    return fig


def write_drawn(table: pd.DataFrame, drawer, name: str, directory: Path, stamp: str | None) -> list[Path]:
    """``drawer(table)`` saved as ``name``.png/.svg in ``directory`` (nothing for an empty table),
    the figure closed whatever happens."""
    if len(table) == 0:  # a frame or a list of rows
        return []
    fig = drawer(table)
    try:
        return save_figure(fig, name, directory, stamp)
    finally:
        plt.close(fig)


def write_scoreboard(table: pd.DataFrame, directory: Path, stamp: str | None = None) -> list[Path]:
    """``decision-scoreboard.png``/``.svg`` in ``directory`` (nothing when the matrix is empty)."""
    return write_drawn(table, draw, NAME, directory, stamp)
