"""What each side of a pub/sub comparison waited for on disk, in the words of its own records.

Neither system persists the message: a NOTIFY, like a PUBLISH, is lost when its listener is not
connected or the server crashes before delivering it. Nor does either wait for a disk: a NOTIFY's
transaction takes an XID (``PreCommit_Notify`` needs one for the queue entries) and writes a
commit record, but PostgreSQL waits for that record's flush only when the transaction wrote WAL
before it (``RecordTransactionCommit``: "has not performed any WAL-logged operation" commits
asynchronously), so a transaction that only notifies commits without a flush whatever
``synchronous_commit`` says. The records at 357aa8f showed it: 36,609 notifying commits/s (pgbench
publishing, a C-tool experiment since retired; its records stay in that block) at ~42 B of device
writes per commit, where the same study's commits that also INSERT write a flushed page each.
A NOTIFY inside a transaction that writes (the commit-serialization experiment) does wait.
Each side's terms are read from the server settings its run's manifest recorded.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

#: the recorded server settings that decide what reaches the disk before a publish returns (a
#: run's server records only its own: Postgres the first two, Redis the last two)
PERSISTENCE_SETTINGS = ("synchronous_commit", "fsync", "appendonly", "save")
#: between the distinct settings of a row's runs (``tables._texts``)
MIXED = " | "
NOT_PERSISTED = ("Neither system persists the message itself (a NOTIFY, like a PUBLISH, "
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
    """Whether a bare NOTIFY's commit waits for a WAL flush (None: no synchronous_commit in the
    record): never — it wrote no WAL before its commit record (see the module), whatever
    ``synchronous_commit`` is; with ``fsync=off`` nothing is flushed at all."""
    if "synchronous_commit" not in settings:
        return None
    return False


def writes_nothing(settings: dict[str, str]) -> bool:
    """Nothing reaches the disk: no append-only file and no snapshots."""
    return settings.get("appendonly") == "no" and settings.get("save") == ""


def disk_text(row: pd.Series | dict) -> str:
    """One side's terms for a decision cell: what its publish waited for on disk."""
    shown = row.get("server_persistence")
    if isinstance(shown, str) and MIXED in shown:
        return f"its runs recorded different settings ({shown})"
    settings = parse(shown)
    if flushes_per_commit(settings) is False:
        return (f"its commit waits for no WAL flush ({shown}: a transaction that only notifies writes no WAL "
                "before its commit record); the notification itself is not persisted")
    if writes_nothing(settings):
        return f"nothing written to disk ({shown})"
    return f"recorded: {shown}" if settings else "durability settings not in these records"


def _number(value: Any) -> float | None:
    """A positive figure, or None (not recorded, not a number, or 0)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None  # NaN > 0 is False too


def unequal(pg: pd.Series | dict | None, other: pd.Series | dict | None) -> bool:
    """The records say the Postgres side waited for a WAL flush and the other wrote nothing
    (never, for bare NOTIFY publishes: see the module)."""
    if pg is None or other is None:
        return False
    return bool(flushes_per_commit(parse(pg.get("server_persistence")))) and \
        writes_nothing(parse(other.get("server_persistence")))


def terms_note(fanout: pd.DataFrame | None) -> str:
    """The head-to-head caption's terms: per system, the settings its runs recorded and what
    they mean."""
    if fanout is None or fanout.empty or "server_persistence" not in fanout:
        return f"{NOT_PERSISTED}; these records do not say what each side waited for on disk"
    rows = fanout.assign(system=fanout.variant.map(lambda label: str(label).split()[0]))
    parts = [f"{system}: {_summary(shown, parse(shown))}"
             for (system, shown), _ in rows.groupby(["system", rows.server_persistence.fillna("")], sort=True)]
    return f"{NOT_PERSISTED}; what each waited for on disk, from the runs' recorded settings: {'; '.join(parts)}"


def _summary(shown: str, settings: dict[str, str]) -> str:
    if not shown or MIXED in shown:
        return f"runs set up differently ({shown})" if shown else "settings not recorded"
    if flushes_per_commit(settings) is False:
        return f"{shown} (a bare NOTIFY's commit waits for no WAL flush: it wrote no WAL before its commit record)"
    return f"{shown} (nothing written to disk)" if writes_nothing(settings) else shown
