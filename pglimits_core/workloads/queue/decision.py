"""The queue's cells of the decision matrix: the best Postgres design against the Redis reliable
queue, within one durability class wherever both were measured in it.

- at each open-loop offered rate of the latency table, with send → claim p99 ≤ 50 ms (from the
  scheduled send to the claim's return; the ack is not in it, see ``latency_names``): a design
  meets the target when most of its runs were sustained within it (k of n), and the cell is
  decided on that (``target_outcome``), even for client-bound runs;
- the highest open-loop rate whose p99 met the bound (the cliff search);
- peak closed-loop throughput (any consumer count), like for like only: the same delivery
  guarantee (a DELETE claim is at-most-once, Redis's LMOVE+LREM at-least-once) and the same batch.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pandas as pd

from pglimits_core.analysis.decision import Cell, target_outcome, usable
from pglimits_core.analysis.runs import box_saturated, flag
from pglimits_core.analysis.verdict import Side
from pglimits_core.workloads.queue.head_to_head import number, pair
from pglimits_core.workloads.queue.latency_names import FROM, NAME, P99
from pglimits_core.workloads.queue.systems.registry import REGISTRY, SERVER_FOR

P99_TARGET_MS = 50.0
TARGET = f"{NAME} p99 ≤ {P99_TARGET_MS:.0f} ms ({FROM})"
DEDICATED = "redis"


def server_of(variant: str) -> str:
    """The server a variant's system runs on ("pg_delete batch=50" -> "postgres")."""
    return SERVER_FOR.get(str(variant).split()[0], "")


def delivery_of(variant: str) -> str:
    """The system's delivery guarantee ("at-least-once" / "at-most-once"), from its class."""
    return REGISTRY.system_class(str(variant).split()[0]).delivery_guarantee


def batch_of(variant: str) -> str:
    found = re.search(r"\bbatch=(\d+)", str(variant))
    return found.group(1) if found else ""


def client_bound(values: pd.Series) -> bool | None:
    """One verdict for a design's runs: bound if any run was; not bound only if every run says so."""
    known = values.dropna().astype(bool)
    if known.any():
        return True
    return False if len(known) == len(values) and len(values) else None


def decisions(tables: dict[str, pd.DataFrame]) -> list[Cell]:
    return [*latency_cells(tables.get("latency")), *cliff_cells(tables.get("cliff")),
            *peak_cells(tables.get("throughput"))]


def _latency_design(variant: str, runs: pd.DataFrame) -> dict:
    met = runs["sustained"].astype(bool) & (runs[P99] <= P99_TARGET_MS)
    p99 = runs[P99].median()
    return {"variant": variant, "met": int(met.sum()), "n": len(runs), "p99": p99,
            "low": runs[P99].min(), "high": runs[P99].max(),
            "side": Side(variant, 1000 / p99 if p99 else None, client_bound=client_bound(runs["client_bound"]),
                         box_saturated=flag(box_saturated(runs)))}


def _latency_rank(design: dict) -> tuple:
    """Most runs within the target first, then the lowest median p99."""
    return -design["met"], design["p99"]


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


def latency_cells(latency: pd.DataFrame | None) -> list[Cell]:
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
        cell = _latency_cell(f"open loop {rate:,.0f} msg/s, durability {durability}",
                             _best_latency(alike or on_pg), ded)
        if on_pg and ded is not None and not alike:  # e.g. only at-most-once delete-mode against at-least-once
            cell = replace(cell, unjudged="not like for like (delivery / batch)", outcome="")
        cells.append(cell)
    return cells


def _latency_cell(scale: str, pg: dict | None, ded: dict | None) -> Cell:
    def shown(design):
        if design is None:
            return "—"
        return f"p99 {design['p99']:,.1f} ms; {design['met']} of {design['n']} runs meet the target"

    spread = "" if pg is None or ded is None else \
        f"p99 {pg['low']:,.1f}–{pg['high']:,.1f} ms vs {ded['low']:,.1f}–{ded['high']:,.1f} ms over the runs"
    missing = "no Postgres design in this durability class" if pg is None else "no Redis design in this durability class"
    meets = [d is not None and 2 * d["met"] > d["n"] for d in (pg, ded)]
    outcome = "" if pg is None or ded is None else target_outcome(*meets, pg["side"], ded["side"])
    return Cell("queue", scale, TARGET, pg and pg["side"], ded and ded["side"], "latency",
                figures=(shown(pg), shown(ded)), spread=spread, postgres_meets=meets[0], missing=missing,
                outcome=outcome)


