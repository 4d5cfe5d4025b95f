"""The study report: run records -> hardware, versions, tuning ledger, headline tables, figures,
what could not be run, and the seeds' headline ratios beside ours -> one self-contained HTML.

Reads only run records (``manifest.json`` / ``summary.json``) and the profile (to know what was
planned); never a notebook's outputs, so the report can be rebuilt from ``data/runs`` alone.
"""

from __future__ import annotations

import html
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd

from pglimits_core.analysis.decision import matrix_table, workload_cells
from pglimits_core.analysis.findings import CAPTIONS, findings_section
from pglimits_core.analysis.outputs import merged_stamp, stamp_text
from pglimits_core.config import StudyPaths, current_host_id, results_dir
from pglimits_core.plotting import html_report
from pglimits_core.plotting.html_report import Section
from pglimits_core.record.records import load_records
from pglimits_core.record.rundir import PARTIAL_SUFFIX
from pglimits_core.registry import figure_captions
from pglimits_core.studies.status import executed_dir, require_complete

GIB = 1024 ** 3


def _distinct(records: list[dict[str, Any]], getter) -> str:
    """All distinct values across runs, so a study spread over two boxes cannot hide it."""
    values = sorted({str(getter(r["manifest"])) for r in records})
    return " | ".join(values) if values else "—"


def hardware_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """CPU, cores, RAM, disk, fsync latency measured on the box, and core sharing."""
    def host(key, default=None):
        return lambda m: m.get("host", {}).get(key, default)

    def disk(m):
        fs = m.get("host", {}).get("filesystem", {})
        kind = "rotational" if fs.get("rotational") else "non-rotational"
        return f"{fs.get('device', '?')} {fs.get('fstype', '')} ({kind} per the kernel), " \
               f"{(fs.get('total_bytes') or 0) / GIB:,.0f} GiB"

    def fsync(m):
        f = m.get("host", {}).get("fsync_8k") or {}
        return f"median {f.get('median_us', float('nan')):.0f} µs, p99 {f.get('p99_us', float('nan')):.0f} µs " \
               f"({f.get('method', 'not measured')}, n={f.get('n', 0)})"

    facts = {"CPU model": host("cpu_model"), "logical cores": host("logical_cores"),
             "physical cores": host("physical_cores"), "CPU quota (cgroup)": host("cgroup_cpu_max"),
             "RAM": lambda m: f"{(host('ram_total_bytes', 0)(m) or 0) / GIB:.1f} GiB",
             "disk": disk, "fsync 8 kB (measured on the box)": fsync, "OS": host("os"),
             # the placement says it where the record has one (the CPU block's flag judges a shared box)
             "client and server share cores": lambda m: (m.get("placement") or {}).get(
                 "client_and_server_share_cores", m.get("cpu", {}).get("client_and_server_share_cores",
                                                                      host("client_server_share_cores")(m))),
             "git commit (dirty tree?)": lambda m: f"{m.get('git', {}).get('sha')} ({m.get('git', {}).get('dirty')})"}
    return pd.DataFrame([{"fact": k, "value": _distinct(records, f)} for k, f in facts.items()])


