"""The mitigations table: what postpones the split, each mitigated window beside the same
mechanism unmitigated at the same churn level, from the ``inflation`` and ``stalls`` tables.

A row per mitigation (``<mechanism> | <mitigation>``, one run each): the churn's offered rate, the
jobs it completed per second over the window and — for a hold or an act — while the act ran (a
window average hides a hold that stalls the churn and a catch-up after it), whether the churn
was sustained, the largest dead-tuple reading during the act, and each tenant's p99 mitigated and
not. The unmitigated churn levels are the median (min–max) of their repetitions: a mitigation's
one run inside that range shows no effect.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pglimits_core.workloads.interference.mechanisms import split_mitigation

TENANTS = ("fts", "vector", "oltp", "churn")


def mitigations_table(inflation: pd.DataFrame, stalls: pd.DataFrame) -> pd.DataFrame:
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
        rows.append(mitigation_row(base, mitigation, level, mitigated, plain, stalls))
    return pd.DataFrame(rows)


def mitigation_row(base: str, mitigation: str, level: float, mitigated: pd.DataFrame, plain: pd.DataFrame,
                   stalls: pd.DataFrame) -> dict[str, Any]:
    row = {"mechanism": base, "mitigation": mitigation, "level": level,
           "churn_offered_per_s": _first(mitigated, "churn_rate"), "runs": _first(mitigated, "runs"),
           "completed_per_s": _first(mitigated, "jobs_per_s"), "unmitigated_completed_per_s": _first(plain, "jobs_per_s"),
           "during_act_per_s": during(stalls, f"{base} | {mitigation}", "rate"),
           "unmitigated_during_act_per_s": during(stalls, base, "rate"),
           "churn_sustained": _first(mitigated, "churn_sustained"),
           "dead_tuples_max_during": during(stalls, f"{base} | {mitigation}", "dead"),
           "unmitigated_dead_tuples_max_during": during(stalls, base, "dead")}
    for tenant in TENANTS:
        row[f"{tenant}_p99_ms"] = _first(mitigated[mitigated.tenant == tenant], "p99_ms")
        row[f"{tenant}_p99_ms_unmitigated"] = _first(plain[plain.tenant == tenant], "p99_ms")
    return row


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


def _first(rows: pd.DataFrame, column: str) -> Any:
    return rows[column].iloc[0] if column in rows and not rows.empty else None
