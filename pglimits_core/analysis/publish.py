"""Everything generated from the committed run records, in one place: what ``pglimits results``
(and ``make results`` / ``make figures``) runs.

The order is the dependency order, so no module below this one imports it or another upward:
each workload's tables and figures first (``outputs``, through ``readme_results.results_block``),
then what is read across workloads from them (the decision matrix, the two scoreboards, the
extensions table), then the text that quotes those (docs/RESULTS.md's block, README.md's headline
and answer, docs/USAGE.md's time table) and last the self-contained report per machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pglimits_core.analysis import answer, extensions, headline, readme_results
from pglimits_core.analysis.capacity_figure import write_capacity_figure
from pglimits_core.analysis.decision import committed_cells, matrix_table, write_matrix
from pglimits_core.analysis.report import write_committed_reports
from pglimits_core.analysis.scoreboard import write_scoreboard
from pglimits_core.analysis.seed_scoreboard import write_committed as write_seed_scoreboard
from pglimits_core.config import PROJECT_ROOT, StudyPaths, figures_dir, results_dir
from pglimits_core.record.export import (
    committed_host,
    committed_hosts,
    export_notebooks,
    export_runs,
)

README = PROJECT_ROOT / "README.md"


def export(profile: str, only: Sequence[str] = (), runs: Path | None = None,
           executed: Path | None = None) -> list[str]:
    """Copy a sitting's finished records (default ``data/runs/<profile>``) and executed notebooks
    into ``data/results/<this machine>/<profile>/`` (``only``: those studies' alone, the rest
    kept); returns what it did, one line each."""
    lines = [export_runs(profile, runs, only)]
    copied = export_notebooks(profile, executed, only)
    return lines + [f"executed notebooks exported: {', '.join(copied) or 'none'}"]


def tables_and_figures(profile: str, host: str | None = None) -> None:
    """Every workload's committed tables and figures, recomputed from its committed records
    (``make figures``: README.md and docs untouched)."""
    readme_results.results_block(profile, host, write=True)


def publish(profile: str, host: str | None = None) -> list[Path]:
    """Every generated file from the committed records (``make results``); returns the reports."""
    readme_results.update_readme(readme_results.results_block(profile, host))  # tables and figures too
    cells = committed_cells(profile, host)
    matrix = matrix_table(cells)
    write_matrix(matrix, results_dir())
    extensions.write(extensions.committed_comparison(profile, host), results_dir())
    machines = ", ".join(sorted(set(matrix.machine))) if not matrix.empty else ""
    write_scoreboard(matrix, figures_dir(), stamp=f"profile {profile}; records from {machines}")
    write_capacity_figure(cells, figures_dir(), stamp=f"profile {profile}; records from {machines}")
    write_seed_scoreboard(profile, figures_dir(), host)
    readme_results.update_readme(headline.headline_block(matrix), README, headline.START, headline.END)
    readme_results.update_readme(answer.answer_block(profile), README, answer.START, answer.END)
    readme_results.update_readme(readme_results.time_block(profile, host), readme_results.USAGE_DOC,
                                 readme_results.TIME_START, readme_results.TIME_END)
    return write_committed_reports(profile, host)


def report_paths(profile: str, host: str | None = None) -> list[Path]:
    """The committed reports there are: ``host``'s, else every machine's (sorted by machine id)."""
    hosts = [committed_host(profile, host)] if host else committed_hosts(profile)
    return [path for name in hosts if (path := StudyPaths.committed(profile, name).report).exists()]
