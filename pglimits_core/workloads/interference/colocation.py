"""Co-location cells: how much queue churn one Postgres carries beside each bystander.

Per bystander and side, the churn levels are read in ascending order, each from the ``inflation``
table's row (the same side's baseline of the same seed, every repetition):

- ``held``: the churn kept its rate with its own job p99 within ``QUEUE_TARGET_MS`` in every
  repetition, the bystander kept its rate, and its p99 stayed within ``sides.BAND`` of its
  baseline in every repetition;
- ``missed``: the churn and the bystander kept their rates and the p99 left the band in every
  repetition — or the queue itself missed its target (its job p99 above ``QUEUE_TARGET_MS`` in a
  repetition): a queue that keeps its rate only by queueing its jobs is not carried either;
- ``straddles`` (some repetitions inside, some above), ``churn not sustained``, ``tenant fell
  behind``, or a repetition faster beside the churn than alone by more than the band (churn adds
  work: such a pair did not run on the same box, as ``sides.unlike_reason`` reads it): the level
  cannot be read.

A side *carries* the highest level up to which every level is held; the level after it is where it
stops, and why. The cell then reads: Postgres held at every level it ran -> Postgres suffices up
to the highest (the figure is a floor: no level above it was run); Postgres missed at a level the
dedicated side held at the same jobs/s or higher -> dedicated wins beyond what Postgres carries;
otherwise not decided, and why (an unreadable level, or no dedicated level at or above Postgres's
miss). The levels are shares of the churn's own capacity measured in the run (or of a stated
rate: the record says which), so the cell also gives the jobs/s.

The holds get cells of their own (``hold_cells``): per bystander and kind of hold, the longest
hold through which the bystander's median per-second p99 during the hold stays within the band
of its median over the same window's seconds before it (the same churn, the same seed), every
repetition, while the queue completed at least ``SUSTAINED_SHARE`` of its offered jobs/s during
the hold (a queue that stalls while held is a tenant the hold did not spare). The dedicated side has no MVCC horizon a session could hold, so these cells compare
Postgres with itself: they are never decided against the dedicated side, and say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pglimits_core.analysis.decision import DEDICATED_WINS, NOT_DECIDED, POSTGRES_MEETS, Cell
from pglimits_core.analysis.verdict import Side
from pglimits_core.workloads.interference.mechanisms import (
    hold_seconds,
    is_hold,
    kind_of,
    split_mitigation,
)
from pglimits_core.workloads.interference.points import SUSTAINED_SHARE
from pglimits_core.workloads.interference.sides import BAND, LOAD_SHARED_PCT, inflated

HELD, MISSED = "held", "missed"
TENANTS = {"fts": "full-text search", "vector": "vector search", "oltp": "point lookups (OLTP)"}
#: the queue's own target beside the bystanders: a churn job (enqueue + claim + ack, timed from its
#: intended start, pgbench's latency under -R on Postgres, qload's on Redis) may take at most this
#: at p99 in every repetition — the queue study's looser claim target. The churn's jobs/s alone
#: hid it: at 871e344d the Postgres churn kept 75 % of its capacity with its p99 at 203-306 ms
#: (12 and 25-37 ms at 25 and 50 %), its jobs queueing for the server core
QUEUE_TARGET_MS = 50.0
QUEUE_MISSED = "the queue's job p99 above its target"
TARGET = (f"bystander p99 within ×{BAND:g} of its own baseline in every repetition, the churn and the "
          f"bystander at their offered rates, the churn's job p99 ≤ {QUEUE_TARGET_MS:g} ms")
SIDE_NAMES = {"postgres": "postgres (one server)", "dedicated": "dedicated engines"}


@dataclass(frozen=True)
class Level:
    level: float
    jobs_per_s: float | None
    state: str
    #: what the level is a share of: the churn's capacity measured in the run, or a stated rate
    base: str = "measured"


@dataclass(frozen=True)
class Carried:
    """What one side carries: the highest level held from the bottom, and where it stopped."""

    held: Level | None
    stopped: Level | None
    levels: tuple[Level, ...]


#: a level whose load CPU set ran at least ``sides.LOAD_SHARED_PCT`` busy: not readable
LOAD_SHARED = "its load core shared with a busy load generator"
#: a level a repetition ran faster beside the churn than alone beyond the band: not readable
FASTER = "windows not comparable: a repetition ran faster beside the churn than alone"


def level_state(row: Any, queue_p99_ms: float | None = None) -> str:
    """A level's state for one bystander (module docstring); ``queue_p99_ms``: the churn's worst
    repetition's job p99 at that level on that side (None: not recorded)."""
    if row.get("churn_sustained") is False:
        return "churn not sustained"
    if (load := _number(row.get("load_cpu_median"))) is not None and load >= LOAD_SHARED_PCT:
        return f"{LOAD_SHARED} ({load:.0f} % of it)"
    if row.get("kept_up") is False:
        return "tenant fell behind its offered rate"
    if queue_p99_ms is not None and queue_p99_ms > QUEUE_TARGET_MS:
        return f"{QUEUE_MISSED} ({queue_p99_ms:.0f} ms > {QUEUE_TARGET_MS:g} ms)"
    if (fastest := _number(row.get("ratio_min"))) is not None and fastest < 1 / BAND:
        return f"{FASTER} (×{fastest:g})"
    state = inflated(row.get("ratio_min"), row.get("ratio_max"))
    return {True: MISSED, False: HELD}.get(state, "straddles the band")


