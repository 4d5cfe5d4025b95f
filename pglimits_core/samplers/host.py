"""Per-second host figures: client vs server CPU, server memory, disk writes.

On a 2-core box the load generator competes with the server, so every run records both sides
separately (MEASURING.md), and the study's own process (the harness: the parent of the workers,
running the driver, the collector, a prefill and these samplers' threads) as a third series:
left uncounted, its CPU reads as "another process" on the box. CPU figures are in **% of one core** (200 = two cores busy), so a
sum over processes means what it says; ``system_cpu_pct`` alone is in % of all cores (0–100).

Reading the OS goes through a small ``ProcessReader`` (psutil by default) so the arithmetic is
unit-tested with a fake. ``describe_host`` and ``measure_fsync_latency`` (facts for the run
manifest) live in ``host_facts`` and are re-exported here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pglimits_core.samplers.base import CounterRates, Sampler, counter_delta
from pglimits_core.samplers.host_facts import describe_host, measure_fsync_latency

__all__ = [
    "HostSampler",
    "ProcessReader",
    "ProcessSnapshot",
    "SystemSnapshot",
    "describe_host",
    "measure_fsync_latency",
]

PidSource = Callable[[], Iterable[int]]

#: psutil derives a process's start time from the boot time, which the kernel gives in whole
#: seconds: start times read up to a second early (0.91 s measured here). A process first seen
#: and started within this much before the previous sample counts from zero, not from its second
#: sample (otherwise a worker forked just after a sample loses its first second of CPU).
START_TIME_SLACK_S = 1.0


def study_process() -> list[int]:
    """The harness: the process running the study (all its threads: it is one process)."""
    return [os.getpid()]


@dataclass(frozen=True)
class ProcessSnapshot:
    """One process at one instant. ``key`` tells a pid reused by a new process apart."""

    key: tuple[int, float]  # (pid, create_time)
    cpu_seconds: float  # user + system, cumulative
    rss_bytes: int
    write_bytes: int | None  # cumulative; None when /proc/<pid>/io is not readable
    write_chars: int | None = None  # cumulative bytes passed to write(); None as above
    parent_pid: int | None = None
    #: user + system CPU of the children this process has reaped (cumulative; Linux only)
    reaped_children_cpu_seconds: float | None = None


@dataclass(frozen=True)
class SystemSnapshot:
    """Whole-machine cumulative counters."""

    busy_cpu_seconds: float  # summed over all cores
    total_cpu_seconds: float  # summed over all cores
    disk_write_bytes: int | None
    disk_read_bytes: int | None


#: the whole machine's CPU time, exact (ns or µs of run time): cgroup v1 root cpuacct, cgroup v2 root
CGROUP_CPU_FILES = (("/sys/fs/cgroup/cpuacct/cpuacct.usage", None, 1e-9),
                    ("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", None, 1e-9),
                    ("/sys/fs/cgroup/cpu.stat", "usage_usec", 1e-6))


def cgroup_cpu_seconds(files=CGROUP_CPU_FILES) -> float | None:
    """CPU seconds used by every task of the root cgroup (= the machine), or None when no such
    counter is readable (then /proc/stat's tick counts are used)."""
    for path, key, scale in files:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        if key is None:
            return int(text.strip()) * scale
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value) * scale
    return None


class ProcessReader:
    """psutil behind three calls; a process that vanished mid-read is simply absent."""

    def __init__(self) -> None:
        import psutil

        self.psutil = psutil
        self._processes: dict[int, Any] = {}

    def with_children(self, pids: Iterable[int]) -> set[int]:
        """The pids plus all their descendants (Postgres backends are postmaster's children)."""
        found: set[int] = set()
        for pid in pids:
            process = self._process(pid)
            if process is None:
                continue
            found.add(pid)
            found.update(self._children(process))
        return found

    def _children(self, process: Any) -> list[int]:
        try:
            return [child.pid for child in process.children(recursive=True)]
        except self.psutil.Error:
            return []

    def read_process(self, pid: int) -> ProcessSnapshot | None:
        process = self._process(pid)
        if process is None:
            return None
        try:
            with process.oneshot():
                times = process.cpu_times()
                rss = process.memory_info().rss
                reaped = getattr(times, "children_user", None)
                return ProcessSnapshot(
                    (pid, process.create_time()),
                    times.user + times.system,
                    rss,
                    *self._written(process),
                    parent_pid=process.ppid(),
                    reaped_children_cpu_seconds=None if reaped is None else reaped + times.children_system,
                )
        except self.psutil.Error:
            self._processes.pop(pid, None)
            return None

    def _written(self, process: Any) -> tuple[int | None, int | None]:
        """``(write_bytes, write_chars)`` from /proc/<pid>/io."""
        try:
            io = process.io_counters()
        except (self.psutil.Error, AttributeError, OSError):
            return None, None  # other users' processes, or kernels without per-task IO accounting
        return io.write_bytes, getattr(io, "write_chars", None)

    def _process(self, pid: int) -> Any:
        """A cached ``psutil.Process`` (cheaper per second), replaced if the pid was reused."""
        process = self._processes.get(pid)
        if process is not None and process.is_running():
            return process
        try:
            process = self._processes[pid] = self.psutil.Process(pid)
        except self.psutil.Error:
            self._processes.pop(pid, None)
            return None
        return process

    def read_system(self) -> SystemSnapshot:
        disk = self.psutil.disk_io_counters()
        exact = cgroup_cpu_seconds()
        if exact is not None:
            # the root cgroup's CPU time is charged per nanosecond of run time; /proc/stat's busy
            # ticks are sampled every jiffy and miss (or over-charge) short timer-driven bursts
            # on a mostly idle CPU — seen here reading 7 % of a core while one process used 60 %
            busy, total = exact, time.monotonic() * (self.psutil.cpu_count() or 1)
        else:
            times = self.psutil.cpu_times()
            busy = sum(times) - times.idle - getattr(times, "iowait", 0.0)
            total = sum(times)
        return SystemSnapshot(busy, total, disk.write_bytes if disk else None, disk.read_bytes if disk else None)


