"""Capacity cells of the decision matrix, the same for every workload: per scale and latency
target, the best dedicated design that has a like-for-like Postgres design against the best of
those Postgres designs, and per scale the two ceilings, judged by the one rule
(``analysis.verdict.decide``). Where Postgres's own best design at that target is another one (a
batch the dedicated system's best does not use), the cell names it with its own like-for-like
peer (``_postgres_best``), so "best" never hides a faster Postgres row.

A capacity at a target is a bracket, not a point: its steady windows held at ``capacity_per_s``
and a steady window missed the target at ``capacity_miss_per_s``, so the true capacity lies
between the two; that bracket is the side's range. Where no steady window missed above it (a
short probe's miss decides nothing), the design's server-limited ceiling bounds it instead. A
capacity with neither above it, or whose miss came with the load's CPU set saturated (the load,
not the server, may have missed it), is a floor: "≥ x" (``capacity_bracket``). Windows that held
with the load's set saturated still held (a late load only adds to the p99 from the intended
start): bounded above by a server's miss or ceiling, they are a bracket like any other. A ceiling is the median of its repetitions, its
range their lowest and highest, its limit the side that set it (a server-limited ceiling, or a
load-limited floor). The cells are steady: their deciding windows are the experiment's ``steady_s``.

A workload says what a scale is (``group``: the table's columns that make one, e.g. the queue's
durability class, the vectors' recall target) and which designs may face each other (``peers``:
the queue's same delivery guarantee and batch; default: any two).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from pglimits_core.analysis.decision import Cell
from pglimits_core.analysis.verdict import LOAD, NEITHER, SERVER, Side

Peers = Callable[[str, str], bool]
TABLE = "capacity"


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def capacity_bracket(row: pd.Series) -> tuple[float, float | None, str] | None:
    """The capacity's bracket from the table row: (held, top, what bounds the top) — the top is
    the lowest rate whose steady window missed (``"steady"``), else the design's own
    server-limited ceiling (``"ceiling"``: no offered rate above what the server does flat out
    can hold); a floor (top None, ``"floor"``) where neither bounds it or where the load caused
    the miss. None: nothing held."""
    rate = _number(row.get("capacity_per_s"))
    if rate is None:
        return None
    miss, ceiling = _number(row.get("capacity_miss_per_s")), _number(row.get("ceiling_high"))
    if miss is not None and _miss_limit(row) == LOAD:
        return rate, None, "floor"
    if miss is not None:
        # the steady miss, not the ceiling, even where the ceiling is lower: a ceiling may come from
        # another tool at another concurrency (pgbench's 8 clients against qload's rate windows),
        # which the rate windows can outrun
        return rate, miss, "steady"
    if ceiling is not None and row.get("ceiling_limit") == SERVER and ceiling > rate:
        return rate, ceiling, "ceiling"
    return rate, None, "floor"


def _miss_limit(row: pd.Series) -> str | None:
    """The side that set the steady miss's limit; where a record does not say, the held windows'
    (a load saturated there leaves the miss unexplained: read as the load's)."""
    limit = row.get("capacity_miss_limit")
    if isinstance(limit, str):
        return limit
    held = row.get("capacity_limit")
    return held if isinstance(held, str) else None


def capacity_side(row: pd.Series) -> Side | None:
    """A design's capacity at the row's target as a ``Side`` (None: nothing held the target)."""
    bracket = capacity_bracket(row)
    if bracket is None:
        return _held_nowhere(row)
    rate, top, bound = bracket
    # who set the limit is who bounds it: the steady miss's side, or the server at its ceiling
    limit = {"floor": LOAD, "ceiling": SERVER}.get(bound, _miss_limit(row))
    return Side(row["variant"], rate, limit,
                (rate, rate if top is None else top), server_cpu_us_per_op=_number(row.get("server_cpu_us_per_item")),
                range_of="bracket")



def _held_nowhere(row: pd.Series) -> Side | None:
    """A design that held the target at no rate it tried, whose lowest full window missed without
    its load saturated: its capacity is below that rate (``Side.below``); else nothing to say."""
    below, limit = _number(row.get("below_per_s")), row.get("below_limit")
    if below is None or limit not in (SERVER, NEITHER):
        return None
    return Side(row["variant"], below, limit, (0.0, below), below=True, range_of="bracket")


def ceiling_side(row: pd.Series) -> Side | None:
    rate = _number(row.get("ceiling_per_s"))
    if rate is None:
        return None
    limit = row.get("ceiling_limit")
    return Side(row["variant"], rate, None if limit is None or pd.isna(limit) else limit,
                (float(row["ceiling_low"]), float(row["ceiling_high"])))


def best(rows: pd.DataFrame, column: str) -> pd.Series | None:
    values = pd.to_numeric(rows[column], errors="coerce") if column in rows else pd.Series(dtype=float)
    return None if values.dropna().empty else rows.loc[values.idxmax()]


def pair(rows: pd.DataFrame, column: str, peers: Peers) -> tuple[pd.Series | None, pd.Series | None]:
    """The best dedicated design that has a Postgres peer, with its best peer, by ``column``;
    without any such pair, the best of each side (the cell then says they are not like for like)."""
    values = pd.to_numeric(rows[column], errors="coerce").rename("_value")
    ranked = rows.join(values).sort_values("_value", ascending=False, na_position="last").drop(columns="_value")
    dedicated, postgres = ranked[ranked.side == "dedicated"], ranked[ranked.side == "postgres"]
    for _, candidate in dedicated.iterrows():
        mates = postgres[postgres.variant.map(lambda v, d=candidate["variant"]: peers(v, d))]
        if not mates.empty:  # a side that held nothing is still the comparison: its row says what it tried
            return mates.iloc[0], candidate
    return _first(postgres), _first(dedicated)


def _first(rows: pd.DataFrame) -> pd.Series | None:
    return None if rows.empty else rows.iloc[0]


def capacity_cells(workload: str, table: pd.DataFrame | None, unit: str, group: list[str],
                   scale: Callable[[tuple], str], latency: str, peers: Peers = lambda p, d: True) -> list[Cell]:
    """One cell per scale × target (capacity) and one per scale (the ceiling). The matrix compares
    stock PostgreSQL: designs on the extensions' server (PostgreSQL 17) are left to their own table."""
    if table is None or table.empty or "capacity_per_s" not in table:
        return []
    if "server" in table:
        table = table[table.server != "postgres_ext"]
    cells = []
    for key, rows in table.groupby(group, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        steady_s = _number(pd.to_numeric(rows.get("steady_s"), errors="coerce").min()) if "steady_s" in rows else None
        held = f"held over {steady_s:g}-s windows" if steady_s else "held over steady windows"
        for target, at in rows.groupby("target_p99_ms", sort=True):
            cells.append(_cell(workload, scale(key), f"{latency} p99 ≤ {target:g} ms ({held})", at,
                               "capacity_per_s", capacity_side, "no design held the target", unit, peers, steady_s))
        ceiling_s = _number(pd.to_numeric(rows.get("ceiling_s"), errors="coerce").min()) if "ceiling_s" in rows else None
        cells.append(_cell(workload, scale(key), "none (the ceiling, closed loop)", rows.drop_duplicates("variant"),
                           "ceiling_per_s", ceiling_side, "no ceiling recorded", unit, peers, ceiling_s))
    return cells


def _cell(workload: str, scale: str, target: str, rows: pd.DataFrame, column: str, side_of, nothing: str,
          unit: str, peers: Peers, window_s: float | None) -> Cell:
    postgres, dedicated = pair(rows, column, peers)
    sides = [None if row is None else side_of(row) for row in (postgres, dedicated)]
    missing = "; ".join(why for why in (_why_missing(rows, "postgres", sides[0], nothing, postgres),
                                        _why_missing(rows, "dedicated", sides[1], nothing, dedicated)) if why)
    unlike = postgres is not None and dedicated is not None and not peers(postgres["variant"], dedicated["variant"])
    # a ceiling cell says where its figure is the average of a rate that moved inside the window
    checks = "; ".join(load_check(row) + (drift_text(row) if column == "ceiling_per_s" else "")
                       for row in (postgres, dedicated) if row is not None)
    # a side held nowhere is bounded by the window that missed: a short probe's, until steady ones miss too
    bounds = [_number(row.get("below_window_s")) for row, side in zip((postgres, dedicated), sides, strict=True)
              if side is not None and side.below]
    window_s = min([w for w in (window_s, *bounds) if w is not None], default=None)
    scale += _postgres_best(rows, column, postgres, side_of, peers, unit)
    return Cell(workload, f"capacity, {scale}", target, sides[0], sides[1], TABLE, unit=unit, missing=missing,
                unjudged="not like for like" if unlike else "", window_s=window_s, load_check=checks)


def _postgres_best(rows: pd.DataFrame, column: str, chosen: pd.Series | None, side_of, peers: Peers,
                   unit: str) -> str:
    """"; Postgres's best: pg_skiplocked batch=10 1,164 jobs/s (its peer redis_reliable …: ≥ 1,000
    jobs/s)" where the pairing (the dedicated side's best first) left out a Postgres design with a
    higher figure; "" otherwise."""
    on_pg = rows[rows.side == "postgres"]
    fastest = best(on_pg, column)
    if fastest is None or chosen is None or _number(chosen.get(column)) is None:
        return ""
    if float(fastest[column]) <= float(chosen[column]):
        return ""
    mates = rows[(rows.side == "dedicated") & rows.variant.map(lambda v: peers(fastest["variant"], v))]
    mate = best(mates, column) if not mates.empty else None
    against = f" (its peer {mate['variant']}: {_figure(side_of(mate), unit)})" if mate is not None \
        else " (no dedicated design of its terms)"
    return f"; Postgres's best: {fastest['variant']} {_figure(side_of(fastest), unit)}{against}"


def _figure(side: Side | None, unit: str) -> str:
    if side is None:
        return "no figure"
    return f"{'≥ ' if side.limit == LOAD else ''}{side.value:,.0f} {unit}"


def load_check(row: pd.Series) -> str:
    """Whether the harness and the system's C tool agreed on the design's ceiling (the same
    server measured by two loads), and — where a compiled load ran the rate points — whether the
    harness held the target at the capacity rate too, so a cell says when a check failed or could
    not be made."""
    return ceiling_check(row) + rate_check(row)


#: a ceiling whose rate moved more than this inside its window is said to (it is the window's
#: average of a moving rate: another window length would give another figure)
DRIFT_SHOWN = 0.15


def drift_text(row: pd.Series) -> str:
    """"; its rate fell 52 % inside the window (last third over first; runs −55 to −48 %)"."""
    drift = _number(row.get("ceiling_drift"))
    if drift is None or abs(drift) < DRIFT_SHOWN:
        return ""
    low, high = _number(row.get("ceiling_drift_low")), _number(row.get("ceiling_drift_high"))
    runs = f"; runs {low:+.0%} to {high:+.0%}" if low is not None and high is not None and low != high else ""
    return (f"; its rate {'fell' if drift < 0 else 'rose'} {abs(drift):.0%} inside the window "
            f"(last third over first{runs}): an average of a moving rate")


def rate_check(row: pd.Series) -> str:
    """"; at 938/s the harness held the target too (p99 6.1 ms; the compiled load's 5.2)"."""
    rate = _number(row.get("rate_check_per_s"))
    if rate is None:
        return ""
    p99, tool_p99 = _number(row.get("rate_check_p99_ms")), _number(row.get("rate_check_tool_p99_ms"))
    ps = (f" (p99 {p99:.1f} ms" + (f"; the compiled load's {tool_p99:.1f}" if tool_p99 is not None else "") + ")"
          if p99 is not None else "")
    agrees = row.get("rate_agrees")
    at_figure = row.get("rate_check_at_figure")
    if at_figure is not None and not pd.isna(at_figure) and not bool(at_figure):
        held = "held" if row.get("rate_check_held") else "missed"
        return f"; at {rate:,.0f}/s, not the figure, the harness {held} the target{ps}: no check of the figure"
    if agrees is None or pd.isna(agrees):
        return f"; at {rate:,.0f}/s the harness missed the target limited by its own core{ps}: no check"
    return f"; at {rate:,.0f}/s the harness {'held the target too' if agrees else 'missed the target'}{ps}"


def ceiling_check(row: pd.Series) -> str:
    tool, agrees = row.get("ceiling_by"), row.get("agrees")
    if tool is None or pd.isna(tool):
        return f"{row['variant']}: ceiling by the harness alone (no C tool runs its operations in one window)"
    if agrees is None or pd.isna(agrees):
        if row.get("check_limit") == LOAD:
            return (f"{row['variant']}: harness ×{float(row['check_over_ceiling']):.2f} of {tool}, limited by its "
                    "own core (a floor: no check of the server)")
        return f"{row['variant']}: {tool} ceiling not checked against the harness"
    ratio = float(row["check_over_ceiling"])
    return (f"{row['variant']}: harness ×{ratio:.2f} of {tool} ({'agree' if agrees else 'disagree'}: 25 % band)"
            )


def _why_missing(rows: pd.DataFrame, side: str, found: Side | None, nothing: str,
                 row: pd.Series | None = None) -> str:
    """Why a side has no figure: no design of it at this scale, or none that held — then what its
    design tried: the rates its steady windows failed at, and whether its own load set the limit
    there (a floor of the load, not a verdict on the system); "" if it has a figure."""
    if found is not None:
        return ""
    name = "Postgres" if side == "postgres" else "dedicated"
    if not (rows.side == side).any():
        return f"{name}: no design measured at this scale"
    tried = _tried(row) if row is not None else ""
    return f"{name}: {nothing}" + (f" ({tried})" if tried else "")


def _tried(row: pd.Series) -> str:
    """"pg_skiplocked batch=10's 30-s window sets failed at 3,500 and 2,975/s (its 5-s probes held
    up to 3,500/s); no rate below 2,975/s was tried", with which CPU set was saturated where one
    was. A set fails at its first missed window, so a rate can fail with a window that held."""
    failed = row.get("confirm_failed")
    if not isinstance(failed, list) or not failed:
        return ""
    rates = " and ".join(f"{rate:,.0f}" for rate, _, _ in failed)
    window = _number(row.get("confirm_s"))
    text = f"{row['variant']}'s {f'{window:g}-s ' if window else ''}window sets failed at {rates}/s"
    probed = _number(row.get("probe_held_max_per_s"))
    text += f" (its short probes held up to {probed:,.0f}/s)" if probed else ""
    loaded = sum(limit == LOAD for _, _, limit in failed)
    if loaded:
        text += (f"; in {loaded} of {len(failed)} its load's CPU was saturated (a floor of the load there), "
                 f"in {len(failed) - loaded} neither side's" if loaded < len(failed)
                 else "; its load's CPU was saturated in each (floors of the load, not a verdict on the system)")
    lowest = min(rate for rate, _, _ in failed)
    return text + f"; the search stopped there: no rate below {lowest:,.0f}/s was tried"
