"""The answer in a minute: per workload one line with its deciding numbers and units, generated
from the decision matrix's rows (``analysis.decision.matrix_table``), for the README's first screen.

A line reads the workload's capacity cells — the rate each side held a latency target over its
steady windows — target by target: "send → claim p99 ≤ 10 ms — durability per_commit: 1,925
against 2,450 jobs/s (not decided)". The verdict is the matrix's, shortened to who is ahead and by how
much; the designs, spreads and the rest of the cells stay in the matrix the line links to.
"""

from __future__ import annotations

import re

import pandas as pd

from pglimits_core.analysis.decision import (
    DEDICATED_WINS,
    NEITHER_MEETS,
    NO_DIFFERENCE,
    NOT_DECIDED,
)

START, END = "<!-- headline:start -->", "<!-- headline:end -->"
#: a capacity cell's target: a p99 bound held over steady windows ("… (held over 30-s windows)")
HELD = " (held over "
RATIO = re.compile(r"(?:[≥>] )?×[\d,.]+")


def short_verdict(verdict: str, margin: str) -> str:
    """"dedicated ×11.43", "Postgres ×2.21", "dedicated ≥ ×2.91", "no measurable difference",
    "not decided": who is ahead by how much, from the matrix's verdict and margin."""
    ratio = RATIO.search(str(margin))
    by = f" {ratio.group(0)}" if ratio else ""
    if by.startswith(" >"):  # over a rate the other missed at, no ratio of rates: its figure says "held at no rate"
        by = ""
    if verdict == DEDICATED_WINS:
        return f"dedicated{by}"
    if verdict.startswith(NOT_DECIDED):
        return "not decided"
    if verdict in (NO_DIFFERENCE, NEITHER_MEETS):
        return verdict
    if verdict.startswith("Postgres suffices (Postgres ahead)"):
        return f"Postgres{by}"
    return "Postgres meets it too" if verdict.startswith("Postgres suffices") else verdict


def workload_line(workload: str, rows: pd.DataFrame) -> str | None:
    """One workload's line, its capacity cells target by target; None where it has none."""
    held = rows[rows["target"].astype(str).str.contains(HELD, regex=False)]
    if held.empty:
        return None
    dedicated = _systems(held["dedicated"])
    said = []
    for target, cells in held.groupby("target", sort=False):
        fragments = [f"{_scale(cell.scale)}: {_figures(cell.postgres_figure, cell.dedicated_figure)} "
                     f"({short_verdict(cell.verdict, cell.margin)})" for cell in cells.itertuples()]
        said.append(f"{str(target).split(HELD)[0]} — {'; '.join(fragments)}")
    return f"**{workload}**, Postgres against {dedicated}: " + ". ".join(said) + "."


def headline_lines(matrix: pd.DataFrame) -> list[str]:
    """A bullet per workload with capacity cells, in the matrix's order, and the machine each
    comes from where they differ."""
    if matrix.empty:
        return []
    machines = matrix["machine"].nunique()
    lines = []
    for (workload, machine), rows in matrix.groupby(["workload", "machine"], sort=False):
        line = workload_line(str(workload), rows)
        if line:
            lines.append(f"- {line}" + (f" (`{machine}`)" if machines > 1 else ""))
    return lines


def _scale(scale: str) -> str:
    """"capacity, durability per_commit, survives a process kill" -> "durability per_commit"."""
    return str(scale).removeprefix("capacity, ").split(", ")[0]


def _figures(postgres: str, dedicated: str) -> str:
    """"1,925 against 2,450 jobs/s": the figures before their quality notes, the unit said once
    where both sides share it."""
    pg, ded = (str(figure).split("; ")[0] for figure in (postgres, dedicated))
    pg_unit, ded_unit = pg.rsplit(" ", 1)[-1], ded.rsplit(" ", 1)[-1]
    if pg_unit == ded_unit and not pg.endswith(")"):
        pg = pg[: -len(pg_unit) - 1]
    return f"{pg} against {ded}"


def _systems(designs: pd.Series) -> str:
    """The dedicated systems' names, from their designs' labels ("redis_reliable batch=1" -> Redis)."""
    names = []
    for design in designs:
        name = NAMES.get(str(design).split()[0].split("_")[0], str(design).split()[0])
        if name not in names:
            names.append(name)
    return " / ".join(names)


NAMES = {"redis": "Redis", "opensearch": "OpenSearch", "elasticsearch": "Elasticsearch", "qdrant": "Qdrant",
         "sqlite": "SQLite"}


#: the lines drawn (``analysis.capacity_figure``), under them on the README's first screen
FIGURE = "![capacity at each p99 target, Postgres's bar beside the dedicated system's](figures/capacity-at-target.png)"


def headline_block(matrix: pd.DataFrame) -> str:
    """The README's block between its markers: the lines and their picture, or a sentence saying
    there are none yet."""
    lines = headline_lines(matrix)
    if not lines:
        lines = ["No capacity cell in the committed records yet: `make study PROFILE=full`, then `make results`."]
    return "\n".join([START, *lines, *(["", FIGURE] if headline_lines(matrix) else []), END])


def committed_headline(profile: str) -> str:
    """The block from the committed records of ``profile`` (the same cells as the matrix)."""
    from pglimits_core.analysis.decision import committed_cells, matrix_table

    return headline_block(matrix_table(committed_cells(profile)))
