"""What the server itself spent: CPU per delivery from its own process set."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.runs import trusted


def per_delivery_us(group: pd.DataFrame, column: str) -> pd.Series:
    """Each run's CPU µs per delivery: ``column`` (median % of one core) over its deliveries/s."""
    if column not in group:
        return pd.Series(dtype=float)
    deliveries = pd.to_numeric(group.deliveries_per_s, errors="coerce").where(lambda d: d > 0)
    return pd.to_numeric(group[column], errors="coerce") / 100 * 1e6 / deliveries


def cpu_range_us(group: pd.DataFrame) -> dict[str, float | None]:
    """The lowest and highest server CPU µs per delivery of the runs whose CPU split can be
    believed (the verdict's worst case)."""
    per = per_delivery_us(trusted(group), "server_cpu_pct").dropna()
    return {"server_cpu_us_low": float(per.min()) if len(per) else None,
            "server_cpu_us_high": float(per.max()) if len(per) else None}
