"""The source studies beside ours as one picture: a row per seed claim, coloured by agreement.

A reader of the README sees at a glance which of the source documents' headline ratios this box
reproduced, which point the same way at another size, which point the other way and which it
could not decide; each row names the claim and writes both ratios. Drawn from the rows of the
report's ``report-seed-comparison`` table (each workload's ``seed_comparison``) and classed by
the words of the one agreement rule (``analysis.seed.verdict``): a verdict that starts with
"agree", "same direction" or "differ" is that class, anything else (inconclusive, not
comparable, not measured) is not decided here — no second rule; so is a row whose verdict class
(``analysis.verdict.decide``) says its ratio is no measurement of the systems.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from pglimits_core.analysis.verdict import NOT_MEASURED  # noqa: E402
from pglimits_core.plotting.figures import GREY, POSTGRES  # noqa: E402

NAME = "seed-scoreboard"
NOT_DECIDED = "not decided here"
# verdict starts with -> (legend label, row colour); the decision scoreboard's palette, white for
# what this box could not decide in both pictures
CLASSES = [("agree", "agree", POSTGRES),
           ("same direction", "same direction, different size", "#9dc3e6"),
           ("differ", "differ", "#c55a11"),
           ("", NOT_DECIDED, "#ffffff")]
DARK = (POSTGRES, "#c55a11")
WIDTH_IN, ROW_IN, HEADING = 8.5, 0.4, 0.6  # heading height in rows
LINE_CHARS = 104


#: the verdict classes of ``analysis.verdict.decide`` under which our ratio is not a measurement
#: of the servers (a side its load limited, a limit not recorded, a rate this box cannot reach):
#: such a row's ratio is context, so it is not decided here, whatever its direction
UNDECIDED_CLASSES = NOT_MEASURED
CLASS_COLUMN = "verdict class"


def agreement(verdict: Any, verdict_class: Any = None) -> tuple[str, str]:
    """The legend label and colour of a row's verdict (not decided where its class says the
    harness could not decide the ratio)."""
    text = "" if verdict is None or (not isinstance(verdict, str) and pd.isna(verdict)) else str(verdict)
    if isinstance(verdict_class, str) and verdict_class.startswith(UNDECIDED_CLASSES):
        text = ""
    return next((label, colour) for prefix, label, colour in CLASSES if text.startswith(prefix))


def _classes(table: pd.DataFrame) -> list[Any]:
    return list(table[CLASS_COLUMN]) if CLASS_COLUMN in table else [None] * len(table)


def counts(table: pd.DataFrame) -> dict[str, int]:
    """Rows per class, in legend order (a class with no row counts 0)."""
    verdicts = table.get("verdict", pd.Series([None] * len(table), dtype=object))
    found = [agreement(v, k)[0] for v, k in zip(verdicts, _classes(table), strict=True)]
    return {label: found.count(label) for _, label, _ in CLASSES}


def count_sentence(table: pd.DataFrame) -> str:
    """One line for the README: how many claims fall in each class ("" without claims)."""
    if table.empty:
        return ""
    # "same direction, different size" would read as two items of the list
    parts = ", ".join(f"{n} {label.replace(', ', ' but ')}" for label, n in counts(table).items())
    return f"Against the source studies ({len(table)} headline figures): {parts}."


def _ratio(value: Any) -> str | None:
    """A ratio as the table states it: a number gets its ×, a range or bound is already text."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    number = pd.to_numeric(value, errors="coerce")
    return f"{number:.3g}×" if pd.notna(number) else (str(value) if str(value) not in ("", "nan", "—") else None)


def ratio_text(row: pd.Series) -> str:
    """"seed 4.09–5.88× · ours 0.60×"; a missing side reads —, no ratio at all reads nothing."""
    seed, ours = _ratio(row.get("seed ratio A/B")), _ratio(row.get("our ratio A/B"))
    return "" if seed is None and ours is None else f"seed {seed or '—'} · ours {ours or '—'}"


def detail(row: pd.Series) -> str:
    """What was compared: A / B, and the durability class when the claim has one."""
    durability = _ratio(row.get("durability class (ours, both sides)"))
    text = str(row.get("A / B", "")) + (f" · {durability}" if durability else "")
    return textwrap.shorten(text, 120, placeholder="…")


