"""The mitigations table: what postpones the split, each mitigated window beside the same
mechanism unmitigated at the same churn level, from the ``inflation`` and ``stalls`` tables.

A row per mitigation (``<mechanism> | <mitigation>``, one run each): the churn's offered rate, the
jobs it completed per second over the window and — for a hold or an act — while the act ran (a
window average hides a hold that stalls the churn and a catch-up after it), whether the churn
was sustained, the largest dead-tuple reading during the act, and each tenant's p99 mitigated and
not. The unmitigated churn levels are the median (min–max) of their repetitions: a mitigation's
one run inside that range shows no effect.

A hold a server timeout released stood only for its first seconds, so its rate while it stood is
set beside the unmitigated hold's over the same seconds from the act's start (``same_seconds``),
not over the unmitigated hold's whole length (a 300-s hold stalls deeper the longer it stands);
``compared_over_s`` says which seconds each row compares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from pglimits_core.workloads.interference.keeping_up import (
    NEVER_RAN_BAR,
    churn_counts,
    mean_rate,
    never_ran,
)
from pglimits_core.workloads.interference.mechanisms import split_mitigation

#: the unmitigated mechanism's churn jobs/s over its act's first ``seconds`` (median of its runs)
SameSeconds = Callable[[str, float, float], "float | None"]

TENANTS = ("fts", "vector", "oltp", "churn")


def mitigations_table(inflation: pd.DataFrame, stalls: pd.DataFrame,
                      same_seconds: SameSeconds | None = None) -> pd.DataFrame:
    if inflation.empty or not {"mechanism", "tenant", "level"} <= set(inflation):
        return pd.DataFrame()
    postgres = inflation[inflation["side"] == "postgres"] if "side" in inflation else inflation
    rows = []
    for mechanism in dict.fromkeys(postgres.mechanism):
        base, mitigation = split_mitigation(mechanism)
        if mitigation is None:
            continue
        mitigated = postgres[postgres.mechanism == mechanism]
        level = mitigated.level.iloc[0]
        plain = postgres[(postgres.mechanism == base) & (postgres.level == level)]
        rows.append(mitigation_row(base, mitigation, level, mitigated, plain, stalls, same_seconds))
    return pd.DataFrame(rows)


def mitigation_row(base: str, mitigation: str, level: float, mitigated: pd.DataFrame, plain: pd.DataFrame,
                   stalls: pd.DataFrame, same_seconds: SameSeconds | None = None) -> dict[str, Any]:
    held = held_for(stalls, f"{base} | {mitigation}")
    unmitigated = during(stalls, base, "rate")
    if held is not None:
        unmitigated = same_seconds(base, level, held) if same_seconds is not None else None
    row = {"mechanism": base, "mitigation": mitigation, "level": level,
           "churn_offered_per_s": _first(mitigated, "churn_rate"), "runs": _first(mitigated, "runs"),
           "completed_per_s": _first(mitigated, "jobs_per_s"), "unmitigated_completed_per_s": _first(plain, "jobs_per_s"),
           "during_act_per_s": during(stalls, f"{base} | {mitigation}", "rate"),
           "unmitigated_during_act_per_s": unmitigated,
           "compared_over_s": f"the act's first {held:g} s" if held is not None else "the whole act",
           "churn_sustained": _first(mitigated, "churn_sustained"),
           "dead_tuples_max_during": during(stalls, f"{base} | {mitigation}", "dead"),
           "unmitigated_dead_tuples_max_during": during(stalls, base, "dead")}
    for tenant in TENANTS:
        row[f"{tenant}_p99_ms"] = _first(mitigated[mitigated.tenant == tenant], "p99_ms")
        row[f"{tenant}_p99_ms_unmitigated"] = _first(plain[plain.tenant == tenant], "p99_ms")
    for suffix, mechanism in (("", f"{base} | {mitigation}"), ("_unmitigated", base)):
        row.update(censored(row, suffix, stalls, mechanism))
    return row


def censored(row: dict[str, Any], suffix: str, stalls: pd.DataFrame, mechanism: str) -> dict[str, Any]:
    """The churn's share of scheduled jobs that never ran in the mechanism's act windows, and its
    job p99 marked "≥" where that share is over the bar (the p99 of the completed jobs is then a
    lower bound: those still waiting are not in it)."""
    rows = stalls[stalls.mechanism == mechanism] if "mechanism" in stalls else stalls
    share = never_ran(rows) if not rows.empty else None
    p99 = row.get(f"churn_p99_ms{suffix}")
    marked = f"≥ {p99}" if share is not None and share > NEVER_RAN_BAR and p99 is not None else p99
    return {f"churn_never_ran_share{suffix}": None if share is None else round(share, 3), f"churn_p99_ms{suffix}": marked}


def during(stalls: pd.DataFrame, mechanism: str, what: str) -> float | None:
    """While the act ran: the churn's completed jobs per second (``rate``; for a hold a server
    timeout released, over the seconds it stood) or the largest dead-tuple reading (``dead``),
    median over the repetitions; None where the window had no act."""
    if stalls.empty or not {"mechanism", "stretch"} <= set(stalls):
        return None
    rows = stalls[(stalls.mechanism == mechanism) & (stalls.stretch == "during")]
    if rows.empty:
        return None
    if what == "dead":
        values = pd.to_numeric(rows.get("dead_tuples_max"), errors="coerce")
    else:
        seconds = pd.to_numeric(rows.end_s, errors="coerce") - pd.to_numeric(rows.start_s, errors="coerce")
        values = pd.to_numeric(rows.jobs, errors="coerce") / seconds.where(seconds > 0)
        if "held_completed_per_s" in rows:  # a hold a timeout released: the seconds it stood
            values = pd.to_numeric(rows.held_completed_per_s, errors="coerce").fillna(values)
    values = values.dropna()
    return None if values.empty else round(float(values.median()), 1)


def held_for(stalls: pd.DataFrame, mechanism: str) -> float | None:
    """How long a timeout let the mechanism's hold stand (s, median of its runs); None: not released."""
    if stalls.empty or "held_s" not in stalls:
        return None
    rows = stalls[(stalls.mechanism == mechanism) & (stalls.stretch == "during")]
    held = pd.to_numeric(rows.held_s, errors="coerce").dropna()
    return None if held.empty else round(float(held.median()), 1)


def same_seconds_from(runs: pd.DataFrame) -> SameSeconds:
    """``same_seconds`` over the Postgres act windows of ``runs`` (one row per run: mechanism,
    level, outcome with the act's start, the record's path)."""
    def rate(mechanism: str, level: float, seconds: float) -> float | None:
        found = []
        for _, run in runs[(runs.mechanism == mechanism) & (runs.level == level)].iterrows():
            start = ((run.get("outcome") or {}).get("events") or {}).get("act_start_s")
            if start is not None:
                found.append(mean_rate(churn_counts(run.get("path")), float(start), float(start) + seconds))
        found = [value for value in found if value is not None]
        return round(float(pd.Series(found).median()), 1) if found else None
    return rate


def _first(rows: pd.DataFrame, column: str) -> Any:
    return rows[column].iloc[0] if column in rows and not rows.empty else None