def carried(inflation: pd.DataFrame, side: str, tenant: str) -> Carried:
    """The side's churn levels for ``tenant``, ascending, and how far it carries."""
    if inflation.empty or not {"side", "mechanism", "tenant", "level"} <= set(inflation):
        return Carried(None, None, ())
    churn = inflation[(inflation.side == side) & (inflation.mechanism == "churn")]
    rows = churn[churn.tenant == tenant]
    queue = {float(r["level"]): worst_p99(r) for _, r in churn[churn.tenant == "churn"].iterrows()}
    levels = tuple(Level(float(r["level"]), _number(r.get("churn_rate")), level_state(r, queue.get(float(r["level"]))),
                         r.get("churn_base", "measured"))
                   for _, r in rows.sort_values("level").iterrows())
    held = None
    for found in levels:
        if found.state != HELD:
            return Carried(held, found, levels)
        held = found
    return Carried(held, None, levels)


def worst_p99(row: Any) -> float | None:
    """The worst repetition's p99 (ms) of an inflation row: its ``p99_worst_ms``, or the top of
    its ``p99_ms`` spread ("median (min–max)", or one figure) in tables written before it."""
    if (worst := _number(row.get("p99_worst_ms"))) is not None:
        return worst
    figures = [float(f) for f in re.findall(r"\d+(?:\.\d+)?", str(row.get("p99_ms") or ""))]
    return max(figures) if figures else None


def is_miss(state: str) -> bool:
    """A level the side did not carry for a reason of its own: a bystander out of the band in
    every repetition, or the queue above its target."""
    return state == MISSED or state.startswith(QUEUE_MISSED)


def _number(value: Any) -> float | None:
    value = pd.to_numeric(value, errors="coerce")
    return None if pd.isna(value) else float(value)


def said(found: Level | None) -> str:
    if found is None:
        return "no level"
    rate = f" ({found.jobs_per_s:,.0f} jobs/s)" if found.jobs_per_s is not None else ""
    of = "the churn's capacity" if found.base == "measured" else "a stated rate"
    return f"{found.level:.0%} of {of}{rate}"


def figure(side: Carried) -> str:
    if not side.levels:
        return "not measured"
    text = f"holds up to {said(side.held)}" if side.held else "holds at no churn level run"
    if side.stopped is not None:
        text += f"; {side.stopped.state} at {said(side.stopped)}"
    else:
        text += " (the highest level run)"
    return text


def outcome(postgres: Carried, dedicated: Carried) -> str:
    """The cell's verdict (module docstring)."""
    if not postgres.levels:
        return f"{NOT_DECIDED}: Postgres not measured"
    stop = postgres.stopped
    if stop is None:
        return POSTGRES_MEETS
    if not is_miss(stop.state):
        return f"{NOT_DECIDED}: Postgres {stop.state} at {said(stop)}"
    beyond = [lv for lv in dedicated.levels if lv.level >= stop.level]
    first = next((lv for lv in beyond if lv.state == HELD), None)
    if first is not None and all(lv.state == HELD for lv in dedicated.levels if lv.level <= first.level):
        return DEDICATED_WINS
    if not beyond:
        return f"{NOT_DECIDED}: the dedicated side ran no level at or above {stop.level:.0%}"
    states = "; ".join(f"{lv.state} at {said(lv)}" for lv in beyond)
    return f"{NOT_DECIDED}: the dedicated side held no level at or above {stop.level:.0%} ({states})"


def _side(name: str, side: Carried) -> Side | None:
    """The share carried, as a higher-is-better figure (the rule reads ``outcome``)."""
    return None if not side.levels else Side(SIDE_NAMES[name], side.held.level if side.held else 0.0)


def compared_seconds(inflation: pd.DataFrame, tenant: str) -> float | None:
    """The fewest seconds any churn row of ``tenant`` compared per repetition ("22/34 · 29/34")."""
    rows = inflation[(inflation.mechanism == "churn") & (inflation.tenant == tenant)]
    counts = [int(n) for text in rows.get("seconds_higher", pd.Series(dtype=str)).astype(str)
              for n in re.findall(r"/(\d+)", text)]
    return float(min(counts)) if counts else None


def colocation_cells(inflation: pd.DataFrame | None) -> list[Cell]:
    """One cell per bystander the Postgres side ran churn levels beside."""
    if inflation is None or inflation.empty or not {"side", "mechanism", "tenant", "level"} <= set(inflation):
        return []
    cells = []
    for tenant, name in TENANTS.items():
        postgres, dedicated = carried(inflation, "postgres", tenant), carried(inflation, "dedicated", tenant)
        if not postgres.levels:
            continue
        split = carried(inflation, "split", tenant)
        shown = figure(postgres) + (f"; with the queue on its own instance: {figure(split)}" if split.levels else "")
        cells.append(Cell("interference", f"co-location: {name} beside the queue's churn, how much churn",
                          TARGET, _side("postgres", postgres), _side("dedicated", dedicated), "inflation",
                          figures=(shown, figure(dedicated)), outcome=outcome(postgres, dedicated),
                          window_s=compared_seconds(inflation, tenant)))
    return cells


