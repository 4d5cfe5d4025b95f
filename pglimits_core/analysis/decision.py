"""The answer first: a decision matrix generated from the committed records, never typed by hand.

One cell per workload × scale × latency (or recall) target. Each workload says which of its
tables' figures face each other (``Workload.decisions(tables) -> list[Cell]``: the best Postgres
design as one ``Side``, the dedicated system as the other); this module judges every cell by the
one rule of ``analysis.verdict`` (who set the limit, and the tie band) and words it:

- the dedicated system ahead by more than the tie band -> "dedicated wins";
- Postgres ahead -> "Postgres suffices (Postgres ahead)"; a tie where Postgres meets the cell's
  target -> "Postgres suffices (no measurable difference; Postgres meets the target)";
- any other tie -> "no measurable difference";
- not decided by the harness / not comparable here / a side missing -> "not decided here: why".

A client-bound or "cannot tell" side never wins: ``decide`` gives it no rate ratio. Every cell
names the one machine its figures come from and the table file behind it.

``python -m pglimits_core.analysis.decision --profile full`` writes
``data/results/decision-matrix.md`` and ``.csv`` from the committed records and prints it.
"""

from __future__ import annotations

import argparse
import posixpath
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from pglimits_core.analysis.verdict import (
    BY_SERVER_CPU,
    NOT_BY_HARNESS,
    NOT_COMPARABLE,
    Side,
    Verdict,
    decide,
)

DEDICATED_WINS = "dedicated wins"
POSTGRES_AHEAD = "Postgres suffices (Postgres ahead)"
POSTGRES_MEETS = "Postgres suffices (no measurable difference; Postgres meets the target)"
NO_DIFFERENCE = "no measurable difference"
NOT_DECIDED = "not decided here"
NEITHER_MEETS = "neither meets the target here"
MATRIX_NAME = "decision-matrix"


@dataclass(frozen=True)
class Cell:
    """One workload × scale × target: the best Postgres design against the dedicated system.

    ``postgres``/``dedicated`` are the sides ``decide`` judges (None: nothing measured there,
    ``missing`` says why); ``figures`` are the primary numbers as shown (default: the side's
    value and ``unit``); ``spread`` is the margin's spread (k of n runs, or the ratio's range
    over the runs' extremes); ``table`` is the table's key, ``machine``/``path`` are filled by
    ``place`` from where the tables were read."""

    workload: str
    scale: str
    target: str
    postgres: Side | None
    dedicated: Side | None
    table: str
    unit: str = ""
    figures: tuple[str, str] | None = None
    spread: str = ""
    postgres_meets: bool | None = None  # Postgres meets the cell's target (None: no target)
    missing: str = ""
    unjudged: str = ""  # why the two sides are not like for like (then never judged)
    outcome: str = ""  # a target cell decided on "meets the target in k of n runs" (see target_outcome)
    machine: str = ""
    path: str = ""

    @property
    def verdict(self) -> Verdict | None:
        if self.postgres is None or self.dedicated is None or self.unjudged:
            return None
        return decide(self.postgres, self.dedicated)


def words(cell: Cell) -> str:
    """The matrix's words for ``cell``'s verdict (see the module docstring)."""
    verdict = cell.verdict
    if cell.unjudged:
        return f"{NOT_DECIDED}: {cell.unjudged}"
    if cell.outcome:
        return cell.outcome
    if verdict is None:
        return f"{NOT_DECIDED}: {cell.missing or 'a side was not measured'}"
    if verdict.klass in (NOT_BY_HARNESS, NOT_COMPARABLE):
        return f"{NOT_DECIDED}: {verdict.why}"
    if verdict.winner == cell.dedicated.system:
        return DEDICATED_WINS
    if verdict.winner == cell.postgres.system:
        return POSTGRES_AHEAD
    if (ahead := ahead_in_every_run(cell, verdict)) is not None:
        return f"{NOT_DECIDED}: {ahead} ahead in every run, but its worst case is inside the tie band"
    return POSTGRES_MEETS if cell.postgres_meets else NO_DIFFERENCE


def ahead_in_every_run(cell: Cell, verdict: Verdict) -> str | None:
    """The side whose figure beat the other's in every pairing of runs although the worst pairing
    is within the tie band: neither a win nor a tie ("no measurable difference" would hide it)."""
    if verdict.spread is None:
        return None
    low, high = verdict.spread
    if low > 1:
        return cell.postgres.system
    if high < 1:
        return cell.dedicated.system
    return None


