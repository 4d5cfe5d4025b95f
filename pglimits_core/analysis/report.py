"""The study report: run records -> hardware, versions, tuning ledger, headline tables, figures,
what could not be run, and the seeds' headline ratios beside ours -> one self-contained HTML.

Reads only run records (``manifest.json`` / ``summary.json``) and the profile (to know what was
planned); never a notebook's outputs, so the report can be rebuilt from ``data/runs`` alone.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd

from pglimits_core.analysis import queue as queue_tables
from pglimits_core.analysis.queue_consumer_crash import CONSUMER_CRASH_CAPTION
from pglimits_core.analysis.runs import load_records
from pglimits_core.analysis.seed_figures import AGREEMENT_SLACK, comparison_table
from pglimits_core.plotting import html_report
from pglimits_core.plotting.html_report import Section
from pglimits_core.record.rundir import PARTIAL_SUFFIX
from pglimits_core.studies.status import require_complete

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
             "client and server share cores": lambda m: m.get("cpu", {}).get("client_and_server_share_cores",
                                                                             host("client_server_share_cores")(m)),
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


def planned_points(profile: str) -> set[tuple[str, str]]:
    """(variant label, experiment) pairs the profile asks for."""
    from pglimits_core.profiles import load_profile
    from pglimits_core.studies.queue import variant

    queue = load_profile(profile).queue
    labels = [variant(**spec).label for spec in queue.variants]
    sections = {"throughput": queue.throughput, "steady": queue.steady, "latency": queue.latency,
                "cliff": queue.cliff, "consumer_crash": queue.consumer_crash}
    planned = {(label, experiment) for experiment, section in sections.items() if section
               for label in labels if section.includes(label)}
    if queue.recovery:  # a drill may name a variant the sweeps do not run (SQLite OFF)
        planned |= {(label, "recovery") for label in queue.recovery.variants}
    return planned


def not_run_table(records: list[dict[str, Any]], runs_root: Path, profile: str) -> pd.DataFrame:
    """Failed runs (with their error), interrupted runs, and planned points with no complete run."""
    rows = [{"what": f"{m['params'].get('experiment')} {m['params'].get('variant')}", "status": "failed",
             "why": m.get("error") or "no error recorded", "run": m["run_id"]}
            for m in (r["manifest"] for r in records) if m.get("status") == "failed"]
    partial = sorted(runs_root.glob(f"*{PARTIAL_SUFFIX}")) if runs_root.exists() else []
    rows += [{"what": p.name, "status": "interrupted",
              "why": "the run's process stopped before finishing (Ctrl-C or crash); never read as data",
              "run": p.name} for p in partial]
    done = {(r["manifest"]["params"].get("variant"), r["manifest"]["params"].get("experiment"))
            for r in records if r["manifest"].get("status") == "complete"}
    rows += [{"what": f"{exp} {label}", "status": "missing", "run": "—",
              "why": "planned by the profile but no complete run record: its server was unavailable "
                     "or the point failed before recording (the workload notebook's outcome table says which)"}
             for label, exp in sorted(planned_points(profile) - done)]
    return pd.DataFrame(rows, columns=["what", "status", "why", "run"])


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


def _fresh_figures(directory: Path, since: float) -> list[Path]:
    """PNGs written by this report run (older files belong to another profile or run)."""
    return sorted(p for p in directory.glob("queue-*.png") if p.stat().st_mtime >= since - 1)


CLIENT_BOUND_NOTE = ("Every table carries each variant's <b>durability class</b> (fsync per commit / periodic / "
                     "none) and is grouped by it: compare variants within a class, since a class promises more "
                     "than the next. Flags: <span class='flag'>client-bound</span> = the load generator, not the "
                     "server, ran out of CPU (the point is a floor for the server); a blank (—) client-bound "
                     "cell means the verdict does not apply (SQLite: its engine runs inside the client) or was "
                     "not recorded; <span class='flag'>NOT SUSTAINED</span> = achieved/consumed below 95 % of "
                     "offered (its latency is not a claim at that rate); <span class='flag'>LOWER BOUND (≥)</span> "
                     "= every run of the point had its consumers wait on something else — a burn-down that "
                     "emptied its prefill inside the window (<span class='flag'>backlog ran out</span>) or a "
                     "steady-state point whose producers never reached the target depth (<span class='flag'>"
                     "depth not held</span>, producer-bound) — so the consumers can do at least that rate. "
                     "<code>runs</code> counts the runs behind the number, <code>runs_recorded</code> every run "
                     "of the point. End-to-end latency runs from each message's intended send time to its claim.")

CAPTIONS = {"throughput": "Throughput per consumer count (closed-loop burn-down, median over repetitions)",
            "steady": "Steady state per consumer count (producers hold a target depth; ≥ = producer-bound)",
            "latency": "Latency at matched offered rates (open loop; enqueue from the intended start, "
                       "end to end from the intended send time to the claim)",
            "cliff": "The cliff: highest sustainable rate and the first rate that failed",
            "cliff_points": "Every rate-search probe",
            "recovery": "Crash drill per variant: median and range over the drills. SIGKILL keeps the OS page "
                        "cache, so 0 lost does not separate durability classes (an OS crash would)",
            "consumer_crash": CONSUMER_CRASH_CAPTION}
REFERENCE_CAPTIONS = {
    "resources": "Resources per latency run. Consumers back off 1 ms after each empty claim (an idle poll): "
                 "at low rates most consumer CPU is polling, so CPU µs per message includes it — read it "
                 "beside idle_polls_per_s and idle_polls_per_msg. SQLite busy waits are summed over the load "
                 "workers.",
    "recovery_drills": "Every crash drill (one row per drill)"}


def _seed_paragraphs() -> list[str]:
    return ["The source documents ran on other hardware, so their absolute numbers are not comparable; "
            "the <i>ratio</i> between two systems measured on the same box is. Seed figures are quoted from "
            "<code>docs/SOURCES.md</code>; ours are computed from the tables above, <b>both sides from one durability "
            "class</b> (one row per class measured on both sides; e.g. SQLite <code>synchronous=FULL</code> "
            "vs Postgres <code>synchronous_commit=on</code> at per-commit durability). The seed's own "
            "durability is quoted beside it. Verdict: <b>agree</b> when our ratio lies within the seed's "
            f"range widened ×{AGREEMENT_SLACK} each way; <b>same direction, different size</b> when the same "
            "system wins; <b>differ</b> when the other one does, or when one of ours did not sustain the rate "
            "the seed measured both at (the reason is stated); <b>not compared</b> when no durability class "
            "was measured on both sides (the ratio is then shown as context only). The seed's Redis "
            "baseline was pipelined, so ours is the pipelined variant. Latency pairs use the seed's offered "
            "rate; a pair measured only at another rate is shown for context and judged <b>not "
            "comparable</b>."]


def queue_sections(tables: dict[str, pd.DataFrame], figures: list[Path]) -> list[Section]:
    headline = [(CAPTIONS[k], flag_points(tables[k])) for k in CAPTIONS if k in tables]
    extra = [(REFERENCE_CAPTIONS.get(k, f"queue {k}"), flag_points(t)) for k, t in tables.items() if k not in CAPTIONS]
    return [Section("Queue: headline tables", [CLIENT_BOUND_NOTE], headline),
            Section("Queue: figures", figures=figures),
            Section("Queue: resources, Postgres health, every crash drill", tables=extra, collapsed=True)]


def build_sections(profile: str, runs_root: str = "", figures_dir: str = "",
                   tables_dir: str = "") -> list[Section]:
    """Every section of the report, computed from the profile's run records."""
    from pglimits_core.config import profile_figures_dir, profile_runs_dir

    require_complete(profile)  # an interrupted or failed study is not presented as a result
    root = profile_runs_dir(profile, runs_root)
    records = load_records("queue", root)
    started = time.time()
    tables = queue_tables.queue_report(profile, runs_root, figures_dir, tables_dir)
    figures = _fresh_figures(Path(figures_dir) if figures_dir else profile_figures_dir(profile), started)
    comparison = comparison_table(tables)
    headline, figure_section, reference = queue_sections(tables, figures)
    _write_table(comparison, "report-seed-comparison", tables_dir, profile)
    # Order: what the numbers are and what they mean first; long reference material (the
    # ledger, resources, full settings) after the figures so a reader meets the results early.
    return [Section("Hardware", tables=[("The box (from the run manifests)", hardware_table(records)),
                                        ("Method per experiment", method_table(records))]),
            Section("Versions", tables=[("Servers", server_versions(records)),
                                        ("Client libraries", client_versions(records))]),
            headline, figure_section,
            Section("Beside the source documents (ratios between systems)", _seed_paragraphs(),
                    [("Seed headline figures vs this study", comparison)]),
            Section("What could not be run, and why", tables=[("Failed, interrupted and missing points",
                                                                not_run_table(records, root, profile))]),
            Section("Tuning ledger", ["Every non-default setting each server ran with, and why."],
                    [("Tuned settings", tuning_ledger(records))]),
            reference,
            Section("Full server settings", tables=[("As each server reported them", server_settings(records))],
                    collapsed=True)]


