"""The queue's cells of the decision matrix: the best Postgres design against the Redis reliable
queue, within one durability class wherever both were measured in it.

- at each open-loop offered rate of the latency table, with send → claim p99 ≤ 50 ms (from the
  scheduled send to the claim's return; the ack is not in it, see ``latency_names``): a design
  meets the target when most of its runs were sustained within it (k of n), and the cell is
  decided on that (``target_outcome``), even for load-limited runs; its words say when one
  side's p99 was lower in every run;
- the best closed-loop throughput of the measured consumer counts, like for like only: the same
  delivery guarantee (a DELETE claim is at-most-once, Redis's LMOVE+LREM at-least-once) and the
  same batch, judged on rate by the one rule.

These are the cells of records without the capacity experiment (``capacity_cells``), whose
steady windows decide the matrix wherever it was run.

A latency cell whose chosen design's producers never offered the rate (``offered_only``) is no
verdict on either queue ("not decided here: the harness, not the queue: ..."). Where the server SIGKILL drill lost
acknowledged messages of a design in the cell's durability class, the class says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from pglimits_core.analysis.decision import Cell, TargetRuns, target_outcome, usable
from pglimits_core.analysis.runs import runs_limit
from pglimits_core.analysis.verdict import Side, limit_from_record
from pglimits_core.workloads.queue.durability_tables import sigkill_note
from pglimits_core.workloads.queue.head_to_head import number
from pglimits_core.workloads.queue.latency_names import FROM, NAME, P99
from pglimits_core.workloads.queue.like_for_like import (  # noqa: F401 (the like-for-like test, re-exported)
    batch_of,
    delivery_of,
    offered_only,
    same_terms,
    server_of,
)

P99_TARGET_MS = 50.0
TARGET = f"{NAME} p99 ≤ {P99_TARGET_MS:.0f} ms ({FROM})"
DEDICATED = "redis"
DEDICATED_NAME = "Redis"


def decisions(tables: dict[str, pd.DataFrame]) -> list[Cell]:
    recovery = tables.get("recovery")
    return [*latency_cells(tables.get("latency"), recovery), *peak_cells(tables.get("throughput"), recovery)]


def _latency_design(variant: str, runs: pd.DataFrame) -> dict:
    met = runs["sustained"].astype(bool) & (runs[P99] <= P99_TARGET_MS)
    p99, low, high = runs[P99].median(), runs[P99].min(), runs[P99].max()
    return {"variant": variant, "met": int(met.sum()), "n": len(runs), "p99": p99,
            "low": low, "high": high, "short": offered_only(runs),
            # the p99 as a higher-is-better figure, and its runs' range the same way round
            "side": Side(variant, 1000 / p99 if p99 else None, limit=runs_limit(runs),
                         value_range=(1000 / high, 1000 / low) if low else None)}


def _latency_rank(design: dict) -> tuple:
    """Most runs within the target first, then a design its producers offered the rate to, then
    the lowest median p99."""
    return -design["met"], bool(design["short"]), design["p99"]


def _best_latency(designs: list[dict]) -> dict | None:
    return min(designs, key=_latency_rank, default=None)


def _best_pair(dedicated: list, on_pg: list, variant_of) -> tuple[Any, list]:
    """The best dedicated design (``dedicated`` is best first) that has a like-for-like Postgres
    design, with those designs; when none has one, the best dedicated design and []."""
    for design in dedicated:
        alike = [pg for pg in on_pg if same_terms(variant_of(pg), variant_of(design))]
        if alike:
            return design, alike
    return (dedicated[0] if dedicated else None), []


def latency_cells(latency: pd.DataFrame | None, recovery: pd.DataFrame | None = None) -> list[Cell]:
    if not usable(latency, "variant", "durability_class", "offered_per_s", "sustained", P99, "client_bound"):
        return []
    cells = []
    for (rate, durability), rows in latency.groupby(["offered_per_s", "durability_class"], sort=True):
        designs = [_latency_design(v, runs) for v, runs in rows.groupby("variant", sort=False)]
        on_pg = [d for d in designs if server_of(d["variant"]) == "postgres"]
        dedicated = sorted((d for d in designs if server_of(d["variant"]) == DEDICATED), key=_latency_rank)
        ded, alike = _best_pair(dedicated, on_pg, lambda design: design["variant"])
        if not on_pg and ded is None:
            continue
        pg = _best_latency(alike or on_pg)
        cell = _latency_cell(f"open loop {rate:,.0f} msg/s, durability {durability}{sigkill_note(recovery, durability)}",
                             pg, ded)
        if on_pg and ded is not None and not alike:  # e.g. only at-most-once delete-mode against at-least-once
            cell = replace(cell, unjudged="not like for like (delivery / batch)", outcome="")
        elif short := harness_short(pg, ded):
            cell = replace(cell, unjudged=short, outcome="")
        cells.append(cell)
    return cells


def harness_short(*designs: dict | None) -> str:
    """Why a latency cell is no verdict on either queue: a side's producers never offered the
    rate (``like_for_like.offered_only``), "" when both did."""
    short = [f"{d['short']} to {d['variant']}" for d in designs if d is not None and d["short"]]
    return f"the harness, not the queue: {'; '.join(short)}" if short else ""


def _latency_cell(scale: str, pg: dict | None, ded: dict | None) -> Cell:
    def shown(design):
        if design is None:
            return "—"
        return f"p99 {design['p99']:,.1f} ms; {design['met']} of {design['n']} runs meet the target"

    spread = "" if pg is None or ded is None else \
        f"p99 {pg['low']:,.1f}–{pg['high']:,.1f} ms vs {ded['low']:,.1f}–{ded['high']:,.1f} ms over the runs"
    missing = "no Postgres design in this durability class" if pg is None else "no Redis design in this durability class"
    meets = [d is not None and 2 * d["met"] > d["n"] for d in (pg, ded)]
    outcome = "" if pg is None or ded is None else target_outcome(
        *meets, pg["side"], ded["side"], dedicated_name=DEDICATED_NAME,
        runs=(TargetRuns(pg["met"], pg["n"], pg["low"], pg["high"]), TargetRuns(ded["met"], ded["n"], ded["low"], ded["high"])))
    return Cell("queue", scale, TARGET, pg and pg["side"], ded and ded["side"], "latency",
                figures=(shown(pg), shown(ded)), spread=spread, postgres_meets=meets[0], missing=missing,
                outcome=outcome)


def peak_cells(throughput: pd.DataFrame | None, recovery: pd.DataFrame | None = None) -> list[Cell]:
    if not usable(throughput, "variant", "durability_class", "jobs_per_s", "min_jobs_per_s", "max_jobs_per_s",
                  "client_bound", "consumers"):
        return []
    cells = [_peak_cell(f"{durability}{sigkill_note(recovery, durability)}", rows)
             for durability, rows in throughput.groupby("durability_class", sort=False)]
    return [cell for cell in cells if cell is not None]


def _peak_cell(durability: str, rows: pd.DataFrame) -> Cell | None:
    """The best like-for-like pair of one durability class (``durability``: its name as shown)."""
    on_pg = rows[rows["variant"].map(server_of) == "postgres"]
    dedicated = rows[rows["variant"].map(server_of) == DEDICATED].sort_values("jobs_per_s", ascending=False)
    ded, pairs = _best_pair([row for _, row in dedicated.iterrows()], [row for _, row in on_pg.iterrows()],
                            lambda row: row["variant"])
    alike = pd.DataFrame(pairs) if pairs else None
    pg = _highest(on_pg if alike is None else alike, "jobs_per_s")
    if pg is None and ded is None:
        return None
    unlike = alike is None and pg is not None and ded is not None
    scale = f"best closed-loop throughput of the measured consumer counts, durability {durability}"
    cell = Cell("queue", scale + _faster_unpaired(on_pg, pg) if alike is not None else scale,
                "none (flat out)", _side(pg, "jobs_per_s"), _side(ded, "jobs_per_s"), "throughput", unit="jobs/s",
                figures=(_peak_text(pg), _peak_text(ded)),
                missing="no Postgres design in this durability class" if pg is None
                else "no Redis design in this durability class",
                unjudged="not like for like (delivery / batch)" if unlike else "")
    return cell


def _faster_unpaired(on_pg: pd.DataFrame, chosen: pd.Series | None) -> str:
    """The Postgres design the like-for-like pairing left out though it ran faster than the one
    chosen (e.g. a DELETE claim, at-most-once, 50 per claim, with no Redis design of its terms):
    named in the cell, so "best" never hides a faster row of the table."""
    fastest = _highest(on_pg, "jobs_per_s")
    if fastest is None or chosen is None or float(fastest["jobs_per_s"]) <= float(chosen["jobs_per_s"]):
        return ""
    return (f"; like for like (same delivery guarantee and batch) — {fastest['variant']} ran faster, "
            f"{fastest['jobs_per_s']:,.0f} jobs/s at {int(fastest['consumers'])} consumers, with no Redis "
            "design of its terms")


def _highest(rows: pd.DataFrame, column: str) -> pd.Series | None:
    return None if rows.empty else rows.loc[rows[column].idxmax()]


def _side(row: pd.Series | None, column: str) -> Side | None:
    if row is None:
        return None
    spread = (float(row["min_jobs_per_s"]), float(row["max_jobs_per_s"])) if "min_jobs_per_s" in row else None
    return Side(str(row["variant"]), float(row[column]), limit=limit_from_record(row), value_range=spread,
                server_cpu_us_per_op=number(row.get("server_cpu_us_per_job")))


def _peak_text(row: pd.Series | None) -> str:
    if row is None:
        return "—"
    return f"{row['jobs_per_s']:,.0f} jobs/s ({row['min_jobs_per_s']:,.0f}–{row['max_jobs_per_s']:,.0f}, " \
           f"{int(row['consumers'])} consumers)"
