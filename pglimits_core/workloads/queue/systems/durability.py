"""Durability classes: the one place that says what a queue's acknowledgement promises on disk.

Comparisons are only fair inside a class, so every queue variant's ``describe()`` names its
class, computed from the settings read back from the running server (see each adapter's
``promises`` table and ``durability_setting()``):

- ``per_commit``: the acknowledgement waits for the fsync of that write.
- ``periodic``: acknowledged first, fsynced later by a timer or a checkpoint (batched).
- ``none``: never fsynced by the system (or not written at all).

A second, separate fact per setting is ``survives_process_kill``: whether an acknowledged
write has already reached the kernel. A SIGKILL of a process keeps the OS page cache, so a
crash drill that kills processes can only catch writes that lived in process memory; it cannot
tell the three classes apart (only an OS crash or a power loss would).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DurabilityClass:
    key: str     # short and stable: what tables and records use
    label: str   # what a table header shows
    why: str     # what the class promises, in one line


PER_COMMIT = DurabilityClass(
    "per_commit", "fsync per commit",
    "the acknowledgement waits for the fsync: an acknowledged message survives an OS crash or power loss")
PERIODIC = DurabilityClass(
    "periodic", "fsync periodic/batched",
    "acknowledged before its fsync (a timer or checkpoint syncs later): an OS crash or power loss "
    "can lose the last acknowledged messages")
NONE = DurabilityClass(
    "none", "no fsync",
    "never fsynced by the system (or kept in memory only): an OS crash or power loss can lose any "
    "acknowledged message")

CLASSES: dict[str, DurabilityClass] = {c.key: c for c in (PER_COMMIT, PERIODIC, NONE)}
LABELS: dict[str, str] = {c.key: c.label for c in CLASSES.values()}  # for table headers


@dataclass(frozen=True)
class Promise:
    """What one system promises under one setting: its class, whether an acknowledged write is
    already in the kernel (so a process kill cannot lose it), and how, in the system's words."""

    durability_class: DurabilityClass
    survives_process_kill: bool
    how: str

    def describe(self, setting: str) -> dict[str, Any]:
        return {"durability_class": self.durability_class.key,
                "durability_label": self.durability_class.label,
                "durability_setting": setting, "durability": self.how,
                "survives_process_kill": self.survives_process_kill}


def promise_for(system: str, promises: dict[str, Promise], setting: str) -> Promise:
    """The promise of a read-back setting; an unknown one is an error, never a guessed class."""
    if setting not in promises:
        raise ValueError(f"{system}: no durability class for setting {setting!r} "
                         f"(known: {', '.join(promises)})")
    return promises[setting]
