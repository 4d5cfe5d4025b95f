"""Facts about the machine for the run manifest: CPU, memory, the data disk, fsync latency.

MEASURING.md's reporting checklist asks for hardware (CPU model, cores, RAM, disk, fsync
latency) and whether client and server share cores; these two functions provide them.
"""

from __future__ import annotations

import math
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from pglimits_core.placement import share_cores_now

#: bytes per write in the fsync probe: one Postgres page, like pg_test_fsync's default
FSYNC_BLOCK_BYTES = 8192
#: seconds the fsync probe may take; on a slow disk it stops early rather than stall a run
FSYNC_MAX_SECONDS = 5.0


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The ``model name`` line of /proc/cpuinfo (None off Linux or on CPUs without one)."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return platform.processor() or None


def mount_of(path: Path) -> Any:
    """The psutil partition whose mount point is the longest prefix of ``path``."""
    resolved = str(path.resolve())
    candidates = [
        part
        for part in psutil.disk_partitions(all=True)
        if resolved == part.mountpoint or resolved.startswith(part.mountpoint.rstrip("/") + "/")
    ]
    return max(candidates, key=lambda part: len(part.mountpoint), default=None)


def block_device_facts(device: str) -> dict[str, Any]:
    """Whether the disk behind ``/dev/<device>`` is rotational (from /sys; None if unknown)."""
    name = Path(device).name
    for candidate in (name, name.rstrip("0123456789"), name.split("p")[0]):
        rotational = Path(f"/sys/block/{candidate}/queue/rotational")
        if candidate and rotational.exists():
            return {"block_device": candidate, "rotational": rotational.read_text().strip() == "1"}
    return {"block_device": None, "rotational": None}


def filesystem_facts(data_path: Path) -> dict[str, Any]:
    """Device, filesystem type, total and free bytes of the filesystem holding ``data_path``."""
    existing = data_path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent  # the data dir may not be created yet; its parent tells
    usage = psutil.disk_usage(str(existing))
    part = mount_of(existing)
    facts = {
        "data_path": str(data_path),
        "mountpoint": part.mountpoint if part else None,
        "device": part.device if part else None,
        "fstype": part.fstype if part else None,
        "total_bytes": usage.total,
        "free_bytes": usage.free,
    }
    if part and part.device.startswith("/dev/"):
        facts.update(block_device_facts(part.device))
    return facts


def cgroup_cpu_limit(path: Path = Path("/sys/fs/cgroup/cpu.max")) -> str | None:
    """cgroup v2 CPU quota (``"max 100000"`` = unlimited); containers may cap below the cores."""
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cpu_facts() -> dict[str, Any]:
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu_model": cpu_model(),
        "logical_cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
        "cpu_affinity": affinity,
        "cgroup_cpu_max": cgroup_cpu_limit(),
        # one box: the servers and the load share cores unless the placement in force splits
        # them (the manifest's ``placement`` names both sets)
        "client_server_share_cores": share_cores_now(),
    }


def describe_host(data_path: str | os.PathLike[str]) -> dict[str, Any]:
    """CPU, memory, OS and the data filesystem, as one JSON-ready dict (sizes in bytes)."""
    return {
        **cpu_facts(),
        "ram_total_bytes": psutil.virtual_memory().total,
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "filesystem": filesystem_facts(Path(data_path)),
    }


def host_id(host: dict[str, Any] | None = None) -> str:
    """A short, stable name for a machine, e.g. ``amd-epyc-2vcpu-24gib``: CPU model, logical
    cores, RAM. Results are filed under it (``config.profile_results_dir``)."""
    host = host or {**cpu_facts(), "ram_total_bytes": psutil.virtual_memory().total}
    model = re.sub(r"\((r|tm)\)|\bcpu\b|@.*$", " ", str(host.get("cpu_model") or "").lower())
    slug = re.sub(r"[^a-z0-9]+", "-", model).strip("-") or "unknown-cpu"
    ram_gib = round(int(host.get("ram_total_bytes") or 0) / 2**30)
    return f"{slug}-{host.get('logical_cores', 0)}vcpu-{ram_gib}gib"


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted, non-empty list (fine for a few hundred)."""
    rank = max(1, min(len(sorted_values), math.ceil(fraction * len(sorted_values))))
    return sorted_values[rank - 1]


def _timed_writes(fd: int, n: int, max_seconds: float) -> list[float]:
    """Rewrite one 8 kB block at offset 0 and fdatasync it, ``n`` times; µs per iteration."""
    block = os.urandom(FSYNC_BLOCK_BYTES)
    timings: list[float] = []
    deadline = time.perf_counter() + max_seconds
    # at least one iteration, so a tiny time budget still yields a figure
    while len(timings) < n and (not timings or time.perf_counter() < deadline):
        started = time.perf_counter_ns()
        os.pwrite(fd, block, 0)
        os.fdatasync(fd)
        timings.append((time.perf_counter_ns() - started) / 1000.0)
    return timings


def measure_fsync_latency(
    path: str | os.PathLike[str], n: int = 200, max_seconds: float = FSYNC_MAX_SECONDS
) -> dict[str, Any]:
    """Median/p99 µs of an 8 kB write + ``fdatasync`` in directory ``path`` (like
    pg_test_fsync's single-write test). Stops after ``max_seconds``; ``n`` says how many ran.
    """
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="fsync-probe-", dir=directory)
    try:
        # preallocate and sync once so the timed writes measure overwrite + flush, not extension
        os.write(fd, os.urandom(FSYNC_BLOCK_BYTES))
        os.fsync(fd)
        timings = sorted(_timed_writes(fd, n, max_seconds))
    finally:
        os.close(fd)
        os.unlink(name)
    return {
        "path": str(directory),
        "method": "pwrite 8kB + fdatasync",
        "n": len(timings),
        "median_us": percentile(timings, 0.5),
        "p99_us": percentile(timings, 0.99),
        "max_us": timings[-1],
        "stopped_early": len(timings) < n,
    }
