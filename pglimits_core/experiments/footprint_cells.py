"""Footprint cells of the decision matrix: the same data's size on disk and the server's memory,
the smaller side ahead.

A size is a state, not a rate: each system is read once at the same data (a build's or a load's
files; the server's memory at the end of a steady query run), so no window's length or run
range enters. Where one number would not be honest a side is a range: a server reads its files through
the OS page cache (PostgreSQL beside its ``shared_buffers``), and PSS counts only the pages a
server's processes map, so its memory lies between its PSS and its PSS plus its files on disk.

The rule, with the matrix's tie band (``analysis.verdict.TIE_BAND``, ×1.25): the side whose
largest figure is below the other's smallest by the band is ahead ("dedicated wins" / "Postgres
suffices (Postgres ahead)"); the two within the band of each other from end to end: "no
measurable difference"; anything between: not decided, both ranges shown. A figure this study
sets rather than measures (a JVM's pre-touched heap) is shown and never judged (``unjudged``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pglimits_core.analysis.decision import (
    DEDICATED_WINS,
    NO_DIFFERENCE,
    NOT_DECIDED,
    POSTGRES_AHEAD,
    Cell,
)
from pglimits_core.analysis.verdict import TIE_BAND, Side


@dataclass(frozen=True)
class Footprint:
    """One side's size in MiB: ``low`` alone is one reading; ``high`` bounds a range above it
    (``bound`` says what the range spans)."""

    system: str
    low: float | None
    high: float | None = None
    bound: str = ""

    @property
    def top(self) -> float | None:
        return self.low if self.high is None else self.high

    def text(self) -> str:
        if self.low is None or pd.isna(self.low):
            return "—"
        if self.high is None:
            return f"{self.low:,.0f} MiB"
        return f"{self.low:,.0f}–{self.high:,.0f} MiB ({self.bound})"


def footprint_cell(workload: str, scale: str, what: str, postgres: Footprint | None, dedicated: Footprint | None,
                   table: str, unjudged: str = "", missing: str = "") -> Cell:
    """One footprint cell: ``what`` names the reading (the cell's target column), the sides'
    figures are their ranges in MiB; judged by the module's rule unless ``unjudged`` says why not."""
    sides = [_measured(side) for side in (postgres, dedicated)]
    if not all(sides):  # nothing to judge, or to set aside
        outcome, margin, unjudged = f"{NOT_DECIDED}: {missing or 'a side was not measured'}", "—", ""
    elif unjudged:
        outcome, margin = "", "—"
    else:
        outcome, margin = footprint_outcome(*sides)
    return Cell(workload, scale, what, _side(postgres), _side(dedicated), table, unit="MiB",
                figures=(postgres.text() if postgres else "—", dedicated.text() if dedicated else "—"),
                unjudged=unjudged, outcome=outcome, by_size=True, margin_text=margin)


def footprint_outcome(postgres: Footprint, dedicated: Footprint) -> tuple[str, str]:
    """The verdict's words and the margin: ahead by the band from end to end, within it from end
    to end, or neither."""
    if postgres.top * TIE_BAND <= dedicated.low:
        return POSTGRES_AHEAD, f"Postgres ×{dedicated.low / postgres.top:.2f} smaller (its largest against the other's smallest)"
    if dedicated.top * TIE_BAND <= postgres.low:
        return DEDICATED_WINS, f"dedicated ×{postgres.low / dedicated.top:.2f} smaller (its largest against the other's smallest)"
    widest = max(postgres.top, dedicated.top) / min(postgres.low, dedicated.low)
    if widest < TIE_BAND:
        return NO_DIFFERENCE, f"within ×{widest:.2f} end to end"
    return (f"{NOT_DECIDED}: the sizes are not ×{TIE_BAND:g} apart from end to end "
            f"({postgres.text()} against {dedicated.text()})"), "—"


#: what a memory cell reads (its target column), and what Postgres's range spans
MEMORY = "server memory (PSS) after a steady query run: the writes experiment's {rate} point, cleaned up"
PAGE_CACHE = "PSS to PSS + its files through the page cache"
NO_WRITES = "the writes experiment, whose last reading this is, is not in these records"


def memory_cell(workload: str, scale: str, writes: pd.DataFrame | None, sides: tuple[str, str],
                files: tuple[float | None, float | None], files_table: str, unjudged: str = "") -> Cell:
    """The memory cell from a workload's writes table: each side's PSS after its lowest write
    rate's cleanup run (``sides``: the Postgres variant, the dedicated one), each running up to its
    PSS plus its ``files`` (MiB on disk, from ``files_table``, which the cell names where the
    writes table is missing): both read files through the same page cache."""
    columns = ("variant", "write_pct_per_min", "server_pss_mib_after_cleanup")
    if writes is None or writes.empty or not all(column in writes for column in columns):
        return footprint_cell(workload, scale, MEMORY.format(rate="lowest-rate"), None, None, files_table,
                              missing=NO_WRITES)
    lowest = writes[writes.write_pct_per_min == writes.write_pct_per_min.min()].drop_duplicates("variant")
    pss = lowest.set_index("variant")["server_pss_mib_after_cleanup"]
    postgres, dedicated = (_with_files(name, _number(pss.get(name)), on_disk) for name, on_disk in zip(sides, files,
                                                                                                        strict=True))
    return footprint_cell(workload, scale, MEMORY.format(rate=f"{lowest.write_pct_per_min.iloc[0]:g} %/min"),
                          postgres, dedicated, "writes", unjudged=unjudged,
                          missing="a side's memory after its writes point was not read")


def _with_files(system: str, pss: float | None, on_disk: float | None) -> Footprint | None:
    if pss is None:
        return None
    return Footprint(system, pss, None if on_disk is None else pss + on_disk, PAGE_CACHE)


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _measured(side: Footprint | None) -> Footprint | None:
    return side if side is not None and side.low is not None and not pd.isna(side.low) and side.low > 0 else None


def _side(footprint: Footprint | None) -> Side | None:
    """The cell's side: its name only (a size is never judged by the rate rule)."""
    return None if footprint is None else Side(footprint.system, None)
