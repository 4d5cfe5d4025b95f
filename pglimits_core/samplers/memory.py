"""The server's memory, read one way for every workload: each process of its trees (the server's
pids and all their children), resident set and, where asked, proportional set size.

RSS summed over Postgres backends counts ``shared_buffers`` once per backend that touched it; PSS
splits shared pages between the processes sharing them, so its sum is the honest total. PSS
reads ``/proc/<pid>/smaps`` (slow): ask for it for a point's one reading, not every second.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessMemory:
    rss_bytes: int
    pss_bytes: int | None  # None when not asked for (or the kernel has none)


def process_trees(pids: Iterable[int]) -> list:
    """The live processes of each pid's tree (a pid that is gone contributes nothing)."""
    import psutil

    found = []
    for pid in pids:
        try:
            root = psutil.Process(pid)
            found += [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
    return found


def server_memory(pids: Iterable[int], with_pss: bool = False) -> list[ProcessMemory]:
    """One reading per process of the server's trees; a process that ends meanwhile is skipped."""
    import psutil

    readings = []
    for process in process_trees(pids):
        try:
            info = process.memory_full_info() if with_pss else process.memory_info()
        except psutil.Error:
            continue
        readings.append(ProcessMemory(info.rss, getattr(info, "pss", None)))
    return readings
