"""What every workload's records become: a tidy frame, its tables, its charts — computed once.

``build_outputs`` is the one path from run records to tables (Markdown + CSV) and figures
(PNG + SVG) for every workload; the notebooks display what it returns, the report embeds the
files it wrote and the README block links them. Figures are closed once drawn (nothing leaks
in a long session) and still display: ``IPython.display.display(figure)`` renders a closed one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from pglimits_core.record.records import load_records


@dataclass
class Outputs:
    """One workload's results from one directory of run records."""

    workload: Any
    records: list[dict[str, Any]]
    frame: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    #: chart file name -> figure (closed: display it, or save it again)
    figures: dict[str, Any] = field(default_factory=dict)
    #: chart file name -> the PNG and SVG written (empty when nothing was saved)
    figure_paths: dict[str, list[Path]] = field(default_factory=dict)

    def charts_of(self, table: str) -> list[Any]:
        """The figures drawn from table ``table`` (shown under it in a notebook)."""
        return [self.figures[chart.name] for chart in self.workload.charts
                if (chart.under or chart.table) == table and chart.name in self.figures]


def has_data(table: pd.DataFrame | None, column: str) -> bool:
    return table is not None and not table.empty and column in table \
        and pd.to_numeric(table[column], errors="coerce").notna().any()


def draw_charts(workload: Any, tables: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """Every chart of ``workload`` whose table has data (an all-blank chart says nothing)."""
    import matplotlib.pyplot as plt

    figures = {}
    for chart in workload.charts:
        table = tables.get(chart.table)
        if has_data(table, chart.needs):
            figures[chart.name] = chart.draw(table.dropna(subset=[chart.needs]))
            plt.close(figures[chart.name])
    return figures


def save_figures(figures: dict[str, Any], directory: Path) -> dict[str, list[Path]]:
    from pglimits_core.plotting.figures import save_figure

    return {name: save_figure(figure, name, directory) for name, figure in figures.items()}


def write_tables(prefix: str, tables: dict[str, pd.DataFrame], directory: Path) -> None:
    """``<prefix>-<key>.csv`` as computed and ``.md`` with "—" for a missing value (a verdict that
    does not apply)."""
    directory.mkdir(parents=True, exist_ok=True)
    for key, table in tables.items():
        table.to_csv(directory / f"{prefix}-{key}.csv", index=False)
        shown = table.astype(object).where(table.notna(), "—")
        (directory / f"{prefix}-{key}.md").write_text(shown.to_markdown(index=False) if not table.empty else "(no data)\n")


def build_outputs(workload: Any, runs_root: Path, figures_dir: Path | None = None,
                  tables_dir: Path | None = None) -> Outputs:
    """``workload``'s frame, tables and figures from the records under ``runs_root``; tables and
    figures are written only where a directory is given (showing committed results writes
    nothing), and only when there are records."""
    records = load_records(workload.name, runs_root)
    frame = workload.frame(records)
    tables = workload.tables(frame)
    outputs = Outputs(workload, records, frame, tables, draw_charts(workload, tables))
    if not records:  # nothing measured: no empty tables over files another run wrote
        return outputs
    if figures_dir is not None:
        outputs.figure_paths = save_figures(outputs.figures, figures_dir)
    if tables_dir is not None:
        write_tables(workload.name, tables, tables_dir)
    return outputs