HOLD_KINDS = {"idle_xid": "a session idle in a transaction that took an XID",
              "rr_query": "a REPEATABLE READ query running"}
HOLD_TARGET = (f"bystander median per-second p99 during the hold within ×{BAND:g} of before it, and the churn "
               f"completing ≥ {SUSTAINED_SHARE:.0%} of its offered jobs/s while held")
NO_HORIZON = "the dedicated side has no MVCC horizon to hold (the hold is Postgres against itself)"


def hold_ratios(stalls: pd.DataFrame, mechanism: str, tenant: str) -> pd.Series:
    """Per repetition, the tenant's median per-second p99 during the hold over before it."""
    column = f"{tenant}_p99_ms_median_s"
    rows = stalls[stalls.mechanism == mechanism]
    if column not in rows:
        return pd.Series(dtype=float)
    by = rows.pivot_table(index="repetition", columns="stretch", values=column, aggfunc="first")
    if not {"before", "during"} <= set(by):
        return pd.Series(dtype=float)
    return (by["during"] / by["before"]).where(by["before"] > 0).dropna()


def hold_levels(stalls: pd.DataFrame, kind: str, tenant: str) -> list[tuple[float, str, pd.Series]]:
    """(length s, state, ratios) per plain hold of ``kind``, shortest first (mitigated ones apart).
    A hold through which the bystander stayed in the band but the queue fell below its offered
    rate is not carried either: the churn is a tenant too."""
    found = []
    names = sorted({m for m in stalls.mechanism.dropna().unique() if is_hold(m) and kind_of(m) == kind
                    and split_mitigation(m)[1] is None and hold_seconds(m)}, key=hold_seconds)
    for name in names:
        ratios = hold_ratios(stalls, name, tenant)
        state = ("not measured" if ratios.empty else
                 {True: MISSED, False: HELD}.get(inflated(ratios.min(), ratios.max()), "straddles the band"))
        fell = churn_while_held(stalls, name)
        if fell and state == HELD:
            state = fell
        elif fell and state != "not measured":
            state = f"{state}; {fell}"  # both said: the bystander's miss and the queue's stall
        found.append((hold_seconds(name), state, ratios))
    return found


def churn_while_held(stalls: pd.DataFrame, mechanism: str) -> str | None:
    """"churn fell to …" where a repetition's queue completed less than ``SUSTAINED_SHARE`` of its
    offered jobs/s while the hold ran (None: it kept its rate, or the rows do not say)."""
    rows = stalls[(stalls.mechanism == mechanism) & (stalls.stretch == "during")]
    if not {"completed_per_s", "offered_per_s"} <= set(rows):
        return None
    done = pd.to_numeric(rows.completed_per_s, errors="coerce")
    offered = pd.to_numeric(rows.offered_per_s, errors="coerce")
    short = done < SUSTAINED_SHARE * offered
    if not short.any():
        return None
    return (f"churn fell to {done[short].min():,.0f} of {offered[short].iloc[0]:,.0f} jobs/s while held "
            f"({int(short.sum())} of {len(rows)} runs)")


def held_through(levels: list[tuple[float, str, pd.Series]]) -> float:
    """The longest hold of the lengths held from the shortest up (0: the shortest was not held)."""
    longest = 0.0
    for seconds, state, _ in levels:
        if state != HELD:
            break
        longest = seconds
    return longest


def hold_figure(levels: list[tuple[float, str, pd.Series]]) -> str:
    longest = held_through(levels)
    text = f"holds through {longest:g} s" if longest else "holds through no hold run"
    stop = next(((s, state, r) for s, state, r in levels if state != HELD), None)
    if stop is not None:
        ratios = " / ".join(f"{v:.2f}" for v in stop[2]) or "—"
        state, _, fell = stop[1].partition("; ")
        text += f"; {state} at {stop[0]:g} s (during ÷ before ×{ratios})" + (f", {fell}" if fell else "")
    return text


def hold_cells(stalls: pd.DataFrame | None) -> list[Cell]:
    """One cell per bystander and kind of hold the records hold."""
    if stalls is None or stalls.empty or "mechanism" not in stalls:
        return []
    cells = []
    for kind, said_as in HOLD_KINDS.items():
        for tenant, name in TENANTS.items():
            levels = hold_levels(stalls, kind, tenant)
            if all(state == "not measured" for _, state, _ in levels):
                continue
            longest = held_through(levels)
            cells.append(Cell("interference", f"co-location: {name} beside the churn while {said_as}, how long",
                              HOLD_TARGET,
                              Side(SIDE_NAMES["postgres"], longest), None, "stalls",
                              figures=(hold_figure(levels), "—"), missing=NO_HORIZON,
                              outcome=f"{NOT_DECIDED}: {NO_HORIZON}; {hold_figure(levels)}"))
    return cells
