"""The capacity table as a reader sees it first: one row per design, its ceiling and its capacity at
each latency target, in words a results page can print (``capacity_table`` holds the numbers; this
only formats them, the same for every workload).

- **ceiling**: median (lowest–highest of its runs) and who set it — ``≥`` where the load's CPU set
  was the limit (a floor) — with the load that drove it and, where a C tool did, the harness's
  agreement check;
- **capacity at each target**: the bracket from the highest rate whose every steady window held to
  the next rate whose steady window missed, else its server-limited ceiling (every steady window of the design counts at each target, judged
  again: a 50-ms search's window at 4 ms met 10 ms — the row then names the search) (``≥`` where nothing above it was seen to miss, or the load set the
  limit), how many windows held and their p99; "none held" with the rates whose windows failed;
- **server µs per item** at the capacity rate (exact window CPU), shown, never deciding.
"""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.verdict import LOAD
from pglimits_core.experiments.capacity_cells import capacity_bracket, drift_text

#: the columns that tell two designs of one variant apart (the search's stream, pub/sub's fan-out)
SPLITS = ("stream",)


def _number(value) -> float | None:
    return None if value is None or (not isinstance(value, list | tuple) and pd.isna(value)) else float(value)


def ceiling_text(row: pd.Series, unit: str) -> str:
    rate = _number(row.get("ceiling_per_s"))
    if rate is None:
        return "—"
    floor = "≥ " if row.get("ceiling_limit") == LOAD else ""
    low, high = _number(row.get("ceiling_low")), _number(row.get("ceiling_high"))
    spread = f" ({low:,.0f}–{high:,.0f})" if low is not None and high is not None and low != high else ""
    by = row.get("ceiling_by") if isinstance(row.get("ceiling_by"), str) else "harness"
    clients = _number(row.get("ceiling_clients"))
    where = f", {clients:.0f} clients" if clients else ""
    limit = {"server": "server-limited", LOAD: "its load the limit", "neither": "neither set saturated"}.get(
        row.get("ceiling_limit"), "which side set it not known in every run")
    if row.get("ceiling_limit") == "server" and _number(row.get("ceiling_server_cores")) == 0:
        # an embedded engine (SQLite): no server process, engine and program share the load's set
        limit = "engine-limited: the engine runs inside the load's program, both on the load's CPU set"
    text = f"{floor}{rate:,.0f}{spread} {unit} ({by}{where}; {limit})"
    return text + _check_text(row) + drift_text(row)


def _check_text(row: pd.Series) -> str:
    ratio = _number(row.get("check_over_ceiling"))
    if ratio is None:
        return ""
    agrees = row.get("agrees")
    if agrees is None or pd.isna(agrees):
        verdict = "its own core the limit: no check"
    else:
        verdict = "agree" if agrees else "disagree"
    return f"; harness ×{ratio:.2f} ({verdict})"


def capacity_text(row: pd.Series, unit: str) -> str:
    rate = _number(row.get("capacity_per_s"))
    if rate is None:
        failed = row.get("confirm_failed")
        if isinstance(failed, list) and failed:
            rates = ", ".join(f"{r:,.0f}" for r, _, _ in failed)
            return f"none held (steady windows failed at {rates}/s)"
        below = _number(row.get("below_per_s"))
        if below is not None:
            p99, window = _number(row.get("below_p99_ms")), _number(row.get("below_window_s"))
            at = f"p99 {p99:.1f} ms at {below:,.0f}/s" if p99 is not None else f"missed at {below:,.0f}/s"
            length = f", a {window:g}-s window" if window else ""
            return f"none held: under {below:,.0f} {unit} ({at}{length}: the lowest with ≥ 100 operations)" + \
                _held_above(row)
        probed = _number(row.get("probe_held_max_per_s"))
        return "none held" + ("" if probed else " (no probe held)")
    _, top, bound = capacity_bracket(row)
    bracket = f"≥ {rate:,.0f}" if bound == "floor" else f"{rate:,.0f}–{top:,.0f}"
    p99 = _number(row.get("p99_ms"))
    held = str(row.get("confirmations") or "")
    other = _number(row.get("capacity_windows_of_ms"))
    of = f"the p99 ≤ {other:g} ms search's windows" if other is not None else ""
    top_is = "top: its ceiling" if bound == "ceiling" else ""
    details = "; ".join(part for part in (top_is, held, f"p99 {p99:.1f} ms" if p99 is not None else "", of) if part)
    return f"{bracket} {unit}" + (f" ({details})" if details else "") + _held_above(row) + _window_above(row)


def _window_above(row: pd.Series) -> str:
    """"; a window at 2,000/s met this target too" — the search stopped lower (a first short
    probe's miss sends it down), so the figure is not an upper bound there."""
    above, miss = _number(row.get("window_held_above_per_s")), _number(row.get("held_above_miss_per_s"))
    if above is None or above == miss:
        return ""
    return f"; a window at {above:,.0f}/s met this target too"


def _held_above(row: pd.Series) -> str:
    """"; not monotone: every window held at 1,313 too, above the miss" (a tail that is not
    monotone in rate: the capacity is read under the miss, the rate that held above it shown)."""
    above, miss = _number(row.get("held_above_miss_per_s")), _number(row.get("capacity_miss_per_s"))
    if above is None:
        return ""
    under = f" at {miss:,.0f}" if miss is not None else ""
    return f"; not monotone: every window held at {above:,.0f} too, above the miss{under}"


def capacity_summary(table: pd.DataFrame | None, unit: str) -> pd.DataFrame:
    """One row per design: its ceiling, its capacity at each target, server µs per item there."""
    if table is None or table.empty or "ceiling_per_s" not in table:
        return pd.DataFrame()
    splits = [c for c in SPLITS if c in table]
    rows = []
    for key, design in table.groupby(["variant", *splits], sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        first = design.iloc[0]
        # a design's durability promise beside its name, where the workload has one (a periodic
        # fsync's figure is not a per-commit one's)
        promise = f" [durability {first.durability_class}]" if isinstance(first.get("durability_class"), str) else ""
        row = {"design": " · ".join(str(k) for k in key if k is not None and not pd.isna(k)) + promise,
               "side": first.get("side"), "ceiling": ceiling_text(first, unit)}
        for _, at in design.dropna(subset=["target_p99_ms"]).iterrows() if "target_p99_ms" in design else []:
            row[f"capacity at p99 ≤ {at.target_p99_ms:g} ms"] = capacity_text(at, unit)
            cpu = _number(at.get("server_cpu_us_per_item"))
            row[f"server µs/item there ({at.target_p99_ms:g} ms)"] = "—" if cpu is None else f"{cpu:,.0f}"
        rows.append(row)
    return pd.DataFrame(rows).fillna("—")


def capacity_lines(tables: dict[str, pd.DataFrame], unit: str) -> list[str]:
    """The results page's capacity block: a sentence saying what the columns are, then the table."""
    summary = capacity_summary(tables.get("capacity"), unit)
    if summary.empty:
        return []
    return ["**Capacity, the headline** (the core experiment: each design's ceiling, closed loop over steady "
            "windows, and per latency target the highest offered rate whose p99 from the intended start held "
            "in every steady window with no steady window missing at or below it, bracketed by the next rate "
            "that missed; `≥` = a floor, its load the limit "
            "or no miss seen above it; server µs per item at that rate is shown, never deciding):", "",
            summary.to_markdown(index=False), ""]
