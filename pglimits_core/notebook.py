"""What a workload notebook calls: measure (or not), then every table with its charts under it.

Opened by hand, a notebook shows the committed full-profile results of this machine (or of the
nearest machine that has some, and says so) in seconds, measuring nothing; ``measure=True``
(what ``run_all.py`` and papermill pass) runs the study first and writes its tables and figures.

    view = notebook.open_study("queue", profile="full")  # committed results
    view.show("throughput")        # the table as the report formats it, its chart(s) under it
    view.tables["throughput"]      # the same table as a DataFrame
    view.frame                     # every run as a tidy DataFrame
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from pglimits_core.analysis.outputs import Outputs, build_outputs
from pglimits_core.analysis.runs import versions_table
from pglimits_core.config import StudyPaths, current_host_id
from pglimits_core.plotting.html_report import formatted_table
from pglimits_core.profiles import load_profile
from pglimits_core.record.export import committed_host
from pglimits_core.registry import workload
from pglimits_core.studies.study import Outcome, run_workload


@dataclass
class StudyView:
    outputs: Outputs
    paths: StudyPaths
    source: str  # what the tables describe: measured now, or whose committed records
    outcome: Outcome | None = None

    @property
    def frame(self) -> pd.DataFrame:
        return self.outputs.frame

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        return self.outputs.tables

    def show(self, key: str) -> None:
        """Table ``key`` formatted as the report shows it, then each chart drawn from it (the raw
        DataFrame: ``view.tables[key]``)."""
        from IPython.display import HTML, display

        display(HTML(formatted_table(self.outputs.tables.get(key, pd.DataFrame()))))
        for figure in self.outputs.charts_of(key):
            display(figure)

    def servers(self) -> pd.DataFrame:
        """The versions of the servers these records measured (from their manifests)."""
        return versions_table(self.outputs.records)

    def not_run(self) -> pd.DataFrame:
        """What this run could not measure and why (unavailable servers, failed points)."""
        return outcome_table(self.outcome)


def outcome_table(outcome: Outcome | None) -> pd.DataFrame:
    """Unavailable servers, failed points and failed runs, with their reasons — never hidden."""
    if outcome is None:
        return pd.DataFrame(columns=["what", "reason"])
    rows = [{"what": f"server {name}", "reason": reason} for name, reason in outcome.unavailable.items()]
    rows += [{"what": f"server {d['server']} died ({d['how']}) at {d['at']}",
              "reason": "restarted" if d["restarted"] else d["restart_error"] or "not restarted"}
             for d in outcome.deaths]
    rows += [{"what": f"{f['experiment']} {f['variant']}", "reason": f["error"]} for f in outcome.failures]
    rows += [{"what": f"run {r.path.name}", "reason": r.error} for r in outcome.runs if r.status != "complete"]
    return pd.DataFrame(rows, columns=["what", "reason"])


def open_study(name: str, profile: str = "full", measure: bool = False, resume: bool = False,
               runs_root: str = "", figures_dir: str = "", tables_dir: str = "",
               progress: bool = True) -> StudyView:
    """Measure ``name``'s study for ``profile`` (``measure``) and show its records, or show
    records already there: ``runs_root`` if given, else the committed ones (nothing written)."""
    chosen: Any = workload(name)
    if measure or runs_root:
        paths = StudyPaths.for_profile(profile, runs_root, figures_dir, tables_dir)
        outcome = run_workload(chosen, profile, paths.runs, progress, resume) if measure else None
        write = measure or figures_dir or tables_dir
        outputs = build_outputs(chosen, paths.runs, paths.figures if write else None,
                                paths.tables if write else None, load_profile(profile).figure_formats)
        source = f"measured now, profile {profile}" if measure else f"the records in {paths.runs}"
        return StudyView(outputs, paths, source, outcome)
    host = committed_host(profile, nearest=True, study=chosen.name)
    paths = StudyPaths.committed(profile, host)
    whose = "this machine" if host == current_host_id() else \
        f"not this machine ({current_host_id()}): the nearest with committed results"
    source = f"the committed {profile}-profile results of {host} ({whose}); set measure = True to measure"
    print(f"Showing {source}.")
    return StudyView(build_outputs(chosen, paths.runs), paths, source)