def server_versions(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Every server these runs measured, its version, extensions and setting fallbacks."""
    rows = {}
    for record in records:
        for name, desc in record["manifest"].get("servers", {}).items():
            settings = desc.get("settings", {})
            rows[(name, desc.get("version"))] = {
                "server": name, "version": desc.get("version"),
                "extensions": ", ".join(f"{k} {v}" for k, v in settings.get("extensions", {}).items()),
                "fallbacks": "; ".join(f"{k}: {v}" for k, v in settings.get("fallbacks", {}).items())}
    return pd.DataFrame(list(rows.values()))


def client_versions(records: list[dict[str, Any]]) -> pd.DataFrame:
    names = sorted({n for r in records for n in r["manifest"].get("client_versions", {})})
    return pd.DataFrame([{"client library": n,
                          "version": _distinct(records, lambda m, n=n: m.get("client_versions", {}).get(n))}
                         for n in names])


def tuning_ledger(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Each server's tuned settings with the reason for each (as the servers described them)."""
    rows = {}
    for record in records:
        for name, desc in record["manifest"].get("servers", {}).items():
            for item in desc.get("settings", {}).get("tuning_ledger", []):
                rows[(name, item.get("key"))] = {"server": name, "key": item.get("key"),
                                                 "value": item.get("value"), "why": item.get("why")}
    return pd.DataFrame(list(rows.values()))


def server_settings(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Full settings each server reported (newest run wins), for the reference appendix."""
    rows = {}
    for record in sorted(records, key=lambda r: r["manifest"]["run_id"]):
        for name, desc in record["manifest"].get("servers", {}).items():
            for key, value in desc.get("settings", {}).items():
                if key not in ("tuning_ledger", "extensions", "fallbacks"):
                    rows[(name, key)] = {"server": name, "setting": key, "value": str(value)}
    return pd.DataFrame(list(rows.values()))


def method_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Per experiment: loop kinds, warmup and measured window, runs and repetitions."""
    rows = []
    for record in records:
        params = record["manifest"].get("params", {})
        phases = params.get("spec", {}).get("phases", [])
        loops = sorted({e.get("loop") for e in (record["summary"] or {}).get("entries", []) if e.get("loop")})
        rows.append({"experiment": params.get("experiment"), "loops": "+".join(loops),
                     "warmup_s": sum(p["duration_s"] for p in phases if p.get("warmup")),
                     "window_s": sum(p["duration_s"] for p in phases if not p.get("warmup")),
                     "point": (params.get("variant"), params.get("consumers"), params.get("rate"))})
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    return frame.groupby(["experiment", "loops", "warmup_s", "window_s"]).agg(
        runs=("point", "size"), repetitions_per_point=("point", lambda p: p.value_counts().max())).reset_index()


def planned_points(profile: str) -> set[tuple[str, str, str]]:
    """(workload, variant label, experiment) of every point the profile asks for — from the same
    ``plan()`` the studies run, so every kind of point (sweeps, searches, drills) is covered."""
    from pglimits_core.profiles import load_profile
    from pglimits_core.registry import workloads

    loaded = load_profile(profile)
    return {(w.name, point.label, point.experiment) for w in workloads() if loaded.section(w.name) is not None
            for point in w.plan(loaded.section(w.name), loaded) if point.recorded}


def not_run_table(records: list[dict[str, Any]], runs_root: Path, profile: str) -> pd.DataFrame:
    """Failed runs (with their error), interrupted runs, and planned points with no complete run."""
    rows = [{"what": f"{m['study']} {m['params'].get('experiment')} {m['params'].get('variant')}", "status": "failed",
             "why": m.get("error") or "no error recorded", "run": m["run_id"]}
            for m in (r["manifest"] for r in records) if m.get("status") == "failed"]
    partial = sorted(runs_root.glob(f"*{PARTIAL_SUFFIX}")) if runs_root.exists() else []
    rows += [{"what": p.name, "status": "interrupted",
              "why": "the run's process stopped before finishing (Ctrl-C or crash); never read as data",
              "run": p.name} for p in partial]
    done = {(r["manifest"]["study"], r["manifest"]["params"].get("variant"), r["manifest"]["params"].get("experiment"))
            for r in records if r["manifest"].get("status") == "complete"}
    planned = planned_points(profile)
    reasons, deaths = study_outcomes(runs_root, planned)
    rows += [{"what": f"{study} {exp} {label}", "status": "missing", "run": "—",
              "why": reasons.get((study, label, exp), NO_OUTCOME_WHY)}
             for study, label, exp in sorted(planned - done)]
    # a failed point of an experiment whose other points ran (e.g. one listener count of several)
    # is not "missing" by experiment and variant: its outcome entry names it
    rows += [{"what": f"{study} {f['experiment']} {f['variant']}", "status": "failed before its record", "run": "—",
              "why": f.get("error") or "no error recorded"}
             for study, f in outcome_failures(runs_root)
             if f.get("experiment") != "run" and (study, f.get("variant"), f.get("experiment")) in done]
    rows += [{"what": f"{study}: server {d['server']}", "status": f"died ({d['how']}) at {d['at']}", "run": "—",
              "why": "restarted; the points after it ran" if d.get("restarted") else d.get("restart_error") or "not restarted"}
             for study, d in deaths]
    return pd.DataFrame(rows, columns=["what", "status", "why", "run"])


NO_OUTCOME_WHY = ("planned by the profile but no complete run record: its server was unavailable "
                  "or the point failed before recording (the workload notebook's outcome table says which)")


def outcome_failures(runs_root: Path) -> list[tuple[str, dict]]:
    """Every study's failed points as its outcome file lists them (one per attempt)."""
    from pglimits_core.registry import names
    from pglimits_core.studies.study import read_outcome

    return [(study, failure) for study in names() for failure in (read_outcome(runs_root, study) or {}).get("failures", [])]


def study_outcomes(runs_root: Path, planned: set[tuple[str, str, str]] = frozenset()
                   ) -> tuple[dict[tuple[str, str, str], str], list[tuple[str, dict]]]:
    """From each study's outcome file: why each failed point failed, why a ``planned`` point
    (study, variant, experiment) its sitting never ran is missing, and the server deaths."""
    from pglimits_core.registry import names
    from pglimits_core.studies.study import read_outcome

    reasons: dict[tuple[str, str, str], str] = {}
    deaths: list[tuple[str, dict]] = []
    for study in names():
        outcome = read_outcome(runs_root, study) or {}
        timed = {(study, t.get("variant"), t.get("experiment")) for t in outcome.get("timings") or []}
        reasons.update(unplanned_then(study, timed, planned))  # a failure's own reason, next, wins
        reasons.update({(study, f["variant"], f["experiment"]): f["error"] for f in outcome.get("failures", [])})
        deaths += [(study, death) for death in outcome.get("deaths", [])]
    return reasons, deaths


NOT_IN_ITS_PLAN = ("not in the plan of the sitting these records come from (the profile asks for it since): "
                   "the workload's next sitting measures it")


def unplanned_then(study: str, timed: set[tuple[str, str, str]],
                   planned: set[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
    """The planned points of ``study`` its sitting never timed (its outcome times every point it
    ran, failed or not): a block that predates an experiment says so, rather than reading as a
    point that failed. Nothing without the sitting's timings (an older outcome file)."""
    if not timed:
        return {}
    return {key: NOT_IN_ITS_PLAN for key in planned if key[0] == study and key not in timed}


def flag_points(table: pd.DataFrame) -> pd.DataFrame:
    """A ``flags`` column first: client-bound, not sustained, lower bound — readable in HTML."""
    if table.empty:
        return table
    checks = {"client-bound": "client_bound", "NOT SUSTAINED": "sustained", "LOWER BOUND (≥)": "lower_bound",
              "backlog ran out": "backlog_ran_out", "depth not held": "depth_not_held"}
    flags = []
    for _, row in table.iterrows():
        marks = [name for name, col in checks.items() if col in row and _flagged(name, row[col])]
        marks += [f"SLO broken: {row['failed']}"] if str(row.get("failed", "")).strip() else []
        flags.append("; ".join(marks))
    return table.assign(flags=flags)[["flags", *table.columns]]


def _flagged(name: str, value: Any) -> bool:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return False
    return not bool(value) if name == "NOT SUSTAINED" else bool(value)


SEED_INTRO = ("The source documents ran on other hardware, so their absolute numbers are not comparable; "
              "the <i>ratio</i> between two systems measured on the same box is. Seed figures are quoted "
              "from <code>docs/SOURCES.md</code>; ours are computed from the tables above.")


DECISION_INTRO = ("Each cell faces the best Postgres design with the dedicated system and is judged by one rule "
                  "on rate (<code>analysis/verdict.py</code>): which side set the limit (the server, the load — "
                  "then the figure is a floor, ≥ — or neither), and a tie band of ×1.25 over the runs' ranges. "
                  "A floor wins only when its worst run beats the other side's best beyond the band; server CPU "
                  "per operation is shown beside a cell, never decides it. An undecided cell reads <i>not "
                  "decided here</i>, with why. The rules are in <code>docs/METHODOLOGY.md</code> (\"How a cell "
                  "is decided\").")


def notebook_link(notebook: str, profile: str, report: Path, committed: bool) -> str | None:
    """A paragraph linking the workload's executed notebook, relative to the report: the committed
    one beside it, or (a report of this machine's run) the one ``run_all.py`` just executed; None
    when there is none. A committed report links only committed files: the same records, the same page."""
    candidates = [report.parent / "notebooks" / f"{notebook}.ipynb"]
    if not committed:
        candidates.append(executed_dir(profile) / f"{notebook}.ipynb")
    for path in candidates:
        if path.is_file():
            href = html.escape(os.path.relpath(path, report.parent))
            return (f"The executed notebook, every table with its charts as the sitting drew them: "
                    f"<a href='{href}'><code>{html.escape(path.name)}</code></a>.")
    return None


def with_notebook_link(sections: list[Section], link: str | None) -> list[Section]:
    """The workload's sections, the first opening on its executed notebook's link (when there is one)."""
    if sections and link:
        sections[0].paragraphs.insert(0, link)
    return sections


def build_sections(profile: str, runs_root: str = "", figures_dir: str = "",
                   tables_dir: str = "", committed: bool = False, report_path: str = "") -> list[Section]:
    """Every section of the report, computed from the profile's run records: per workload of
    the registry its tables and figures (``analysis.outputs``, written once, embedded as written).
    ``committed``: records exported after their sitting finished, whatever this machine's own
    study status says. ``report_path``: where the page goes (its links are relative to it)."""
    from pglimits_core.analysis.outputs import build_outputs
    from pglimits_core.registry import workloads

    if not committed:
        require_complete(profile)  # an interrupted or failed study is not presented as a result
    paths = StudyPaths.for_profile(profile, runs_root, figures_dir, tables_dir, report_path)
    records = load_records(None, paths.runs)
    results, reference, comparisons, notes, cells, extended, stamps = [], [], [], [], [], [], []
    for workload in workloads():
        outputs = build_outputs(workload, paths.runs, paths.figures, paths.tables, reuse_figures=True)
        if outputs.records:
            stamps.append(stamp_text(outputs.records))
            cells += workload_cells(workload, outputs.tables, machine_of(paths.runs), paths.tables)
            extended += workload_cells(workload, outputs.tables, machine_of(paths.runs), paths.tables,
                                       extensions=True)
        if not outputs.records or workload.report_sections is None:
            continue
        shown, kept_for_later = workload.report_sections(outputs.tables, outputs.figure_paths)
        results += with_notebook_link(shown, notebook_link(workload.notebook, profile, paths.report, committed))
        reference += kept_for_later
        if workload.seed_comparison is not None:
            comparisons.append(workload.seed_comparison(outputs.tables))
            notes += workload.seed_notes
    comparison = pd.concat(comparisons, ignore_index=True) if comparisons else pd.DataFrame()
    _write_table(comparison, "report-seed-comparison", paths.tables)
    # Order: the findings, the matrix open, each workload, the sources, what is missing; then how it was made
    findings = findings_section(cells, comparison, paths.runs, paths.figures, merged_stamp(stamps))
    return [*([findings] if findings else []), *decision_sections(cells, extended), *results,
            Section("Beside the source documents (ratios between systems)", [SEED_INTRO, *notes],
                    [("Seed headline figures vs this study", comparison)]),
            Section("What could not be run, and why", tables=[("Failed, interrupted and missing points",
                                                                not_run_table(records, paths.runs, profile))]),
            *how_it_was_made(records, reference)]


def how_it_was_made(records: list[dict[str, Any]], reference: list[Section]) -> list[Section]:
    """The box, the versions, the tuning ledger, the workloads' reference material, then every
    server setting (folded)."""
    return [Section("Hardware", tables=[("The box (from the run manifests)", hardware_table(records)),
                                        ("Method per experiment", method_table(records))]),
            Section("Versions", tables=[("Servers", server_versions(records)),
                                        ("Client libraries", client_versions(records))]),
            Section("Tuning ledger", ["Every non-default setting each server ran with, and why."],
                    [("Tuned settings", tuning_ledger(records))]),
            *reference,
            Section("Full server settings", tables=[("As each server reported them", server_settings(records))],
                    collapsed=True)]


def machine_of(runs: Path) -> str:
    """The machine whose records ``runs`` holds: ``data/results/<host-id>/<profile>/runs`` names
    it; anything else (``data/runs``) was measured here."""
    inside = Path(runs).resolve().is_relative_to(results_dir().resolve())
    return Path(runs).resolve().parent.parent.name if inside else current_host_id()


def decision_sections(cells: list, extended: list = ()) -> list[Section]:
    """The decision matrix first, when the workloads supply cells (``analysis.decision``); then,
    when workloads have Postgres extensions, whether they change its verdicts (``analysis.extensions``)."""
    from pglimits_core.analysis import extensions

    if not cells:
        return []
    matrix = matrix_table(cells)
    sections = [Section("The decision matrix", [DECISION_INTRO], [("One cell per workload × scale × target", matrix)],
                        tables_open=True)]
    if extended:
        compared = extensions.compared(matrix, matrix_table(list(extended)))
        sections.append(Section("Do the Postgres extensions change a verdict?", [extensions.sentence(compared)],
                                [("Each cell, stock PostgreSQL 16 beside PostgreSQL 17 with extensions", compared)]))
    return sections


def _write_table(table: pd.DataFrame, name: str, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    table.to_csv(directory / f"{name}.csv", index=False)
    (directory / f"{name}.md").write_text(table.to_markdown(index=False) if not table.empty else "(no data)\n")


def write_report(sections: list[Section], profile: str, report_path: str = "", generated: str = "") -> Path:
    """The self-contained HTML report (default ``data/results/<host-id>/<profile>/report.html``);
    returns its path. ``generated``: what the page says it was made from (default: now)."""
    path = StudyPaths.for_profile(profile, report_path=report_path).report
    generated = generated or f"generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    intro = (f"Profile <b>{profile}</b>. Every number below is computed from run records "
             f"(<code>manifest.json</code>, <code>summary.json</code>); {generated}.")
    return html_report.write(path, "PGLimits — study report", intro, sections, {**figure_captions(), **CAPTIONS})


def write_committed_reports(profile: str, host: str | None = None) -> list[Path]:
    """The committed reports rebuilt from the committed records (``make results``): one per
    machine with records (``host``: that one's), as records of two machines never share a table."""
    from pglimits_core.record.export import committed_hosts

    return [write_committed_report(profile, name) for name in ([host] if host else committed_hosts(profile))]


def write_committed_report(profile: str, host: str) -> Path:
    """One machine's committed report, dated by its newest record rather than the clock: the same
    records give the same page."""
    paths = StudyPaths.committed(profile, host)
    sections = build_sections(profile, str(paths.runs), str(paths.figures), str(paths.tables), committed=True,
                              report_path=str(paths.report))
    newest = max((p.name.split("-")[0] for p in paths.runs.iterdir() if p.is_dir()), default="")
    when = f"{newest[:4]}-{newest[4:6]}-{newest[6:8]} {newest[9:11]}:{newest[11:13]} UTC" if newest else "no record"
    return write_report(sections, profile, str(paths.report),
                        generated=f"machine <code>{host}</code>, its newest record from {when}")


def section_table(sections: list[Section], title: str) -> pd.DataFrame:
    """The first table of the section called ``title`` (for showing it in the notebook)."""
    section = next(s for s in sections if s.title == title)
    return section.tables[0][1] if section.tables else pd.DataFrame()
