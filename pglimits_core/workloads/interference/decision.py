"""Interference's cells of the decision matrix: per churn level and bystander tenant (search,
vectors), does one Postgres carrying the churning queue keep the tenant's p99, and does splitting
the systems onto dedicated engines on the same box keep it better?

The target is each side's own baseline: a tenant meets it when its p99 at the churn level stays
within ``sides.BAND`` of the same side's p99 without churn, paired by seed, in every repetition.
The cell reads the ``sides`` table's rows (``sides.split_table``), by the same rule:

- only Postgres inflates (splitting removes the tail) -> dedicated wins;
- only the dedicated side inflates -> Postgres ahead;
- neither inflates -> Postgres suffices (no measurable difference; Postgres meets the target);
- both inflate (splitting moves the tail, it does not remove it) -> neither meets the target;
- a side whose repetitions straddle the band, whose churn or tenant did not keep its rate, or
  that was not measured -> not decided here, and why;
- windows not comparable -> not decided here, naming them: a repetition whose server CPU is out of
  line with its siblings' for the same offered load (``tables.unlike_windows``: a cold engine, a
  neighbour gone quiet), or a bystander faster beside the churn than alone by more than the band
  (churn adds work; such a pair did not run on the same box).

There is no server CPU figure in these cells: the question is the bystander's tail under a
neighbour's load, not what a query costs."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pglimits_core.analysis.decision import (
    DEDICATED_WINS,
    NEITHER_MEETS,
    NOT_DECIDED,
    POSTGRES_AHEAD,
    POSTGRES_MEETS,
    Cell,
    usable,
)
from pglimits_core.analysis.verdict import Side
from pglimits_core.workloads.interference.colocation import TENANTS, colocation_cells, hold_cells
from pglimits_core.workloads.interference.sides import BAND, guard, inflated

COLUMNS = ("level", "churn_rate", "tenant", "postgres_ratio", "dedicated_ratio", "postgres_ratio_min",
           "postgres_ratio_max", "dedicated_ratio_min", "dedicated_ratio_max")
TARGET = f"bystander p99 within ×{BAND:g} of its own side's baseline (paired by seed, every repetition)"


def decisions(tables: dict[str, pd.DataFrame]) -> list[Cell]:
    """How much churn Postgres carries beside each bystander (``colocation``), then per churn
    level and bystander the two sides against their own baselines."""
    sides, inflation = tables.get("sides"), tables.get("inflation")
    cells = colocation_cells(inflation) + hold_cells(tables.get("stalls"))
    if not usable(sides, *COLUMNS):
        return cells
    for _, row in sides[sides.tenant.isin(list(TENANTS))].iterrows():
        found = row.to_dict()
        cells.append(Cell("interference", _scale(found), TARGET, _side("postgres", found),
                          _side("dedicated", found), "sides", figures=(_text("postgres", found), _text("dedicated", found)),
                          outcome=outcome(found, _baselines_kept_up(inflation, found["tenant"])),
                          window_s=measured_seconds(found)))
    return cells


def measured_seconds(row: dict[str, Any]) -> float | None:
    """The shortest window behind a row: the per-second comparison's seconds ("22/34 · 29/34")."""
    import re

    counts = [int(n) for side in ("postgres", "dedicated")
              for n in re.findall(r"/(\d+)", str(row.get(f"{side}_seconds_higher") or ""))]
    return float(min(counts)) if counts else None


def outcome(row: dict[str, Any], baselines_kept_up: dict[str, Any]) -> str:
    """The cell's verdict from both sides' paired ratios against the band (module docstring)."""
    if (why := guard(row, baselines_kept_up)) is not None:
        return f"{NOT_DECIDED}: {why}"
    postgres, dedicated = (inflated(row[f"{side}_ratio_min"], row[f"{side}_ratio_max"])
                           for side in ("postgres", "dedicated"))
    straddling = [name for name, state in (("Postgres", postgres), ("dedicated", dedicated)) if state is None]
    if straddling:
        return (f"{NOT_DECIDED}: {' and '.join(straddling)}'s paired ratios straddle ×{BAND:g} "
                "(some repetitions inside the band, some above)")
    if postgres and not dedicated:
        return DEDICATED_WINS
    if dedicated and not postgres:
        return POSTGRES_AHEAD
    return NEITHER_MEETS if postgres else POSTGRES_MEETS


def _scale(row: dict[str, Any]) -> str:
    return f"{TENANTS[row['tenant']]} beside a queue churning {float(row['churn_rate']):,.0f} jobs/s"


def _side(side: str, row: dict[str, Any]) -> Side | None:
    """The side's p99 as a higher-is-better figure (1 / ratio): the rule reads ``outcome``, the
    side only names the system."""
    ratio = row.get(f"{side}_ratio")
    if _blank(ratio) or not float(ratio):
        return None
    return Side("postgres (one server)" if side == "postgres" else "dedicated engines", 1.0 / float(ratio))


def _text(side: str, row: dict[str, Any]) -> str:
    """The side's p99 as the table gives it (median (min–max) of the repetitions), its baseline's,
    and the paired ratios."""
    p99, base, paired = (row.get(f"{side}_{c}") for c in ("p99_ms", "baseline_p99_ms", "paired_ratios"))
    if _blank(p99):
        return "—"
    shown = f"p99 {p99} ms"
    if not _blank(base):
        shown += f" vs {base} ms alone"
    return shown + ("" if _blank(paired) else f" (paired ×{paired})")


def _blank(value: Any) -> bool:
    return value is None or value == "—" or (isinstance(value, float) and pd.isna(value))


def _baselines_kept_up(inflation: pd.DataFrame | None, tenant: str) -> dict[str, Any]:
    """Whether each side's baseline run of ``tenant`` kept its offered rate (None: not recorded)."""
    if inflation is None or inflation.empty or "kept_up" not in inflation:
        return {}
    base = inflation[(inflation.mechanism == "baseline") & (inflation.tenant == tenant)]
    return {side: (rows.kept_up.iloc[0] if not rows.empty else None)
            for side, rows in ((s, base[base.side == s]) for s in ("postgres", "dedicated"))}