def _layout(table: pd.DataFrame) -> list[tuple[str, Any]]:
    """("heading", source) then ("claim", row) per claim, sources in order of first appearance."""
    items: list[tuple[str, Any]] = []
    for source, rows in table.groupby("source", sort=False):
        items.append(("heading", source))
        items += [("claim", row) for _, row in rows.iterrows()]
    return items


def _claim(ax, top: float, row: pd.Series) -> None:
    _, colour = agreement(row.get("verdict"), row.get(CLASS_COLUMN))
    ax.add_patch(plt.Rectangle((0, top - 0.94), 1, 0.88, facecolor=colour, edgecolor=GREY, linewidth=0.6))
    ink = "white" if colour in DARK else "black"
    ratios = ratio_text(row)
    # the claim and its ratios share one line of about LINE_CHARS characters
    ax.text(0.008, top - 0.34, textwrap.shorten(str(row.get("figure", "")), LINE_CHARS - len(ratios), placeholder="…"),
            va="center", fontsize=8.5, color=ink)
    ax.text(0.992, top - 0.34, ratios, ha="right", va="center", fontsize=8.5, fontweight="bold", color=ink)
    ax.text(0.008, top - 0.72, detail(row), va="center", fontsize=6.8, color=ink)


def draw(table: pd.DataFrame) -> plt.Figure:
    items = _layout(table)
    height = sum(HEADING if kind == "heading" else 1 for kind, _ in items)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height * ROW_IN + 0.6))
    top = 0.0
    for kind, item in items:
        if kind == "heading":
            ax.text(0, top - HEADING / 2 - 0.05, item, va="center", fontsize=9, fontweight="bold")
            top -= HEADING
        else:
            _claim(ax, top, item)
            top -= 1
    ax.set_xlim(0, 1)
    ax.set_ylim(-height, 0)
    ax.axis("off")
    found = counts(table)
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=colour, edgecolor=GREY) for _, _, colour in CLASSES]
    ax.legend(handles, [f"{label} ({found[label]})" for _, label, _ in CLASSES], loc="upper center",
              bbox_to_anchor=(0.5, 0.0), ncol=len(CLASSES), fontsize=8, frameon=False)
    ax.set_title("Beside the source studies: each headline claim, the seed's ratio A/B and ours", fontsize=10)
    return fig


def write_seed_scoreboard(table: pd.DataFrame, directory: Path, stamp: str | None = None) -> list[Path]:
    """``seed-scoreboard.png``/``.svg`` in ``directory`` (nothing when no claim was compared)."""
    from pglimits_core.analysis.scoreboard import write_drawn

    return write_drawn(table, draw, NAME, directory, stamp)


def committed_comparison(profile: str, host: str | None = None) -> tuple[pd.DataFrame, str]:
    """The seed comparison's rows from each workload's committed records (on the machine
    ``analysis.readme_results`` picks for it) and the stamp naming their machine(s) and commit(s).
    Tables only, no chart drawn: the rows are the report's, at a fraction of its cost."""
    from pglimits_core.analysis.outputs import merged_stamp, stamp_text
    from pglimits_core.config import StudyPaths
    from pglimits_core.record.export import committed_host, committed_hosts
    from pglimits_core.record.records import load_records
    from pglimits_core.registry import workloads

    parts, stamps = [], []
    for workload in workloads():
        if workload.seed_comparison is None or workload.report_sections is None \
                or not committed_hosts(profile, workload.name):
            continue
        runs = StudyPaths.committed(profile, committed_host(profile, host, nearest=True, study=workload.name)).runs
        records = load_records(workload.name, runs)
        if records:
            parts.append(workload.seed_comparison(workload.tables(workload.frame(records))))
            stamps.append(stamp_text(records))
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return table, merged_stamp(stamps)


def write_committed(profile: str, directory: Path, host: str | None = None) -> list[Path]:
    """The figure from the committed records, stamped with their machine and commit."""
    table, stamp = committed_comparison(profile, host)
    return write_seed_scoreboard(table, directory, stamp)
