"""The report's first section: what the records say, before how they were made.

Where they come from (machine, commits, records), the answer in a line per workload (the README's
first screen, ``analysis.headline``) and its picture, the decision scoreboard with each tile's verdict and ratio,
and the source studies' claims beside ours — drawn from this report's own records, so a report
of one machine never shows another machine's cells.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from pglimits_core.analysis.capacity_figure import CAPTION as CAPACITY_CAPTION
from pglimits_core.analysis.capacity_figure import write_capacity_figure
from pglimits_core.analysis.decision import Cell, matrix_table
from pglimits_core.analysis.headline import headline_lines
from pglimits_core.plotting.html_report import Section

TITLE = "The answer on this machine"
CAPTIONS = {
    "capacity-at-target": CAPACITY_CAPTION,
    "decision-scoreboard": "Every cell of the decision matrix below as a tile, coloured by its verdict and "
                           "naming who is ahead by how much; the matrix gives both sides' figures.",
    "seed-scoreboard": "Each headline claim of the source studies, the ratio they found and the ratio measured "
                       "here, coloured by whether the two agree.",
}


def findings_section(cells: list[Cell], seeds: pd.DataFrame, runs: Path, figures: Path,
                     stamp: str | None) -> Section | None:
    """The section, its capacity picture and two scoreboards written into ``figures``; None
    without any cell."""
    # imported here: the scoreboards choose matplotlib's Agg backend, which a notebook that
    # imports the report (through a workload's report module) must not inherit
    from pglimits_core.analysis.answer import provenance_line
    from pglimits_core.analysis.scoreboard import write_scoreboard
    from pglimits_core.analysis.seed_scoreboard import count_sentence, write_seed_scoreboard

    matrix = matrix_table(cells)
    if matrix.empty:
        return None
    source = provenance_line({matrix["machine"].iloc[0]: runs})
    paragraphs = [inline_markdown(source)] if source else []
    lines = headline_lines(matrix)
    if lines:
        items = "".join(f"<li>{inline_markdown(line.removeprefix('- '))}</li>" for line in lines)
        paragraphs.append("The highest offered rate whose p99, from each operation's intended start, held the "
                          f"target over three steady 30-s windows, Postgres's figure first:<ul>{items}</ul>")
    if not seeds.empty:
        paragraphs.append(html.escape(count_sentence(seeds)))
    drawn = (write_capacity_figure(cells, figures, stamp) + write_scoreboard(matrix, figures, stamp)
             + write_seed_scoreboard(seeds, figures, stamp))
    return Section(TITLE, paragraphs, figures=[path for path in drawn if path.suffix == ".png"])


def inline_markdown(text: str) -> str:
    """The generated lines' Markdown (``**bold**``, ```code```) as HTML, everything else escaped."""
    escaped = html.escape(text, quote=False)
    escaped = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", escaped)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
