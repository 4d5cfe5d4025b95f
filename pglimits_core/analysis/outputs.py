"""What every workload's records become: a tidy frame, its tables, its charts — computed once.

``build_outputs`` is the one path from run records to tables (Markdown + CSV) and figures
(PNG + SVG) for every workload; the notebooks display what it returns, the report embeds the
files it wrote and the README block links them. Figures are closed once drawn (nothing leaks
in a long session) and still display: ``IPython.display.display(figure)`` renders a closed one.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    """Some row has a number in ``column``, or a non-empty list (a capacity row's ``curve``)."""
    if table is None or table.empty or column not in table:
        return False
    values = table[column]
    return bool(pd.to_numeric(values, errors="coerce").notna().any()
                or values.map(lambda v: isinstance(v, list) and bool(v)).any())


def stamp_text(records: list[dict[str, Any]]) -> str:
    """Which machine and commit a figure comes from: the newest record's host (its id and CPU
    model) and git sha, flagged when that run came from a modified tree."""
    from pglimits_core.samplers.host_facts import host_id

    manifest = max((r["manifest"] for r in records), key=lambda m: m["run_id"])
    host, git = manifest.get("host") or {}, manifest.get("git") or {}
    dirty = " + uncommitted changes" if git.get("dirty") else ""
    return f"machine {host_id(host)} ({host.get('cpu_model', '?')}) · git {str(git.get('sha'))[:10]}{dirty}"


def merged_stamp(stamps: list[str]) -> str:
    """Each workload's stamp (``outputs.stamp_text``) once, its commits listed after its machine:
    "machine m (cpu) · git a, b + uncommitted changes; machine n (cpu) · git c"."""
    commits: dict[str, list[str]] = {}
    for stamp in stamps:
        machine, _, sha = stamp.partition(" · git ")
        commits.setdefault(machine, [])
        commits[machine] += [sha] if sha not in commits[machine] else []
    return "; ".join(f"{machine} · git {', '.join(shas)}" for machine, shas in commits.items())


def draw_charts(workload: Any, tables: dict[str, pd.DataFrame], stamp: str | None = None) -> dict[str, Any]:
    """Every chart of ``workload`` whose table has data (an all-blank chart says nothing),
    stamped with ``stamp`` (machine and commit) when given."""
    import matplotlib.pyplot as plt

    from pglimits_core.plotting.figures import stamp_figure

    figures = {}
    for chart in workload.charts:
        table = tables.get(chart.table)
        if has_data(table, chart.needs):
            figures[chart.name] = chart.draw(table.dropna(subset=[chart.needs]))
            if stamp:
                stamp_figure(figures[chart.name], stamp)
            plt.close(figures[chart.name])
    return figures


def save_figures(figures: dict[str, Any], directory: Path, formats: Sequence[str] | None = None) -> dict[str, list[Path]]:
    from pglimits_core.plotting.figures import FIGURE_FORMATS, save_figure

    return {name: save_figure(figure, name, directory, formats=formats or FIGURE_FORMATS)
            for name, figure in figures.items()}


#: past this many rows a table is a series to plot or load, not to read: its ``.md`` says so and
#: points at the ``.csv`` (a per-second timeline of every act made a 4.7 MB markdown file)
MARKDOWN_ROWS = 500


def write_tables(prefix: str, tables: dict[str, pd.DataFrame], directory: Path) -> None:
    """``<prefix>-<key>.csv`` as computed and ``.md`` with "—" for a missing value (a verdict that
    does not apply); a ``<prefix>-`` table these records no longer make (an experiment retired, a
    key renamed) is removed, so the directory holds what the records say and nothing older."""
    directory.mkdir(parents=True, exist_ok=True)
    for key, table in tables.items():
        table.to_csv(directory / f"{prefix}-{key}.csv", index=False)
        (directory / f"{prefix}-{key}.md").write_text(markdown_of(table, f"{prefix}-{key}.csv"))
    remove_stale(directory, prefix, {f"{prefix}-{key}" for key in tables}, (".csv", ".md"))


def markdown_of(table: pd.DataFrame, csv_name: str) -> str:
    if table.empty:
        return "(no data)\n"
    if len(table) > MARKDOWN_ROWS:
        return (f"({len(table):,} rows, a series too long to read here: the data is [{csv_name}]({csv_name}); "
                f"its columns: {', '.join(map(str, table.columns))})\n")
    return table.astype(object).where(table.notna(), "—").to_markdown(index=False)


def remove_stale(directory: Path, prefix: str, kept: set[str], suffixes: Sequence[str]) -> None:
    """Remove ``<prefix>-*`` files of ``suffixes`` in ``directory`` whose stem is not ``kept``: what
    an older run of the workload wrote that these records no longer make."""
    for suffix in suffixes:
        for stale in directory.glob(f"{prefix}-*{suffix}"):
            if stale.stem not in kept:
                stale.unlink()


def drawn_charts(workload: Any, tables: dict[str, pd.DataFrame]) -> list[str]:
    """The names of the charts ``draw_charts`` draws from ``tables`` (those whose table has data)."""
    return [chart.name for chart in workload.charts if has_data(tables.get(chart.table), chart.needs)]


def written_figures(workload: Any, tables: dict[str, pd.DataFrame], records: list[dict[str, Any]],
                    directory: Path) -> dict[str, list[Path]] | None:
    """The PNG of every chart these tables draw, as the workload's notebook already wrote them
    from these very records (each file newer than every record), or None when any is missing or
    older: then the figures are drawn again."""
    newest = max((Path(r["path"]) / "manifest.json").stat().st_mtime for r in records)
    paths = {name: Path(directory) / f"{name}.png" for name in drawn_charts(workload, tables)}
    if all(path.exists() and path.stat().st_mtime > newest for path in paths.values()):
        return {name: [path] for name, path in paths.items()}
    return None


def tables_only(workload: Any, runs_root: Path) -> Outputs:
    """``workload``'s records, frame and tables, no chart drawn: what a decision cell, a
    comparison or a generated line reads (drawing every chart was most of their time)."""
    records = load_records(workload.name, runs_root)
    frame = workload.frame(records)
    return Outputs(workload, records, frame, workload.tables(frame))


def build_outputs(workload: Any, runs_root: Path, figures_dir: Path | None = None,
                  tables_dir: Path | None = None, figure_formats: Sequence[str] | None = None,
                  reuse_figures: bool = False) -> Outputs:
    """``workload``'s frame, tables and figures from the records under ``runs_root``; tables and
    figures are written only where a directory is given (showing committed results writes
    nothing), and only when there are records; figures as ``figure_formats`` (None: PNG and SVG).
    ``reuse_figures``: where the notebook already wrote every PNG from these records
    (``written_figures``), they are used as written and nothing is drawn (the report: a second
    draw of every figure was a third of its time)."""
    records = load_records(workload.name, runs_root)
    frame = workload.frame(records)
    tables = workload.tables(frame)
    reused = written_figures(workload, tables, records, figures_dir) if reuse_figures and records and figures_dir else None
    if reused is not None:
        outputs = Outputs(workload, records, frame, tables, figure_paths=reused)
        if tables_dir is not None:
            write_tables(workload.name, tables, tables_dir)
        return outputs
    stamp = stamp_text(records) if records else None
    outputs = Outputs(workload, records, frame, tables, draw_charts(workload, tables, stamp))
    if not records:  # nothing measured: no empty tables over files another run wrote
        return outputs
    if figures_dir is not None:
        outputs.figure_paths = save_figures(outputs.figures, figures_dir, figure_formats)
        remove_stale(Path(figures_dir), workload.name, set(outputs.figures), (".png", ".svg"))
    if tables_dir is not None:
        write_tables(workload.name, tables, tables_dir)
    return outputs
