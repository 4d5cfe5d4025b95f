"""The README's answer: the decision matrix in brief, generated from the committed records.

The full matrix (``analysis.decision``: both sides' designs, spreads, server CPU per operation,
the table behind each cell) is a wide table for the report and ``data/results/``; a reader
opening the repository wants one screen: per workload, each scale's verdict, the two figures,
the margin and what decided it. This module renders that screen between two markers in
README.md; ``analysis.readme_results`` writes it, and a unit test keeps it equal to what the
committed records give.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pandas as pd

from pglimits_core.analysis.decision import committed_cells, matrix_table
from pglimits_core.analysis.seed_scoreboard import committed_comparison, count_sentence
from pglimits_core.config import StudyPaths, repo_relative
from pglimits_core.record.export import committed_hosts

START, END = "<!-- answer:start -->", "<!-- answer:end -->"
MATRIX_LINK = "data/results/decision-matrix.md"
SCOREBOARD_LINK = "figures/decision-scoreboard.png"
SEED_LINK = "figures/seed-scoreboard.png"
# matrix column -> the brief table's heading: five columns that fit a README's width; the
# designs' spreads, server CPU per operation and the deciding class are in the full matrix
BRIEF = {"scale": "where", "target": "target", "postgres_figure": "Postgres", "dedicated_figure": "dedicated",
         "verdict": "verdict"}
#: every capacity target's windows, said once under the tables instead of in every row
HELD = " (held over 30-s windows)"


def brief_table(cells: pd.DataFrame) -> pd.DataFrame:
    """One workload's cells as the brief columns: the design names go into the figures, the
    verdict is the matrix's shortened to who is ahead and by how much (``headline.short_verdict``)."""
    from pglimits_core.analysis.headline import short_verdict

    shown = cells.copy()
    shown["postgres_figure"] = _named(shown["postgres"], shown["postgres_figure"])
    shown["dedicated_figure"] = _named(shown["dedicated"], shown["dedicated_figure"])
    shown["scale"] = shown["scale"].astype(str).str.removeprefix("capacity, ")
    shown["target"] = shown["target"].astype(str).str.replace(HELD, "", regex=False)
    shown["verdict"] = [short_verdict(verdict, margin) for verdict, margin in zip(shown["verdict"], shown["margin"],
                                                                                  strict=True)]
    return shown[list(BRIEF)].rename(columns=BRIEF)


def _named(designs: pd.Series, figures: pd.Series) -> list[str]:
    return [figure if design == "—" else f"{design}: {figure}" for design, figure in zip(designs, figures, strict=True)]


EXTENSIONS_LINK = "data/results/decision-matrix-extensions.md"
#: a workload's first cells the README shows (its headline ones come first); the rest are in the
#: matrix file, so the first screen stays a screen (18 interference cells made 164 lines)
BRIEF_ROWS = 6


def answer_markdown(table: pd.DataFrame, seeds: pd.DataFrame | None = None, extensions: str = "",
                    notebooks: dict[tuple[str, str], str] | None = None) -> str:
    """The decision scoreboard and a line counting the source studies' claims by agreement, linking
    their picture (``seeds``: the rows of the seed comparison), then per workload (in study order)
    the machine, the executed notebook its records came with (``notebooks``: by workload and
    machine) and its brief table, then the link to all."""
    if table.empty:
        return "No workload has committed records yet: run `make study PROFILE=full`, then `make results`."
    parts = [f"![every cell of the decision matrix, coloured by its verdict]({SCOREBOARD_LINK})"]
    if seeds is not None and not seeds.empty:  # the figure is written only then (``seed_scoreboard``)
        # the claims' picture is a screen tall: the README links it, the report shows it
        parts.append(f"{count_sentence(seeds)[:-1]} ([each claim, both ratios]({SEED_LINK})).")
    parts.append("")
    for (workload, machine), cells in table.groupby(["workload", "machine"], sort=False):
        more = (f"; {len(cells) - BRIEF_ROWS} more {workload} cells, in the order the matrix gives them: "
                f"[`{MATRIX_LINK}`]({MATRIX_LINK})") if len(cells) > BRIEF_ROWS else ""
        notebook = (notebooks or {}).get((str(workload), str(machine)))
        opened = f"; [its executed notebook]({notebook})" if notebook else ""
        parts += [f"**{workload}** (measured on `{machine}`{opened}{more})", "",
                  brief_table(cells.head(BRIEF_ROWS)).to_markdown(index=False), ""]
    with_extensions = f" {extensions} Each such cell: [`{EXTENSIONS_LINK}`]({EXTENSIONS_LINK})." if extensions else ""
    parts.append("A target's rate held over three steady 30-s windows. \"dedicated ×r\": the dedicated system ahead, "
                 "its figure ×r Postgres's and its lowest reading above the other's highest by ×1.25 (\"≥\": a floor, "
                 "where its load generator was the limit); \"not decided\": the matrix says why. "
                 f"Every cell with its full verdict, both sides' spreads, server CPU per operation and the table behind it: "
                 f"[`{MATRIX_LINK}`]({MATRIX_LINK}); how a cell is decided: "
                 f"[docs/METHODOLOGY.md](docs/METHODOLOGY.md#how-a-cell-is-decided).{with_extensions}")
    return "\n".join(parts)