def target_outcome(postgres_meets: bool, dedicated_meets: bool, postgres: Side | None = None,
                   dedicated: Side | None = None) -> str:
    """A latency-target cell where both sides were sustained: meeting the p99 target holds even
    when the client was the limit (latency runs from the intended send time, so a slow client can
    only add latency), so the target decides, not the rate. A miss is the server's only when the
    client was not the limit: a side that missed while client-bound (or on a box its client
    saturated) leaves the cell undecided."""
    for side, meets in ((postgres, postgres_meets), (dedicated, dedicated_meets)):
        if side is not None and not meets and (side.client_bound or side.box_saturated):
            return (f"{NOT_DECIDED}: {side.system} missed the target with its client as the limit "
                    "(a slow client adds latency; the miss may not be the server's)")
    if postgres_meets:
        return POSTGRES_MEETS if dedicated_meets else POSTGRES_AHEAD
    return DEDICATED_WINS if dedicated_meets else NEITHER_MEETS


def margin(cell: Cell) -> str:
    """The deciding ratio, as "<who> ×r" (r ≥ 1), and what it is a ratio of."""
    verdict = cell.verdict
    if verdict is None or verdict.ratio is None:
        return "—"
    if cell.outcome:  # decided on meeting the target: the figures say k of n runs, no ratio decided it
        return "the target decides (runs within it: see the figures)"
    basis = "server CPU per op" if verdict.klass.endswith("per operation") else "figure"
    ahead, ratio = ("Postgres", verdict.ratio) if verdict.ratio >= 1 else ("dedicated", 1 / verdict.ratio)
    return f"{ahead} ×{ratio:.2f} ({basis})"


def ratio_range(a_low: float, a_high: float, b_low: float, b_high: float) -> str:
    """The spread of a/b over the runs' extremes: worst case a_low/b_high, best a_high/b_low."""
    if not all(pd.notna(x) and x for x in (a_low, a_high, b_low, b_high)):
        return ""
    return f"Postgres/dedicated ×{a_low / b_high:.2f}–×{a_high / b_low:.2f} over the runs' range"


def _spread(verdict: Verdict | None) -> str:
    """The deciding ratio's spread over the runs, as Postgres/dedicated (the one the rule judged)."""
    if verdict is None or verdict.spread is None:
        return ""
    basis = "server CPU per op" if verdict.klass == BY_SERVER_CPU else "figure"
    low, high = verdict.spread
    return f"Postgres/dedicated ×{low:.2f}–×{high:.2f} ({basis}) over the runs' range"


def usable(table: pd.DataFrame | None, *columns: str) -> bool:
    """``table`` has rows and every column a workload's cells read (an empty study has none)."""
    return table is not None and not table.empty and all(column in table for column in columns)


def _figure(side: Side | None, unit: str) -> str:
    if side is None or side.value is None or pd.isna(side.value):
        return "—"
    return f"{side.value:,.0f} {unit}".strip()


def _cpu(side: Side | None) -> str:
    if side is None or side.server_cpu_us_per_op is None or pd.isna(side.server_cpu_us_per_op):
        return "—"
    return f"{side.server_cpu_us_per_op:,.1f}"


def row(cell: Cell) -> dict[str, str]:
    """One row of the matrix."""
    verdict = cell.verdict
    figures = cell.figures or (_figure(cell.postgres, cell.unit), _figure(cell.dedicated, cell.unit))
    return {"workload": cell.workload, "machine": cell.machine, "scale": cell.scale, "target": cell.target,
            "verdict": words(cell), "class": _klass(cell, verdict),
            "postgres": cell.postgres.system if cell.postgres else "—", "postgres_figure": figures[0],
            "dedicated": cell.dedicated.system if cell.dedicated else "—", "dedicated_figure": figures[1],
            "margin": margin(cell), "spread": _spread(verdict) or cell.spread or "—",
            "postgres_server_cpu_us_per_op": _cpu(cell.postgres),
            "dedicated_server_cpu_us_per_op": _cpu(cell.dedicated), "table": cell.path or cell.table}


def _klass(cell: Cell, verdict: Verdict | None) -> str:
    """What decided the cell: the rule's class, or the latency target (k of n runs within it)."""
    if cell.outcome:
        return "—" if cell.outcome.startswith(NOT_DECIDED) else "meeting the target (k of n runs)"
    return verdict.klass if verdict else "—"