class HostSampler(Sampler):
    """CPU of client vs server processes, server RSS, disk writes — once per second.

    ``client_pids`` / ``server_pids`` are callables returning the current pids (workers come and
    go; servers fork backends); server pids are expanded with their children. ``harness_pids``
    (default: this process) is the study's own process, counted apart and never twice (a pid
    already on the client or server side stays there; its children are not included). A process is
    counted from its second sample on, except one born inside the interval (all its CPU is the
    interval's). Server processes that exit between samples — Postgres's parallel workers live
    for one query, a fraction of a second, and are mostly never seen — are counted through the
    server process that reaped them: its children's CPU counter grows by their whole lifetime,
    less what earlier samples already counted of those it was seen with.
    """

    name = "host"

    def __init__(self, client_pids: PidSource, server_pids: PidSource, reader: Any = None,
                 harness_pids: PidSource | None = study_process) -> None:
        self.client_pids = client_pids
        self.server_pids = server_pids
        self.harness_pids = harness_pids
        self.reader = reader or ProcessReader()
        self.counters = CounterRates()
        self._previous_processes: dict[tuple[int, float], ProcessSnapshot] = {}
        self._previous_servers: dict[tuple[int, float], ProcessSnapshot] = {}
        self._previous_time: float | None = None
        self._previous_wall: float | None = None
        self._previous_system: SystemSnapshot | None = None
        #: parent pid -> CPU seconds already counted of its children that vanished but whose
        #: reaping its counter has not shown yet (the parent was read before they exited)
        self._unreaped_s: dict[int, float] = {}

    def sample(self, now: float) -> dict[str, Any]:
        """Client/server/harness/system CPU %, server RSS bytes, disk write/read bytes per second;
        ``cpu_read_s``: how long the readings took. On a box saturated by a hundred processes
        this thread gets little CPU and its readings land late, in the next second: the CPU
        split leaves such rows out (``classify.measured_rows``) rather than misplace a second."""
        read_started = time.perf_counter()
        elapsed = None if self._previous_time is None else now - self._previous_time
        client_pids, server_pids = set(self.client_pids()), self.reader.with_children(self.server_pids())
        clients, servers = self._snapshots(client_pids), self._snapshots(server_pids)
        harness = self._snapshots(set(self.harness_pids()) - client_pids - server_pids) if self.harness_pids else []
        row = {
            "client_processes": len(clients),
            "client_cpu_pct": self._cpu_pct(clients, elapsed),
            # None when the harness is not read apart (or is one of the clients)
            "harness_cpu_pct": self._cpu_pct(harness, elapsed) if harness else None,
            "server_processes": len(servers),
            "server_cpu_pct": self._server_cpu_pct(servers, elapsed),
            "server_write_bytes_per_s": self._server_writes(servers, elapsed, "write_bytes"),
            "server_write_chars_per_s": self._server_writes(servers, elapsed, "write_chars"),
            **self._memory(servers),
            **self._system(now),
        }
        row["cpu_read_s"] = time.perf_counter() - read_started
        self._previous_processes = {snap.key: snap for snap in clients + servers + harness}
        self._previous_servers = {snap.key: snap for snap in servers}
        self._previous_time, self._previous_wall = now, time.time()
        return row

    def _snapshots(self, pids: Iterable[int]) -> list[ProcessSnapshot]:
        snapshots = (self.reader.read_process(pid) for pid in sorted(pids))
        return [snap for snap in snapshots if snap is not None]

    def _cpu_pct(self, snapshots: list[ProcessSnapshot], elapsed: float | None) -> float | None:
        """Sum of CPU over the interval in % of one core; None before the second sample."""
        if not elapsed or elapsed <= 0:
            return None
        return 100.0 * self._summed_delta(snapshots, "cpu_seconds") / elapsed

    def _server_cpu_pct(self, servers: list[ProcessSnapshot], elapsed: float | None) -> float | None:
        """The server processes' CPU, plus what server processes that exited since the last
        sample used (see the class doc)."""
        live = self._cpu_pct(servers, elapsed)
        if live is None or elapsed is None:
            return live
        return live + 100.0 * self._exited_cpu_seconds(servers) / elapsed

    def _exited_cpu_seconds(self, servers: list[ProcessSnapshot]) -> float:
        """Growth of the reaped-children counters of server processes, less the CPU earlier rows
        already counted of the children they reaped. A vanished child's counted CPU is taken off
        only when its parent's counter has grown by it: a backend that exits between its parent's
        reading and its own is gone from this row while its reaping shows in the next one, and
        taking it off here would move that CPU from this row to the next (on 2 saturated cores
        the next row then read 316 % — a whole backend's lifetime late)."""
        present = {snap.key for snap in servers}
        reapers = {snap.key[0] for snap in servers if snap.reaped_children_cpu_seconds is not None}
        for key, previous in self._previous_servers.items():
            if key not in present and previous.parent_pid in reapers:
                parent = previous.parent_pid
                self._unreaped_s[parent] = self._unreaped_s.get(parent, 0.0) + previous.cpu_seconds
        exited = 0.0
        for snap in servers:
            previous = self._previous_servers.get(snap.key)
            if previous is None:
                continue
            grown = counter_delta(previous.reaped_children_cpu_seconds, snap.reaped_children_cpu_seconds) or 0.0
            counted_before = min(grown, self._unreaped_s.get(snap.key[0], 0.0))
            if counted_before:
                self._unreaped_s[snap.key[0]] -= counted_before
            exited += grown - counted_before
        self._unreaped_s = {pid: seconds for pid, seconds in self._unreaped_s.items() if pid in reapers}
        return exited

    def _summed_delta(self, snapshots: list[ProcessSnapshot], field: str) -> float:
        """Sum over processes seen last time too of their counter's growth since then; a
        process born inside the interval counts from zero (CPU only: its counters started there)."""
        total = 0.0
        for snap in snapshots:
            previous = self._previous_processes.get(snap.key)
            before = getattr(previous, field) if previous else None
            if previous is None and field == "cpu_seconds" and self._born_in_interval(snap):
                before = 0.0
            total += counter_delta(before, getattr(snap, field)) or 0.0
        return total

    def _born_in_interval(self, snap: ProcessSnapshot) -> bool:
        return self._previous_wall is not None and snap.key[1] > self._previous_wall - START_TIME_SLACK_S

    def _memory(self, servers: list[ProcessSnapshot]) -> dict[str, int]:
        # The RSS sum counts shared_buffers once per backend that touched them, so it overstates
        # Postgres memory; the largest single process is the lower bound. Both are kept; PSS
        # would be exact but reading smaps for every backend each second costs too much.
        rss = [snap.rss_bytes for snap in servers]
        return {"server_rss_bytes": sum(rss), "server_rss_max_bytes": max(rss, default=0)}

    def _system(self, now: float) -> dict[str, Any]:
        system = self.reader.read_system()
        previous, self._previous_system = self._previous_system, system
        disk = self.counters.rates(
            now,
            {
                "disk_write_bytes": system.disk_write_bytes,
                "disk_read_bytes": system.disk_read_bytes,
            },
        )
        return {"system_cpu_pct": _busy_pct(previous, system), **disk}

    def _server_writes(
        self, servers: list[ProcessSnapshot], elapsed: float | None, field: str
    ) -> float | None:
        """Bytes/s written by the server processes; None if none is readable.

        ``write_chars`` is what the server handed to write(). ``write_bytes`` is what the kernel
        charged to storage: it counts a page again each time it is re-dirtied after an fsync, so
        a commit-heavy Postgres shows several times its WAL volume there (seen: 44 MB/s against
        6 MB/s of write() and 6 MB/s at the disk). Summed per process, like CPU, because a sum
        over a changing set of backends would jump when one appears or exits.
        """
        if not elapsed or elapsed <= 0 or all(getattr(s, field) is None for s in servers):
            return None
        return self._summed_delta(servers, field) / elapsed


def _busy_pct(previous: SystemSnapshot | None, current: SystemSnapshot) -> float | None:
    """Machine-wide busy CPU over the interval, % of all cores (0–100)."""
    if previous is None:
        return None
    total = current.total_cpu_seconds - previous.total_cpu_seconds
    busy = current.busy_cpu_seconds - previous.busy_cpu_seconds
    return 100.0 * busy / total if total > 0 else None