def provenance_line(runs_dirs: dict[str, Path]) -> str:
    """Which machine and commit every cell comes from, and the wall-clock span of its run, read
    from the committed manifests (run ids start with their UTC start time). Workloads measured in
    different sittings (another commit) are named block by block; more than one machine or commit
    is said as such: cells from different ones must not be compared."""
    sources = [source for host, runs in runs_dirs.items() if (source := _source(host, runs))]
    if not sources:
        return ""
    mixed = len(sources) > 1 or any(len(shas) > 1 for _, shas in sources)
    return ("Every cell below comes from " + "; ".join(text for text, _ in sources) + "."
            + (" Records from more than one machine or commit: compare cells only within one." if mixed else ""))


def _source(host: str, runs: Path) -> tuple[str, list[str]] | None:
    manifests = [json.loads(path.read_text()) for path in sorted(runs.glob("*/manifest.json"))]
    if not manifests:
        return None
    blocks = _blocks(manifests)
    shas = sorted({sha for block_shas, _ in blocks for sha in block_shas})
    if len(blocks) == 1:
        return f"machine `{host}`, {_span(blocks[0][0], manifests)}{_not_run(runs)}", shas
    said = "; ".join(f"{_names(studies)} at {_span(block_shas, [m for m in manifests if _study(m) in studies])}"
                     for block_shas, studies in blocks)
    return f"machine `{host}`: {said}{_not_run(runs)}", shas


def _study(manifest: dict) -> str:
    return str(manifest.get("study") or manifest["run_id"].split("-")[1])


def _blocks(manifests: list[dict]) -> list[tuple[tuple[str, ...], list[str]]]:
    """The workloads grouped by the commits their records come from (a sitting per block), in
    order of their first record."""
    commits: dict[str, set[str]] = {}
    for manifest in manifests:
        commits.setdefault(_study(manifest), set()).add(_commit(manifest.get("git", {})))
    blocks: dict[tuple[str, ...], list[str]] = {}
    first = {study: min(m["run_id"] for m in manifests if _study(m) == study) for study in commits}
    for study in sorted(commits, key=first.get):
        blocks.setdefault(tuple(sorted(commits[study])), []).append(study)
    return list(blocks.items())


def _names(studies: list[str]) -> str:
    return studies[0] if len(studies) == 1 else f"{', '.join(studies[:-1])} and {studies[-1]}"


def _span(shas: tuple[str, ...] | list[str], manifests: list[dict]) -> str:
    """"commit `abc1234`: 802 run records (802 complete) from ... to ... UTC (88 min ...)"."""
    starts = sorted(m["run_id"][:16] for m in manifests)
    first, last = (datetime.strptime(stamp, "%Y%m%dT%H%M%SZ") for stamp in (starts[0], starts[-1]))
    until = f"{last:%H:%M}" if last.date() == first.date() else f"{last:%Y-%m-%d %H:%M}"
    return (f"commit{'s' if len(shas) > 1 else ''} {', '.join(shas)}: {len(manifests):,} run records "
            f"({_statuses(manifests)}) from {first:%Y-%m-%d %H:%M} to {until} UTC "
            f"({(last - first).total_seconds() / 60:.0f} min from the first record's start to the last's)")


def _statuses(manifests: list[dict]) -> str:
    """"807 complete, 1 failed": the records by status, so a failed one is never counted as a result."""
    found: dict[str, int] = {}
    for manifest in manifests:
        found[str(manifest.get("status"))] = found.get(str(manifest.get("status")), 0) + 1
    return ", ".join(f"{n:,} {status}" for status, n in sorted(found.items(), key=lambda item: -item[1]))


def _not_run(runs: Path) -> str:
    """The planned points that failed before any record was written (each study's outcome file),
    named with their experiment and the start of their error: "; not run: 3 pubsub idle_listeners
    pg_notify batch=1 points (postgres max_connections=200 leaves no room ...)"."""
    said = []
    for outcome in sorted(runs.glob("*.outcome.json")):
        grouped: dict[tuple[str, str, str], int] = {}
        for failure in json.loads(outcome.read_text()).get("failures") or []:
            if failure.get("experiment") == "run":  # a run with a record: counted by its status
                continue
            error = str(failure.get("error", "")).split(": ", 1)[-1].split(" — ")[0]
            key = (failure.get("experiment", "?"), failure.get("variant", "?"), error)
            grouped[key] = grouped.get(key, 0) + 1
        study = outcome.name.split(".")[0]
        said += [f"{n} {study} {experiment} {variant} point{'s' if n > 1 else ''} ({error})"
                 for (experiment, variant, error), n in grouped.items()]
    return f"; not run: {'; '.join(said)}" if said else ""


def _commit(git: dict) -> str:
    return f"`{str(git.get('sha'))[:7]}`" + (" (uncommitted changes)" if git.get("dirty") else "")


def answer_block(profile: str) -> str:
    """The block between the markers, from the committed records of ``profile``."""
    runs = {host: StudyPaths.committed(profile, host).runs for host in committed_hosts(profile)}
    from pglimits_core.analysis import extensions

    seeds, _ = committed_comparison(profile)
    with_extensions = extensions.sentence(extensions.committed_comparison(profile))
    parts = [START, provenance_line(runs), "",
             answer_markdown(matrix_table(committed_cells(profile)), seeds, with_extensions, notebook_links(profile)),
             END]
    return "\n".join(part for part in parts if part is not None)


def notebook_links(profile: str) -> dict[tuple[str, str], str]:
    """Each committed executed notebook (``data/results/<machine>/<profile>/notebooks/NN-<w>.ipynb``,
    the workload's tables with their charts as its sitting drew them), by workload and machine."""
    found = {}
    for host in committed_hosts(profile):
        for path in sorted((StudyPaths.committed(profile, host).tables.parent / "notebooks").glob("*-*.ipynb")):
            found[(path.stem.split("-", 1)[1], host)] = repo_relative(path)
    return found
