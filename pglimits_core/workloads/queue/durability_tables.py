"""Each queue run's durability class, and tables ordered by it, so a reader compares variants that
make the same promise (MEASURING.md: unmatched promises).

The classes are defined once, in ``workloads.queue.durability`` (keys ``per_commit``, ``periodic``,
``none`` and their labels). A run record carries its class (``params.outcome.adapter.durability_class``);
older records are classed from the settings their adapter described, else ``unknown``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

try:  # the one definition of the classes; a tree without it shows the keys themselves
    from pglimits_core.workloads.queue.systems.durability import CLASSES as _DEFINED
    from pglimits_core.workloads.queue.systems.durability import LABELS
except ImportError:  # pragma: no cover - only before the queue package defines them
    _DEFINED, LABELS = {}, {}

CLASSES = tuple(_DEFINED) or ("per_commit", "periodic", "none")  # strictest promise first
UNKNOWN = "unknown"
RANK = {name: rank for rank, name in enumerate((*CLASSES, UNKNOWN))}
# Options of a variant label that choose its durability, not its queue design.
DURABILITY_OPTIONS = frozenset({"synchronous", "synchronous_commit", "appendfsync", "appendonly"})
SQLITE_SYNCHRONOUS = {0: "none", 1: "periodic", 2: "per_commit", 3: "per_commit"}  # OFF/NORMAL/FULL/EXTRA in WAL mode


def run_class(manifest: dict[str, Any]) -> str:
    """The class a run recorded, or the one its adapter's described settings imply."""
    outcome = manifest.get("params", {}).get("outcome") or {}
    adapter = outcome.get("adapter") or {}
    return adapter.get("durability_class") or outcome.get("durability_class") or _derived(adapter)


def _derived(adapter: dict[str, Any]) -> str:
    """Records written before the class was: Postgres from ``synchronous_commit``/``fsync``,
    SQLite from ``PRAGMA synchronous`` (WAL mode), Redis without AOF is ``none``."""
    if "server_settings" in adapter:
        settings = adapter["server_settings"]
        if settings.get("fsync") == "off":
            return "none"
        return "periodic" if settings.get("synchronous_commit") == "off" else "per_commit"
    if "pragmas" in adapter:
        return SQLITE_SYNCHRONOUS.get(adapter["pragmas"].get("synchronous"), UNKNOWN)
    if "aof_enabled=0" in str(adapter.get("durability", "")):
        return "none"
    return UNKNOWN


def design(variant: str) -> str:
    """A variant label without its durability options: the queue design it measures
    ("sqlite_wal batch=1 synchronous=full" -> "sqlite_wal batch=1")."""
    return " ".join(t for t in str(variant).split() if t.split("=", 1)[0] not in DURABILITY_OPTIONS)


def label(name: str) -> str:
    """How a class is written for readers (``unknown`` and unlisted keys as themselves)."""
    return LABELS.get(name, name)


def ensure_class(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a ``durability_class`` column (``unknown`` where none was recorded)."""
    if "durability_class" in frame:
        return frame.assign(durability_class=frame.durability_class.fillna(UNKNOWN))
    return frame.assign(durability_class=UNKNOWN)


def fill_by_variant(frame: pd.DataFrame) -> pd.DataFrame:
    """A run with no class of its own (a crash drill describes no adapter) takes the class the
    other runs of its variant recorded."""
    if frame.empty:
        return frame
    frame = ensure_class(frame)
    missing = frame.durability_class == UNKNOWN
    known = frame[~missing].groupby("variant").durability_class.first()
    filled = frame.variant.map(known).fillna(UNKNOWN)
    return frame.assign(durability_class=frame.durability_class.where(~missing, filled))


def sort_by_class(table: pd.DataFrame, then: list[str]) -> pd.DataFrame:
    """Rows grouped by class (per commit, periodic, none, unknown), then by ``then``; the class
    column placed right after ``variant``."""
    if table.empty:
        return table
    table = ensure_class(table)
    rank = table.durability_class.map(RANK).fillna(len(RANK))
    ordered = table.assign(_rank=rank).sort_values(["_rank", *then], kind="stable").drop(columns="_rank")
    return ordered[_class_after_variant(list(ordered.columns))].reset_index(drop=True)


def _class_after_variant(columns: list[str]) -> list[str]:
    columns.remove("durability_class")
    at = columns.index("variant") + 1 if "variant" in columns else 0
    return [*columns[:at], "durability_class", *columns[at:]]


def classes_in(table: pd.DataFrame) -> list[str]:
    """The classes present in ``table``, in reading order."""
    present = set(ensure_class(table).durability_class)
    return sorted(present, key=lambda name: RANK.get(name, len(RANK)))


def sigkill_losers(recovery: pd.DataFrame | None) -> dict[str, list[str]]:
    """Per class, the designs whose acknowledged messages a server SIGKILL lost in the crash drill
    ("pg_delete batch=1 synchronous_commit=off lost 13 acknowledged messages in 3 drills"): one class can hold two
    promises (a periodic fsync that survives a process kill, and one that does not). Empty
    without a recovery table."""
    if recovery is None or recovery.empty or not {"variant", "durability_class", "lost"} <= set(recovery):
        return {}
    lost = ensure_class(recovery).assign(lost=pd.to_numeric(recovery.lost, errors="coerce"))
    found: dict[str, list[str]] = {}
    for row in lost[lost.lost > 0].itertuples():
        drills = f" in {row.drills:.0f} drills" if hasattr(row, "drills") and not pd.isna(row.drills) else ""
        found.setdefault(row.durability_class, []).append(f"{row.variant} lost {row.lost:,.0f} acknowledged messages{drills}")
    return found


def sigkill_note(recovery: pd.DataFrame | None, durability_class: str) -> str:
    """" (server SIGKILL drill: ... lost 13 acknowledged messages in 3 drills)" beside a class
    that holds a design which lost some; "" otherwise."""
    losers = sigkill_losers(recovery).get(durability_class)
    return f" (server SIGKILL drill: {'; '.join(losers)})" if losers else ""