def _write_table(table: pd.DataFrame, name: str, tables_dir: str, profile: str) -> None:
    from pglimits_core.config import profile_results_dir

    directory = Path(tables_dir) if tables_dir else profile_results_dir(profile) / "tables"
    directory.mkdir(parents=True, exist_ok=True)
    table.to_csv(directory / f"{name}.csv", index=False)
    (directory / f"{name}.md").write_text(table.to_markdown(index=False) if not table.empty else "(no data)\n")


def write_report(sections: list[Section], profile: str, report_path: str = "") -> Path:
    """The self-contained HTML report (default ``data/results/<host-id>/<profile>/report.html``);
    returns its path."""
    from pglimits_core.config import profile_results_dir

    path = Path(report_path) if report_path else profile_results_dir(profile) / "report.html"
    intro = (f"Profile <b>{profile}</b>. Every number below is computed from run records "
             f"(<code>manifest.json</code>, <code>summary.json</code>); generated "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.")
    return html_report.write(path, "PGLimits — study report", intro, sections)


def section_table(sections: list[Section], title: str) -> pd.DataFrame:
    """The first table of the section called ``title`` (for showing it in the notebook)."""
    section = next(s for s in sections if s.title == title)
    return section.tables[0][1] if section.tables else pd.DataFrame()
