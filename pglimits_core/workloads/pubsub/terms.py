"""What each side of a pub/sub comparison waited for on disk, in the words of its own records.

Neither system persists the message: a NOTIFY, like a PUBLISH, is lost when its listener is not
connected or the server crashes before delivering it. But a NOTIFY's transaction takes an XID
(``PreCommit_Notify`` needs one for the queue entries), so its commit writes a commit record and,
unless ``synchronous_commit`` is off, waits for that record's WAL flush; a PUBLISH is no
transaction. Whatever the comparison, the reader is told which of the two paid for a flush —
from the server settings each run's manifest recorded and the host's fsync figure (the same one
``server_cost.flush_share`` turns into one commit per WAL flush), never from a typed number.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

#: the recorded server settings that decide what reaches the disk before a publish returns (a
#: run's server records only its own: Postgres the first two, Redis the last two)
PERSISTENCE_SETTINGS = ("synchronous_commit", "fsync", "appendonly", "save")
#: between the distinct settings of a row's runs (``tables._texts``)
MIXED = " | "
NOT_PERSISTED = ("Not the same work on disk: neither system persists the message itself (a NOTIFY, like a PUBLISH, "
                 "is lost when its listener is not connected or the server crashes before delivering it)")


def recorded_settings(manifest: dict[str, Any]) -> str | None:
    """The run's servers' persistence settings as recorded, e.g. ``synchronous_commit=on, fsync=on``."""
    found: dict[str, str] = {}
    for server in (manifest.get("servers") or {}).values():
        settings = server.get("settings") or {} if isinstance(server, dict) else {}
        found.update({key: str(settings[key]) for key in PERSISTENCE_SETTINGS if key in settings})
    return ", ".join(f"{key}={_shown(found[key])}" for key in PERSISTENCE_SETTINGS if key in found) or None


def _shown(value: str) -> str:
    return value if value else '""'  # Redis's save="" (no snapshots) would otherwise read as nothing


def parse(text: Any) -> dict[str, str]:
    """``recorded_settings``'s text back as a dict (``save=""`` is the empty string); runs that
    recorded different settings give none (no claim holds for all of them)."""
    if not isinstance(text, str) or not text or MIXED in text:
        return {}
    pairs = (part.partition("=") for part in text.split(", "))
    return {key: value.strip('"') for key, _, value in pairs}


def flushes_per_commit(settings: dict[str, str]) -> bool | None:
    """A commit waits for its WAL flush (None: no synchronous_commit in the record)."""
    if "synchronous_commit" not in settings:
        return None
    return settings["synchronous_commit"] != "off" and settings.get("fsync", "on") != "off"


def writes_nothing(settings: dict[str, str]) -> bool:
    """Nothing reaches the disk: no append-only file and no snapshots."""
    return settings.get("appendonly") == "no" and settings.get("save") == ""


def disk_text(row: pd.Series | dict) -> str:
    """One side's terms for a decision cell: what its publish waited for on disk, and for a
    flushing side where its commits stood against one commit per WAL flush."""
    shown = row.get("server_persistence")
    if isinstance(shown, str) and MIXED in shown:
        return f"its runs recorded different settings ({shown})"
    settings = parse(shown)
    flushes = flushes_per_commit(settings)
    if flushes:
        return f"each commit waits for a WAL flush ({shown}{_bound(row)}); the notification itself is not persisted"
    if flushes is False:
        return f"commits do not wait for a WAL flush ({shown})"
    if writes_nothing(settings):
        return f"nothing written to disk ({shown})"
    return f"recorded: {shown}" if settings else "durability settings not in these records"


def _bound(row: pd.Series | dict) -> str:
    bound, share = _number(row.get("flush_bound_per_s")), _number(row.get("commits_share_of_flush_bound"))
    if bound is None:
        return "; no fsync figure in the record"
    # above 100 % of what one flush per commit allows, the commits must have shared flushes
    allows = f"{bound:,.0f}/s that one flush per commit allows at the host's fsync-of-8 kB median of {1e6 / bound:.0f} µs"
    return f"; its commits at {share:.0%} of the {allows}" if share is not None else f"; the {allows}"


def _number(value: Any) -> float | None:
    """A positive figure, or None (not recorded, not a number, or 0)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None  # NaN > 0 is False too


def unequal(pg: pd.Series | dict | None, other: pd.Series | dict | None) -> bool:
    """The records say the Postgres side waited for a WAL flush and the other wrote nothing."""
    if pg is None or other is None:
        return False
    return bool(flushes_per_commit(parse(pg.get("server_persistence")))) and \
        writes_nothing(parse(other.get("server_persistence")))


def terms_note(fanout: pd.DataFrame | None) -> str:
    """The head-to-head caption's terms: per system, the settings its runs recorded and what
    they mean, with the host's fsync figure for a side that flushed."""
    if fanout is None or fanout.empty or "server_persistence" not in fanout:
        return f"{NOT_PERSISTED}; these records do not say what each side waited for on disk"
    rows = fanout.assign(system=fanout.variant.map(lambda label: str(label).split()[0]))
    parts, flushing, silent = [], False, False
    for (system, shown), group in rows.groupby(["system", rows.server_persistence.fillna("")], sort=True):
        settings = parse(shown)
        flushing |= bool(flushes_per_commit(settings))
        silent |= writes_nothing(settings)
        parts.append(f"{system}: {_summary(shown, settings, group)}")
    paid = (" — only the Postgres side pays a WAL flush per transaction, and its rates and server CPU "
            "include that commit" if flushing and silent else "")
    return f"{NOT_PERSISTED}; what each waited for on disk, from the runs' recorded settings: {'; '.join(parts)}{paid}"


def _summary(shown: str, settings: dict[str, str], group: pd.DataFrame) -> str:
    if not shown or MIXED in shown:
        return f"runs set up differently ({shown})" if shown else "settings not recorded"
    flushes = flushes_per_commit(settings)
    if flushes:
        return f"{shown} (each commit waits for a WAL flush{_fsync(group)})"
    if flushes is False:
        return f"{shown} (commits do not wait for a WAL flush)"
    return f"{shown} (nothing written to disk)" if writes_nothing(settings) else shown


def _fsync(group: pd.DataFrame) -> str:
    """The host's fsync-of-8 kB median behind the rows' flush bound (a range if the runs differ)."""
    bounds = pd.to_numeric(group.get("flush_bound_per_s"), errors="coerce").dropna() \
        if "flush_bound_per_s" in group else pd.Series(dtype=float)
    if bounds.empty:
        return "; no fsync figure in the records"
    low, high = 1e6 / bounds.max(), 1e6 / bounds.min()
    us = f"{low:.0f} µs" if round(low) == round(high) else f"{low:.0f}–{high:.0f} µs"
    return f"; the host's fsync-of-8 kB median {us}: at most ~{bounds.median():,.0f} notifying commits/s, one per flush"
