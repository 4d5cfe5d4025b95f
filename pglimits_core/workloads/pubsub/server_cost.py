"""What the server itself spent: CPU per delivery from its own process set, and for a
transactional system how close its commits came to one per WAL flush."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.runs import trusted
from pglimits_core.workloads.pubsub.systems.registry import system_class


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


def flush_share(group: pd.DataFrame) -> dict[str, float | None]:
    """A transactional system's commits/s (one transaction per publish call) against one commit
    per WAL flush (1 / the record's fsync-of-8 kB median): NOTIFY's commit lock lets one notifying
    commit flush at a time, so a share near 1 means the row measures the flush, not delivery.
    The Postgres sampler records WAL bytes and records, not flushes: the host's fsync it is.
    None for a system whose publishes are not transactions."""
    none = {"commits_share_of_flush_bound": None, "flush_bound_per_s": None}
    if "fsync_median_us" not in group or not system_class(str(group.system.iloc[0])).transactional:
        return none
    fsync = pd.to_numeric(group.fsync_median_us, errors="coerce").median()
    commits = pd.to_numeric(group.achieved_published_per_s, errors="coerce").median() / float(group.batch.iloc[0] or 1)
    if pd.isna(fsync) or pd.isna(commits) or not fsync:
        return none
    return {"commits_share_of_flush_bound": float(commits * fsync / 1e6), "flush_bound_per_s": 1e6 / float(fsync)}