def cliff_cells(cliff: pd.DataFrame | None) -> list[Cell]:
    """The highest rate within the bound; the cliff search ran one design per system, so its
    durability classes may differ (the cell says which)."""
    if not usable(cliff, "variant", "durability_class", "sustainable_per_s", "client_bound"):
        return []
    rows = cliff.assign(rate=pd.to_numeric(cliff["sustainable_per_s"], errors="coerce")).dropna(subset=["rate"])
    pg = _highest(rows[rows["variant"].map(server_of) == "postgres"], "rate")
    ded = _highest(rows[rows["variant"].map(server_of) == DEDICATED], "rate")
    if pg is None and ded is None:
        return []
    classes = [str(r["durability_class"]) for r in (pg, ded) if r is not None]
    unjudged = "different durability classes" if len(set(classes)) > 1 else ""
    return [Cell("queue", f"highest open-loop rate within the bound (cliff search, batch=1 designs only; "
                 f"durability {' vs '.join(classes)})", TARGET, _side(pg, "rate"), _side(ded, "rate"), "cliff",
                 unit="msg/s", postgres_meets=pg is not None, missing="a side never met the bound",
                 unjudged=unjudged)]


def peak_cells(throughput: pd.DataFrame | None) -> list[Cell]:
    if not usable(throughput, "variant", "durability_class", "jobs_per_s", "min_jobs_per_s", "max_jobs_per_s",
                  "client_bound", "consumers"):
        return []
    cells = []
    for durability, rows in throughput.groupby("durability_class", sort=False):
        on_pg = rows[rows["variant"].map(server_of) == "postgres"]
        dedicated = rows[rows["variant"].map(server_of) == DEDICATED].sort_values("jobs_per_s", ascending=False)
        ded, pairs = _best_pair([row for _, row in dedicated.iterrows()], [row for _, row in on_pg.iterrows()],
                                lambda row: row["variant"])
        alike = pd.DataFrame(pairs) if pairs else None
        pg = _highest(on_pg if alike is None else alike, "jobs_per_s")
        if pg is None and ded is None:
            continue
        cells.append(Cell("queue", f"peak closed-loop throughput, durability {durability}", "none (flat out)",
                          _side(pg, "jobs_per_s"), _side(ded, "jobs_per_s"), "throughput", unit="jobs/s",
                          figures=(_peak_text(pg), _peak_text(ded)),
                          missing="no Postgres design in this durability class" if pg is None
                          else "no Redis design in this durability class",
                          unjudged="not like for like (delivery / batch)" if alike is None and pg is not None
                          and ded is not None else ""))
    return cells


def same_terms(postgres: str, dedicated: str) -> bool:
    """The one like-for-like test of every queue cell: the same delivery guarantee and, where
    both designs name one, the same batch size (claiming more per statement decides more than
    the engine)."""
    if delivery_of(postgres) != delivery_of(dedicated):
        return False
    return not batch_of(dedicated) or batch_of(postgres) in (batch_of(dedicated), "")


def _highest(rows: pd.DataFrame, column: str) -> pd.Series | None:
    return None if rows.empty else rows.loc[rows[column].idxmax()]


def _side(row: pd.Series | None, column: str) -> Side | None:
    if row is None:
        return None
    bound = row["client_bound"]
    spread = (float(row["min_jobs_per_s"]), float(row["max_jobs_per_s"])) if "min_jobs_per_s" in row else None
    return Side(str(row["variant"]), float(row[column]), client_bound=None if pd.isna(bound) else bool(bound),
                value_range=spread, server_cpu_us_per_op=number(row.get("server_cpu_us_per_job")),
                cpu_range=pair(row.get("min_server_cpu_us_per_job"), row.get("max_server_cpu_us_per_job")),
                box_saturated=flag(row.get("box_saturated")))



def _peak_text(row: pd.Series | None) -> str:
    if row is None:
        return "—"
    return f"{row['jobs_per_s']:,.0f} jobs/s ({row['min_jobs_per_s']:,.0f}–{row['max_jobs_per_s']:,.0f}, " \
           f"{int(row['consumers'])} consumers)"
