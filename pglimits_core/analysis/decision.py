"""The answer first: a decision matrix generated from the committed records, never typed by hand.

One cell per workload × scale × latency (or recall) target. Each workload says which of its
tables' figures face each other (``Workload.decisions(tables) -> list[Cell]``: the best Postgres
design as one ``Side``, the dedicated system as the other); this module judges every cell by the
one rule of ``analysis.verdict`` (on rate: which side set the limit, floors, the tie band and
the runs' overlap) and words it:

- the dedicated system ahead beyond the tie band in every run -> "dedicated wins";
- Postgres ahead -> "Postgres suffices (Postgres ahead)"; the runs' ranges overlapping where
  Postgres meets the cell's target -> "Postgres suffices (no measurable difference; Postgres
  meets the target)";
- any other overlap -> "no measurable difference";
- anything the rule leaves undecided (ahead in every run inside the band, load-limited, limit
  not recorded, not comparable), or a side missing -> "not decided here: why".

Server CPU per operation is printed beside every cell that has it and never decides one. Every
cell names the one machine its figures come from and the table file behind it.

``pglimits results build`` writes ``data/results/decision-matrix.md`` and ``.csv`` from the
committed records (``analysis.publish``).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from pglimits_core.analysis.verdict import BY_FLOOR, NEITHER, SERVER, Side, Verdict, decide

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
    #: the shortest measured window behind the deciding figures (None: not recorded: the sweeps'
    #: short windows); a cell decides only from steady windows (``STEADY_WINDOW_S``)
    window_s: float | None = None
    #: the harness-vs-tool agreement of the rows that decide the cell, in words ("" : not checked here)
    load_check: str = ""
    #: the cell's target is a recall a side reaches or not (its ``outcome``): counted per query,
    #: it does not depend on a window's length, so short windows do not keep it undecided
    by_recall: bool = False
    #: a quality figure beside each side's speed (Postgres's, the dedicated system's; "" where not
    #: measured), e.g. the search's top-10 agreement with exact BM25: shown, never deciding
    quality: tuple[str, str] | None = None
    #: a size, not a rate (``experiments.footprint_cells``): read once per system, so neither a
    #: window's length nor the rate rule applies; ``margin_text`` is its margin as shown
    by_size: bool = False
    margin_text: str = ""
    machine: str = ""
    path: str = ""

    @property
    def verdict(self) -> Verdict | None:
        if self.postgres is None or self.dedicated is None or self.unjudged:
            return None
        return decide(self.postgres, self.dedicated)


#: the shortest measured window that may decide a cell: a 2-3 s window sees no bloat, checkpoint,
#: merge, garbage collection or optimizer (wrk2's author calls runs under 10-20 s not useful)
STEADY_WINDOW_S = 30.0
SHORT_WINDOWS = "windows shorter than 30 s"


def words(cell: Cell) -> str:
    """The matrix's words for ``cell``'s verdict (see the module docstring); a verdict drawn from
    windows shorter than ``STEADY_WINDOW_S`` is shown as indicative only, never as a decision."""
    said = rule_words(cell)
    steady = cell.window_s is not None and cell.window_s >= STEADY_WINDOW_S
    if steady or cell.by_recall or cell.by_size or said.startswith(NOT_DECIDED):
        return said
    window = ("a sweep's short windows (2–4 s in the committed profiles)" if cell.window_s is None
              else f"{cell.window_s:g}-s windows")
    return f"{NOT_DECIDED}: {window}, not the ≥ 30-s steady windows a cell is decided on (indicative: {said})"


INDICATIVE = re.compile(r"\(indicative: (.*)\)$")


def indicative(verdict: str) -> str | None:
    """The verdict a cell's words say it would have had, where only its windows' length kept it
    undecided (``words``); None for any other verdict."""
    found = INDICATIVE.search(str(verdict))
    return found.group(1) if found else None


def rule_words(cell: Cell) -> str:
    """The rule's words for ``cell`` before the window's length is weighed."""
    verdict = cell.verdict
    if cell.unjudged:
        return f"{NOT_DECIDED}: {cell.unjudged}"
    if cell.outcome:
        return cell.outcome
    if verdict is None:
        return f"{NOT_DECIDED}: {cell.missing or 'a side was not measured'}"
    if verdict.winner == cell.dedicated.system:
        return DEDICATED_WINS
    if verdict.winner == cell.postgres.system:
        return POSTGRES_AHEAD
    if verdict.tie:  # decided by rate with the runs overlapping: the only "no measurable difference"
        return POSTGRES_MEETS if cell.postgres_meets else NO_DIFFERENCE
    return f"{NOT_DECIDED}: {verdict.why}"


@dataclass(frozen=True)
class TargetRuns:
    """One side's runs against a latency target: how many met it, of how many, and their lowest
    and highest p99 (ms)."""

    met: int
    runs: int
    low: float
    high: float


def target_outcome(postgres_meets: bool, dedicated_meets: bool, postgres: Side | None = None,
                   dedicated: Side | None = None, runs: tuple[TargetRuns, TargetRuns] | None = None,
                   dedicated_name: str = "the dedicated system") -> str:
    """A latency-target cell where both sides were sustained: meeting the p99 target holds even
    when the load was the limit (latency runs from the intended send time, so a slow client can
    only add latency), so the target decides, not the rate. A miss is the server's only when the
    server, or neither side, set the limit: a side that missed with its load as the limit, or
    with the limit not recorded, leaves the cell undecided. ``runs`` (Postgres's, the dedicated
    system's) word a cell both sides meet: never "no measurable difference" when one side's p99
    was lower in every run."""
    for side, meets in ((postgres, postgres_meets), (dedicated, dedicated_meets)):
        if side is not None and not meets and side.limit not in (SERVER, NEITHER):
            why = "with its load as the limit" if side.floor else "and which side set the limit was not recorded"
            return f"{NOT_DECIDED}: {side.system} missed the target {why} (the miss may not be the server's)"
    if postgres_meets and dedicated_meets:
        return _both_meet(runs, dedicated_name)
    if postgres_meets:
        return POSTGRES_AHEAD
    return DEDICATED_WINS if dedicated_meets else NEITHER_MEETS


def _both_meet(runs: tuple[TargetRuns, TargetRuns] | None, dedicated_name: str) -> str:
    """Both sides meet the target: Postgres suffices, and the p99s overlap or one is lower in every run."""
    if runs is None:
        return POSTGRES_MEETS
    pg, ded = runs
    if ded.high < pg.low:
        lower, first, second = f"{dedicated_name}'s", ded, pg
    elif pg.high < ded.low:
        lower, first, second = "Postgres's", pg, ded
    else:
        return POSTGRES_MEETS
    return (f"Postgres suffices (meets the target in {pg.met} of {pg.runs} runs; {lower} p99 lower in every run: "
            f"{first.low:,.1f}–{first.high:,.1f} vs {second.low:,.1f}–{second.high:,.1f} ms)")


def margin(cell: Cell) -> str:
    """The deciding ratio, as "<who> ×r" (r ≥ 1), and what it is a ratio of; a floor's decision
    reads "≥": its worst run over the other's best, and the floor's true rate may be higher."""
    if cell.by_size:
        return cell.margin_text or "—"
    if cell.outcome:  # decided on meeting the target: the figures say k of n runs, no ratio decided it
        if cell.outcome.startswith(NOT_DECIDED):
            return "—"
        return "the recall decides (see the figures)" if cell.by_recall else "the target decides (runs within it: see the figures)"
    verdict = cell.verdict
    if verdict is None or verdict.ratio is None:
        return "—"
    ahead, ratio = ("Postgres", verdict.ratio) if verdict.ratio >= 1 else ("dedicated", 1 / verdict.ratio)
    if verdict.klass == BY_FLOOR:
        return f"{ahead} ≥ ×{ratio:.2f} (floor's worst run over the other's best)"
    if any(side is not None and side.below for side in (cell.postgres, cell.dedicated)):
        return f"{ahead} > ×{ratio:.2f} (over the rate the other missed at: its capacity is below it)"
    if verdict.winner is None and verdict.spread is not None:  # undecided: the worst case says why
        worst = verdict.spread[0] if verdict.ratio >= 1 else 1 / verdict.spread[1]  # Postgres/dedicated
        nearest = f"×{worst:.2f} at the ranges' nearest ends" if worst >= 1 else "the ranges overlap"
        return f"{ahead} ×{ratio:.2f} (figure); {nearest}: undecided"
    return f"{ahead} ×{ratio:.2f} (figure)"


def ratio_range(a_low: float, a_high: float, b_low: float, b_high: float) -> str:
    """The spread of a/b over the runs' extremes: worst case a_low/b_high, best a_high/b_low."""
    if not all(pd.notna(x) and x for x in (a_low, a_high, b_low, b_high)):
        return ""
    return f"Postgres/dedicated ×{a_low / b_high:.2f}–×{a_high / b_low:.2f} over the runs' range"


def _spread(cell: Cell, verdict: Verdict | None) -> str:
    """The deciding ratio's spread over the runs, as Postgres/dedicated (the one the rule judged);
    after a floor's decision, only the bound the floor leaves (its best case is unbounded)."""
    if verdict is None or verdict.spread is None or cell.outcome:
        return ""
    low, high = verdict.spread
    if verdict.klass == BY_FLOOR:
        bound = f"≤ ×{high:.2f}" if verdict.winner == cell.dedicated.system else f"≥ ×{low:.2f}"
        return f"Postgres/dedicated {bound} (figure; the winner's a floor) over the runs' range"
    return f"Postgres/dedicated ×{low:.2f}–×{high:.2f} (figure) over the runs' range"


def usable(table: pd.DataFrame | None, *columns: str) -> bool:
    """``table`` has rows and every column a workload's cells read (an empty study has none)."""
    return table is not None and not table.empty and all(column in table for column in columns)


def _figure(side: Side | None, unit: str) -> str:
    if side is None or side.value is None or pd.isna(side.value):
        return "—"
    if side.below:  # held the target at no rate tried: its capacity is under this rate
        return f"< {side.value:,.0f} {unit} (held at no rate tried)".replace("  ", " ")
    return f"{side.value:,.0f} {unit}".strip()


def _floor_mark(side: Side | None, figure: str, unit: str) -> str:
    """A rate figure (the cell has a unit) its load limited is a floor: "≥ x"."""
    return f"≥ {figure}" if unit and side is not None and side.floor and figure != "—" else figure


def _cpu(side: Side | None) -> str:
    if side is None or side.server_cpu_us_per_op is None or pd.isna(side.server_cpu_us_per_op):
        return "—"
    return f"{side.server_cpu_us_per_op:,.1f}"


def row(cell: Cell) -> dict[str, str]:
    """One row of the matrix."""
    verdict = cell.verdict
    figures = cell.figures or (_figure(cell.postgres, cell.unit), _figure(cell.dedicated, cell.unit))
    figures = tuple(_floor_mark(side, figure, cell.unit) for side, figure in zip((cell.postgres, cell.dedicated),
                                                                                  figures, strict=True))
    if cell.quality:
        figures = tuple(f"{figure}; {quality}" if quality and figure != "—" else figure
                        for figure, quality in zip(figures, cell.quality, strict=True))
    return {"workload": cell.workload, "machine": cell.machine, "scale": cell.scale, "target": cell.target,
            "verdict": words(cell), "class": _klass(cell, verdict),
            "postgres": cell.postgres.system if cell.postgres else "—", "postgres_figure": figures[0],
            "dedicated": cell.dedicated.system if cell.dedicated else "—", "dedicated_figure": figures[1],
            "margin": margin(cell), "spread": _spread(cell, verdict) or cell.spread or "—",
            "postgres_server_cpu_us_per_op": _cpu(cell.postgres),
            "dedicated_server_cpu_us_per_op": _cpu(cell.dedicated), "load_check": cell.load_check or "—",
            "table": cell.path or cell.table}


def _klass(cell: Cell, verdict: Verdict | None) -> str:
    """What decided the cell: the rule's class, or the latency target (k of n runs within it);
    neither when its windows were too short to decide (the verdict says what they indicate)."""
    if words(cell) != rule_words(cell):  # only the windows' length kept it from deciding
        return f"not decided: {SHORT_WINDOWS}"
    if cell.outcome:
        if cell.outcome.startswith(NOT_DECIDED):
            return "—"
        if cell.by_size:
            return "the smaller footprint (one reading each)"
        return "reaching the recall target" if cell.by_recall else "meeting the target (k of n runs)"
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
    from pglimits_core.analysis.outputs import tables_only
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
        outputs = tables_only(workload, paths.runs)  # writes nothing: the committed tables stay
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
