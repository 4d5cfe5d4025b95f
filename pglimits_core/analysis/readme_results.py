"""The generated parts of README.md and docs/RESULTS.md, from committed run records — never typed.

``make study PROFILE=full`` runs the study; ``pglimits results export`` copies its runs into
``data/results/<host-id>/full/runs`` and rewrites every generated file (``analysis.publish``).
This module holds the text blocks and the rewriting between markers: docs/RESULTS.md's results
block — per workload of the registry, the hardware line, its own headline lines
(``Workload.readme_lines``), its figures, and links to the full tables and report — and
docs/USAGE.md's table of where the committed study's time went.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

from pglimits_core.analysis.outputs import build_outputs, drawn_charts, tables_only
from pglimits_core.config import PROJECT_ROOT, StudyPaths, repo_relative
from pglimits_core.errors import PGLimitsError
from pglimits_core.experiments.capacity_summary import capacity_lines
from pglimits_core.record.export import committed_host, committed_hosts
from pglimits_core.registry import workloads

START, END = "<!-- results:start -->", "<!-- results:end -->"
RESULTS_DOC = PROJECT_ROOT / "docs" / "RESULTS.md"
USAGE_DOC = PROJECT_ROOT / "docs" / "USAGE.md"
TIME_START, TIME_END = "<!-- time:start -->", "<!-- time:end -->"
# docs/RESULTS.md links the figures from its own folder
RESULTS_LINK_PREFIX = "../"


def hardware_line(records: list[dict], closing: dict | None = None) -> str:
    """The box in one line, from the newest record; ``closing``: the host facts its study measured
    again as it ended (``runner.closing_host_facts``'s ``end``), when its outcome file has them."""
    manifest = max((r["manifest"] for r in records), key=lambda m: m["run_id"])
    host = manifest.get("host", {})
    fsync, git = host.get("fsync_8k", {}), manifest.get("git", {})
    # a run from a modified tree says so: the sha alone would claim code it did not run
    dirty = " with uncommitted changes" if git.get("dirty") else ""
    return (f"{host.get('cpu_model', '?')}, {host.get('logical_cores', '?')} vCPU {placement_words(records)}, "
            f"{host.get('ram_total_bytes', 0) / 2**30:.0f} GiB RAM, fsync of 8 kB "
            f"{fsync_words(fsync, (closing or {}).get('fsync_8k'))}; git {str(git.get('sha'))[:10]}{dirty}")


def placement_words(records: list[dict]) -> str:
    """Where the servers and the load ran, from the records' ``placement`` (records without one,
    drills and records from before placement was recorded, say nothing); none at all: every core
    was shared."""
    counts = Counter(_one_placement(p) for r in records if (p := r["manifest"].get("placement")))
    if not counts:
        return "shared by clients and servers"
    if len(counts) == 1:
        return next(iter(counts))
    if len(counts) > 2:
        return "in mixed placements (see each record)"
    # the records of one placement, then the few of the other (the placement experiment's)
    return "; ".join(f"{words} ({n} record{'s' if n != 1 else ''})" for words, n in counts.most_common())


def _one_placement(placement: dict) -> str:
    if placement.get("client_and_server_share_cores", True):
        return "shared by clients and servers"
    return (f"split: servers on CPU {','.join(map(str, placement['server_cpus']))}, "
            f"load on CPU {','.join(map(str, placement['load_cpus']))}")


#: two measurements of one host fact further apart than this factor are both shown: the box was
#: disturbed during one of them, and either alone would be quoted as the box's
HOST_FACT_SPREAD = 2.0


def fsync_words(first: dict, again: dict | None = None) -> str:
    """``median X µs (measured at HH:MM UTC)``; with a second measurement (the study's end) more
    than ``HOST_FACT_SPREAD`` times apart, both. A record without a time stamp: ``median X µs``."""
    words = f"median {first.get('median_us', float('nan')):.0f} µs{_measured_at(first)}"
    if not again or again.get("median_us") is None or not first.get("median_us"):
        return words
    ratio = again["median_us"] / first["median_us"]
    if max(ratio, 1 / ratio if ratio else float("inf")) <= HOST_FACT_SPREAD:
        return words
    return f"{words}, {again['median_us']:.0f} µs{_measured_at(again)} (the two differ more than {HOST_FACT_SPREAD:.0f}×)"


def _measured_at(fact: dict) -> str:
    stamp = fact.get("measured_at")
    if not stamp:
        return ""
    return f" (measured at {dt.datetime.fromisoformat(stamp).astimezone(dt.UTC):%H:%M} UTC)"


def results_block(profile: str, host: str | None = None, write: bool = True,
                  link_prefix: str = RESULTS_LINK_PREFIX) -> str:
    """From the *committed* records (``data/results/<host-id>/<profile>/runs``), so a fresh
    clone can regenerate exactly this block: one part per workload with records, in study order,
    each from the machine that has its records (``host``: that machine for every workload).
    ``write`` also regenerates the committed tables and figures the block links."""
    if host and not StudyPaths.committed(profile, host).runs.is_dir():
        raise PGLimitsError(f"no committed runs in {StudyPaths.committed(profile, host).runs}",
                            f"export them: pglimits results export --profile {profile}")
    if not committed_hosts(profile):
        raise PGLimitsError(f"no committed runs for profile {profile!r} under data/results/",
                            f"export them: pglimits results export --profile {profile}")
    lines = [START]
    for workload in workloads():
        if workload.readme_lines is None or not committed_hosts(profile, workload.name):
            continue
        paths = StudyPaths.committed(profile, committed_host(profile, host, nearest=True, study=workload.name))
        lines += workload_lines(workload, profile, paths, write, link_prefix)
    return "\n".join([*lines, END])


def workload_lines(workload, profile: str, paths: StudyPaths, write: bool = True, link_prefix: str = "") -> list[str]:
    """Heading, hardware, the workload's own lines, its figures. Tables and figures are
    recomputed into the committed places, so the block and the files agree."""
    # written: drawn and saved; only read (a test comparing the block): the charts' names suffice
    outputs = build_outputs(workload, paths.runs, paths.figures, paths.tables) if write else \
        tables_only(workload, paths.runs)
    if not outputs.records:
        return []
    figures = list(outputs.figures) if write else drawn_charts(workload, outputs.tables)
    results = repo_relative(paths.tables.parent)
    links = f"Full tables: `{results}/tables/`; report: `{results}/report.html`."
    hardware = hardware_line(outputs.records, closing_facts(paths.runs, workload.name))
    lines = [f"### {workload.title} results (profile `{profile}`, machine `{paths.runs.parent.parent.name}`, "
             "generated from its run records)", "", f"Hardware: {hardware}.", ""]
    failed = failed_line(outputs.records)
    lines += [failed, ""] if failed else []
    lines += capacity_lines(outputs.tables, workload.capacity_unit)  # the headline first, the same for every workload
    lines += workload.readme_lines(outputs.tables, links)
    captions = {chart.name: chart.caption for chart in workload.charts}
    return lines + [line for name in figures
                    for line in (f"![{name}]({link_prefix}{repo_relative(paths.figures)}/{name}.png)",
                                 *(["", f"*{captions[name]}*", ""] if captions.get(name) else []))]


def failed_line(records: list[dict]) -> str | None:
    """The points whose run failed, by reason: their tables count k of n runs, and a reader of the
    block must see why a run is missing without opening the report."""
    failed = [r["manifest"] for r in records if r["manifest"].get("status") == "failed"]
    if not failed:
        return None
    by_reason: dict[str, list[str]] = {}
    for manifest in failed:
        reason = (manifest.get("error") or "no error recorded").split(":")[0]
        by_reason.setdefault(reason, []).append(_point_name(manifest["params"]))
    parts = [f"{len(points)} × {reason} ({', '.join(sorted(set(points)))})" for reason, points in by_reason.items()]
    return (f"**Failed runs: {len(failed)} of {len(records)}**, left out of every table (their points show k of n "
            f"runs): {'; '.join(parts)}. Each error in full: the report's \"What could not be run, and why\".")


def _point_name(params: dict) -> str:
    """``experiment variant @N`` for a failed run (N: its consumers or clients, when it has them)."""
    count = params.get("consumers") or params.get("clients")
    return f"{params.get('experiment')} {params.get('variant')}" + (f" @{count}" if count else "")


def closing_facts(runs: Path, study: str) -> dict | None:
    """The host facts a study measured as it ended (its outcome file's ``host_facts.end``);
    None for a study whose outcome file predates them."""
    from pglimits_core.studies.study import read_outcome

    return ((read_outcome(runs, study) or {}).get("host_facts") or {}).get("end")


def update_readme(block: str, readme: Path = RESULTS_DOC, start: str = START, end: str = END) -> None:
    """Replace the text between ``start`` and ``end`` (the markers are the block's own first and
    last lines); a file without them gets the block appended under a Results heading."""
    text = readme.read_text()
    if start in text:
        before, rest = text.split(start, 1)
        text = before + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n## Results\n\n" + block + "\n"
    readme.write_text(text)


def time_block(profile: str, host: str | None = None) -> str:
    """Where the committed study's time went, per workload and experiment (``studies.timing``)."""
    from pglimits_core.studies.timing import committed_time_table

    runs = {w.name: StudyPaths.committed(profile, committed_host(profile, host, nearest=True, study=w.name)).runs
            for w in workloads() if committed_hosts(profile, w.name)}
    return "\n".join([TIME_START, committed_time_table(runs), TIME_END])