def matrix_table(cells: list[Cell]) -> pd.DataFrame:
    """The matrix: one row per cell, in the order given (workload by workload)."""
    return pd.DataFrame([row(cell) for cell in cells], columns=list(row(_EMPTY)))


def render_markdown(table: pd.DataFrame, link_from: str = "") -> str:
    """One section per workload, naming its machine, with its cells as a Markdown table and the
    table file behind each cell as a link (relative to ``link_from``, the file's own folder)."""
    if table.empty:
        return "(no cells: no workload with committed records supplies decisions)\n"
    parts = []
    for (workload, machine), cells in table.groupby(["workload", "machine"], sort=False):
        shown = cells.drop(columns=["workload", "machine"]).copy()
        shown["table"] = [f"[{Path(path).name}]({posixpath.relpath(path, link_from or '.')})"
                          for path in shown["table"]]
        parts += [f"### {workload} (machine `{machine}`)", "", shown.to_markdown(index=False), ""]
    return "\n".join(parts)


def place(cells: list[Cell], machine: str, tables_dir: Path) -> list[Cell]:
    """``cells`` naming the machine they were measured on and the table file behind each."""
    from pglimits_core.config import repo_relative

    return [replace(cell, machine=machine, path=repo_relative(Path(tables_dir) / f"{cell.workload}-{cell.table}.csv"))
            for cell in cells]


def workload_cells(workload, tables: dict[str, pd.DataFrame], machine: str, tables_dir: Path,
                   extensions: bool = False) -> list[Cell]:
    """``workload``'s cells from its tables ([] when it supplies none); with ``extensions``, its
    cells with the Postgres extensions among Postgres's side ([] when it has none)."""
    decide = workload.extension_decisions if extensions else workload.decisions
    if decide is None:
        return []
    return place(decide(tables), machine, tables_dir)


def committed_cells(profile: str, host: str | None = None, extensions: bool = False) -> list[Cell]:
    """Every workload's cells from its committed records, each from the one machine holding them
    (``analysis.readme_results`` picks the same machine per workload); with ``extensions``, the
    cells of the workloads that have Postgres extensions, with them on Postgres's side."""
    from pglimits_core.analysis.outputs import build_outputs
    from pglimits_core.config import StudyPaths
    from pglimits_core.record.export import committed_host, committed_hosts
    from pglimits_core.registry import workloads

    cells: list[Cell] = []
    for workload in workloads():
        decide = workload.extension_decisions if extensions else workload.decisions
        if decide is None or not committed_hosts(profile, workload.name):
            continue
        machine = committed_host(profile, host, nearest=True, study=workload.name)
        paths = StudyPaths.committed(profile, machine)
        outputs = build_outputs(workload, paths.runs)  # writes nothing: the committed tables stay
        if outputs.records:
            cells += workload_cells(workload, outputs.tables, machine, paths.tables, extensions)
    return cells


def write_matrix(table: pd.DataFrame, directory: Path) -> str:
    """``decision-matrix.csv`` and ``.md`` in ``directory``; returns the Markdown."""
    from pglimits_core.config import repo_relative

    text = f"# Decision matrix\n\nGenerated from the committed run records by `python -m " \
           f"pglimits_core.analysis.decision`; the rules are in docs/METHODOLOGY.md " \
           f"(\"How a cell is decided\").\n\n{render_markdown(table, repo_relative(directory))}"
    directory.mkdir(parents=True, exist_ok=True)
    table.to_csv(directory / f"{MATRIX_NAME}.csv", index=False)
    (directory / f"{MATRIX_NAME}.md").write_text(text)
    return text


_EMPTY = Cell("", "", "", None, None, "")


def main() -> None:
    from pglimits_core.config import results_dir
    from pglimits_core.errors import PGLimitsError

    parser = argparse.ArgumentParser(description="write data/results/decision-matrix.md and .csv")
    parser.add_argument("--profile", default="full")
    parser.add_argument("--host", default=None, help="machine id under data/results/ (default: per workload)")
    args = parser.parse_args()
    try:
        print(write_matrix(matrix_table(committed_cells(args.profile, args.host)), results_dir()))
    except PGLimitsError as exc:
        raise SystemExit(f"decision: error: {exc}") from None


if __name__ == "__main__":
    main()
