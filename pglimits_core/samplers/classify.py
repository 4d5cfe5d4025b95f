"""Is a result limited by the load generator rather than the server? (MEASURING.md)

Inputs are per-second CPU series from ``HostSampler``, in **% of one core** summed over
processes (150 = one and a half cores). The verdict uses the median of each series, because the
first and last seconds of a phase are ramps and a single scheduler hiccup must not flip it.

The rules, in order:

1. **Server saturated** — the server uses ≥ ``SATURATION`` of its own ceiling (``server_cores``:
   1 for single-threaded Redis, all cores for Postgres). The server is the limit: not
   client-bound, whatever the client does.
2. **Client saturated** — the workers use ≥ ``SATURATION`` of the cores they can use
   (``client_cores``: e.g. the number of single-threaded worker processes, capped at the box).
3. **Shared box saturated by the client** — client + server use ≥ ``SATURATION`` of all cores
   and the client takes ≥ ``CLIENT_MAJORITY`` of that: the server has headroom it cannot get
   because the harness holds the CPU.

4. **Shared box saturated from outside** — client + server leave CPU idle, but the machine as
   a whole was busy (``machine_cpu_pct``): no verdict (None), and the reason names the CPU
   outside client and server — calling that "idle CPU" would hide that the run competed for
   the cores. Whose it was the sampler cannot say (a busy neighbour, kernel threads, processes
   too short-lived to be seen), so the reason does not claim one.

The **harness** (the study's own process: driver, collector, prefill, samplers; ``harness_cpu_pct``)
is load generation on the client's side: rules 3 and 4 count it with the client, so a box that
client + harness + server saturate is the study's own doing. When it is measured, CPU outside
all three of at most ``FOREIGN_CPU_PCT`` of a core on a saturated box is the study's too (kernel
work for its sockets and disk, sampling jitter); above that, rule 4 holds. A caller without a
harness series gets rules 3 and 4 as before (client and server only).

Anything else is not client-bound (latency-, lock- or I/O-bound, or the offered rate is below
capacity) and the reason says which figures led there.

Under a split placement (the server and the load on CPU sets of their own) rules 3 and 4 judge a
box nobody shares, so ``classify_sets`` reads each set against its own size instead: the server
saturated against its set (or its own ceiling, if smaller), the workers against the load set (or
their count), and workers and harness together against the load set — a load set the bystanders'
clients fill is client-bound though the two cores together are not. An embedded engine (SQLite) runs inside
the workers, so there the question has no answer and the verdict is None.

``cpu_sum_error`` checks the figures themselves: client and server together cannot use more
CPU than the box has.

``measured_rows`` is the one place that says which sampler rows belong to a run's measured
window: a run's sampler frame spans every second of it (workers forking and connecting, the
warm-up, drain and tear-down), and medians over all of them mix idle and loaded seconds.
``window_verdict`` is ``host_frame_verdict`` over those rows only; the record keeps the full
frame (the timeline is evidence) and the window's bounds beside the medians.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Iterable
from typing import Any

from pglimits_core.placement import in_force, share_cores_now
from pglimits_core.samplers.base import DEFAULT_INTERVAL_S

#: fraction of a CPU ceiling counted as "saturated": per-second samples never reach 100 %
#: (scheduler gaps, the sampler itself, other tenants on a shared VM), and 85 % is where queueing
#: for the CPU already dominates latency
SATURATION = 0.85
#: on a saturated shared box, the client is the limit when it holds at least half the busy CPU:
#: then removing harness cost would give the server more CPU than it is using now
CLIENT_MAJORITY = 0.5
#: CPU outside client, harness and server (median, % of one core) above which a run shared its
#: box with something else: 2 cores are shared, and a fifth of one moves a CPU-bound figure
#: (``analysis.runs.OTHER_CPU_FLAG_PCT`` flags a run's table row by the same figure)
FOREIGN_CPU_PCT = 20.0


def steady_median(series: Iterable[float | None]) -> float | None:
    """Median of the finite values (None and NaN — e.g. a sampler's first second — dropped)."""
    values = [v for v in series if v is not None and not math.isnan(v)]
    return statistics.median(values) if values else None


def classify_client_bound(
    client_cpu_pct_series: Iterable[float | None],
    server_cpu_pct_series: Iterable[float | None],
    cores: int,
    client_cores: float | None = None,
    server_cores: float | None = None,
    machine_cpu_pct_series: Iterable[float | None] | None = None,
    harness_cpu_pct_series: Iterable[float | None] | None = None,
) -> tuple[bool | None, str]:
    """``(client_bound, reason)`` for one measured phase.

    ``cores``: logical cores of the box. ``client_cores``: cores the workers can use (default
    ``cores``; pass ``min(workers, cores)`` for single-threaded workers). ``server_cores``: the
    server's ceiling (default ``cores``; 1 for Redis). ``machine_cpu_pct_series``: the whole
    machine's busy CPU in the same seconds (% of one core), when sampled.
    ``harness_cpu_pct_series``: the study's own process in the same seconds, when sampled.
    """
    client, server = steady_median(client_cpu_pct_series), steady_median(server_cpu_pct_series)
    machine, harness = steady_median(machine_cpu_pct_series or []), steady_median(harness_cpu_pct_series or [])
    if client is None or server is None:
        return False, "no CPU samples for client or server: cannot tell"
    client_ceiling = 100.0 * min(client_cores or cores, cores)
    server_ceiling = 100.0 * min(server_cores or cores, cores)
    figures = (
        f"client {client:.0f}% of {client_ceiling:.0f}%, "
        + ("" if harness is None else f"harness process {harness:.0f}%, ")
        + f"server {server:.0f}% of {server_ceiling:.0f}% (median, % of one core)"
    )
    if server >= SATURATION * server_ceiling:
        return False, f"server-bound: server saturated; {figures}"
    if client >= SATURATION * client_ceiling:
        return True, f"client-bound: workers saturated while the server has headroom; {figures}"
    return _shared_box_verdict(client, server, cores, figures, machine, harness)


def classify_sets(
    client_cpu_pct_series: Iterable[float | None],
    server_cpu_pct_series: Iterable[float | None],
    set_cores: tuple[int, int],
    client_workers: int,
    server_cores: float | None = None,
    harness_cpu_pct_series: Iterable[float | None] | None = None,
) -> tuple[bool | None, str]:
    """``(client_bound, reason)`` for one measured phase with the server and the load on CPU sets
    of their own (``set_cores``: the load set's size, the server set's). The server is judged
    against its set (or ``server_cores``, its own ceiling, if fewer); the workers against the load
    set (or their count, if fewer: single-threaded workers); workers and harness (the study's own
    process, on the load set too) together against the load set."""
    client, server = steady_median(client_cpu_pct_series), steady_median(server_cpu_pct_series)
    harness = steady_median(harness_cpu_pct_series or [])
    if client is None or server is None:
        return False, "no CPU samples for client or server: cannot tell"
    load_cores, server_set = set_cores
    load_ceiling, workers_ceiling = 100.0 * load_cores, 100.0 * min(client_workers, load_cores)
    server_ceiling = 100.0 * min(server_cores or server_set, server_set)
    load = client + (harness or 0.0)
    figures = (f"load set: workers {client:.0f}%" + ("" if harness is None else f" + harness process {harness:.0f}%")
               + f" of {load_ceiling:.0f}%, server {server:.0f}% of {server_ceiling:.0f}% "
               "(median, % of one core; CPU sets of their own)")
    if server >= SATURATION * server_ceiling:
        return False, f"server-bound: server saturated; {figures}"
    if client >= SATURATION * workers_ceiling:
        return True, f"client-bound: workers saturated while the server has headroom; {figures}"
    if load >= SATURATION * load_ceiling:
        return True, f"client-bound: the load's set saturated (workers and harness) while the server has headroom; {figures}"
    return False, f"not CPU-bound: both sets have idle CPU; {figures}"


def _shared_box_verdict(client: float, server: float, cores: int, figures: str,
                        machine: float | None = None, harness: float | None = None) -> tuple[bool | None, str]:
    load = client + (harness or 0.0)  # the harness generates load on the client's side
    busy, capacity = load + server, SATURATION * 100.0 * cores
    outside = None if machine is None else machine - busy
    saturated = busy >= capacity or _saturated_by_the_study(harness, machine, outside, capacity)
    if not saturated and machine is not None and machine >= capacity:
        return None, f"cannot tell: the box was saturated; {_outside_words(outside, harness)}; {figures}"
    if not saturated:
        return False, f"not CPU-bound: the box has idle CPU; {figures}"
    if load >= CLIENT_MAJORITY * busy:
        return True, f"client-bound: box saturated and the client holds most of it; {figures}"
    return False, f"box saturated mostly by the server; {figures}"


def _saturated_by_the_study(harness: float | None, machine: float | None, outside: float | None,
                            capacity: float) -> bool:
    """A busy machine with no more than ``FOREIGN_CPU_PCT`` outside client, harness and server:
    only when the harness was measured (without it, its share is part of what is outside)."""
    return harness is not None and machine is not None and machine >= capacity and outside <= FOREIGN_CPU_PCT


def _outside_words(outside: float, harness: float | None) -> str:
    """The CPU outside the study's processes, without naming whose it was (the sampler cannot)."""
    if harness is None:
        return (f"CPU outside client and server: {outside:.0f}% of one core (the harness process, a busy "
                "neighbour, or processes too short-lived for the sampler)")
    return (f"CPU outside client (workers and harness) and server: {outside:.0f}% of one core (a busy "
            "neighbour, kernel threads, or processes too short-lived for the sampler)")


#: sampling jitter allowed above the box's capacity before a CPU sum is called impossible: the
#: per-process readings of one sample are taken a few ms apart, not at one instant
BOX_TOLERANCE_PCT = 10.0
#: the same against the machine's busy CPU: process and machine counters are read a few ms apart
BUSY_TOLERANCE_PCT = 15.0
NOT_APPLICABLE_IN_CLIENT = "not applicable: the engine runs inside the client processes"


def host_frame_verdict(frame: Any, client_workers: int, server_cores: int | None = None,
                       engine_in_client: bool = False) -> dict[str, Any]:
    """The client-bound verdict and CPU medians of a run from its host-sampler rows.

    ``server_cores``: the server's CPU ceiling (None = all cores; 1 for single-threaded Redis).
    ``engine_in_client``: the database engine runs inside the workers (SQLite), so the verdict
    is None with a "not applicable" reason; the CPU medians are still reported.

    Returns the manifest fields ``client_bound``, ``client_bound_reason`` and ``cpu`` (% of
    one core; whether client and server share cores is the placement in force; ``cpu_sum_error`` reads it).
    ``cpu`` has ``harness_cpu_pct_median`` (the study's own process) and ``other_cpu_pct_median``
    (the machine's busy CPU less client, server and harness, per second) when the rows have
    the harness series; None in both otherwise (and in records written before it was sampled)."""
    if frame is None or "client_cpu_pct" not in getattr(frame, "columns", []):
        return {"client_bound": None, "client_bound_reason": "no host samples", "cpu": {}}
    cores, placement = os.cpu_count() or 1, in_force()
    shared = bool(set(placement.server_cpus) & set(placement.load_cpus))
    # the whole machine's busy CPU in the same seconds bounds what the sides can have used
    busy = frame["system_cpu_pct"] * cores if "system_cpu_pct" in frame.columns else None
    harness = frame["harness_cpu_pct"] if "harness_cpu_pct" in frame.columns else None
    cpu = {**cpu_medians(frame, busy, harness), "cores": cores, "server_cores": server_cores,
           "client_and_server_share_cores": shared}
    if engine_in_client:
        return {"client_bound": None, "client_bound_reason": NOT_APPLICABLE_IN_CLIENT, "cpu": cpu}
    client, server = _finite(frame["client_cpu_pct"]), _finite(frame["server_cpu_pct"])
    if not shared:
        bound, reason = classify_sets(client, server, (len(placement.load_cpus), len(placement.server_cpus)),
                                      client_workers, server_cores, _finite(harness))
    else:
        bound, reason = classify_client_bound(client, server, cores=cores, client_cores=min(client_workers, cores),
                                              server_cores=server_cores, machine_cpu_pct_series=_finite(busy),
                                              harness_cpu_pct_series=_finite(harness))
    return {"client_bound": bound, "client_bound_reason": reason, "cpu": cpu}


def cpu_medians(frame: Any, busy: Any, harness: Any) -> dict[str, float | None]:
    """The medians of the manifest's ``cpu`` dict (see ``host_frame_verdict``)."""
    both = frame["client_cpu_pct"] + frame["server_cpu_pct"]
    with_harness = None if harness is None else both + harness.astype(float)
    return {"client_cpu_pct_median": steady_median(_finite(frame["client_cpu_pct"])),
            "server_cpu_pct_median": steady_median(_finite(frame["server_cpu_pct"])),
            "harness_cpu_pct_median": steady_median(_finite(harness)),
            "client_plus_server_cpu_pct_median": steady_median(_finite(both)),
            "client_plus_server_over_busy_pct_median": None if busy is None else steady_median(_finite(both - busy)),
            "other_cpu_pct_median":
                None if busy is None or with_harness is None else steady_median(_finite(busy - with_harness))}


def _finite(column: Any) -> list[float]:
    """A frame column's values without the missing ones (none for no column)."""
    return [] if column is None else list(column.astype(float).dropna())


#: a row measures the interval since its sampler's previous row; that interval may reach this far
#: outside the window and still count: the sampler's grid drifts by ms per second, and a sample's
#: readings are taken a few ms apart (0.1 s of a neighbouring second moves a median little)
WINDOW_SLACK_S = 0.1
#: whole sampler seconds inside the window the CPU split needs: a median needs one reading
MIN_WINDOW_SECONDS = 1
WINDOW_TOO_SHORT = "window too short for the CPU split"
#: a host row whose readings took longer than this measured part of the next second (the
#: sampler thread starved on a saturated box, or its pass over every process of client and
#: server took that long — a server of thousands of backends): it and the row after it, whose
#: interval starts at that late reading, are left out of the CPU split
SLOW_READ_S = 0.15
SLOW_READS = "the CPU readings came late"
NO_WINDOW = ("measured window not known: the load did not report when its measured phases ran, "
             "so no CPU split is drawn from the run's set-up and tear-down seconds")


def measured_rows(frame: Any, window_t_s: tuple[float, float]) -> Any:
    """The rows of a sampler frame that measured whole seconds inside the measured window.

    ``window_t_s``: the window's [start, end] on the frame's ``t`` axis (seconds since the
    samplers started). Each row's figures cover the interval since the same sampler's previous
    row (one interval before it for a sampler's first row); a row is kept when that whole
    interval lies inside the window, ``WINDOW_SLACK_S`` allowed at each end. Rows are never
    split or weighted: a second half inside the window is left out."""
    if frame is None or len(frame) == 0 or "t" not in frame.columns:
        return frame
    ordered = frame.sort_values("t", kind="stable")
    times = ordered["t"]
    previous = ordered.groupby("sampler")["t"].shift(1) if "sampler" in ordered.columns else times.shift(1)
    begun = previous.fillna(times - DEFAULT_INTERVAL_S)
    start, end = window_t_s
    return ordered[(begun >= start - WINDOW_SLACK_S) & (times <= end + WINDOW_SLACK_S) & ~late_rows(ordered)]


def late_rows(ordered: Any) -> Any:
    """Rows whose readings, or their sampler's previous readings, took over ``SLOW_READ_S``
    (False where the sampler does not time its readings)."""
    if "cpu_read_s" not in ordered.columns:
        return ordered["t"] != ordered["t"]
    slow = ordered["cpu_read_s"].fillna(0.0) > SLOW_READ_S
    by = ordered["sampler"] if "sampler" in ordered.columns else None
    before = slow.groupby(by).shift(1, fill_value=False) if by is not None else slow.shift(1, fill_value=False)
    return slow | before


def window_verdict(frame: Any, window_t_s: tuple[float, float] | None, client_workers: int,
                   server_cores: int | None = None, engine_in_client: bool = False) -> dict[str, Any]:
    """``host_frame_verdict`` over the measured window's rows only (``measured_rows``).

    ``cpu`` also carries ``window_t_s`` (the bounds on the frame's ``t`` axis) and
    ``window_seconds`` (host seconds with both CPU figures inside it). No window, or fewer than
    ``MIN_WINDOW_SECONDS`` such seconds: no verdict and no medians, and the reason says so —
    never figures from the set-up and tear-down seconds around the load."""
    if frame is None or "client_cpu_pct" not in getattr(frame, "columns", []):
        return host_frame_verdict(frame, client_workers, server_cores, engine_in_client)
    if window_t_s is None:
        return _no_split(NO_WINDOW, {"window_t_s": None, "window_seconds": 0}, server_cores)
    rows = measured_rows(frame, window_t_s)
    seconds = int((rows["client_cpu_pct"].notna() & rows["server_cpu_pct"].notna()).sum())
    start, end = window_t_s
    window = {"window_t_s": [round(start, 3), round(end, 3)], "window_seconds": seconds}
    if seconds < MIN_WINDOW_SECONDS and _late_inside(frame, window_t_s):
        return _no_split(f"{SLOW_READS}: every whole sampler second inside the measured window ({start:.2f}-{end:.2f} s) "
                         f"was read over {SLOW_READ_S} s late or after a late reading (the sampler's pass over every "
                         f"process took that long: a saturated box, or a server of thousands of processes), so no "
                         f"CPU split is drawn from misplaced seconds", window, server_cores)
    if seconds < MIN_WINDOW_SECONDS:
        return _no_split(f"{WINDOW_TOO_SHORT}: {seconds} whole sampler seconds inside the measured window "
                         f"({start:.2f}-{end:.2f} s on the samplers' clock), {MIN_WINDOW_SECONDS} needed; "
                         f"the run's other seconds are set-up and tear-down", window, server_cores)
    verdict = host_frame_verdict(rows, client_workers, server_cores, engine_in_client)
    verdict["cpu"].update(window)
    return verdict


def _late_inside(frame: Any, window_t_s: tuple[float, float]) -> bool:
    """Whether some row inside the window was left out only for late readings."""
    if "cpu_read_s" not in frame.columns:
        return False
    inside = measured_rows(frame.drop(columns=["cpu_read_s"]), window_t_s)
    return len(inside) > len(measured_rows(frame, window_t_s))


def _no_split(reason: str, window: dict[str, Any], server_cores: int | None) -> dict[str, Any]:
    medians = dict.fromkeys(("client_cpu_pct_median", "server_cpu_pct_median", "harness_cpu_pct_median",
                             "client_plus_server_cpu_pct_median", "client_plus_server_over_busy_pct_median",
                             "other_cpu_pct_median"))
    cpu = {**medians, "cores": os.cpu_count() or 1, "server_cores": server_cores,
           "client_and_server_share_cores": share_cores_now(), **window}
    return {"client_bound": None, "client_bound_reason": reason, "cpu": cpu}


def cpu_sum_error(cpu: dict[str, Any], tolerance_pct: float = BOX_TOLERANCE_PCT) -> str | None:
    """Why the CPU figures of a run cannot be right, or None when they can.

    ``cpu`` is the ``cpu`` dict of ``host_frame_verdict``. Client and server are disjoint sets
    of processes on one box, so their per-second sum cannot exceed the machine's busy CPU in the
    same seconds, nor 100 % × ``cores`` (medians, plus ``tolerance_pct`` of jitter: the process
    and the machine counters are read a few ms apart); if it does, a process was counted on both
    sides or a reading is wrong, and no verdict built on these figures holds.
    """
    total, cores = cpu.get("client_plus_server_cpu_pct_median"), cpu.get("cores")
    over_busy = cpu.get("client_plus_server_over_busy_pct_median")
    client, server = cpu.get("client_cpu_pct_median"), cpu.get("server_cpu_pct_median")
    figures = f"client median {_pct(client)}, server median {_pct(server)}"
    wrong = ("a process is counted as both client and server, or a CPU reading is wrong")
    if over_busy is not None and over_busy > BUSY_TOLERANCE_PCT:
        return (f"sampler check failed: client + server CPU exceeds the machine's busy CPU in the same "
                f"seconds by {over_busy:.0f} points (median; tolerance {BUSY_TOLERANCE_PCT:.0f}; {figures}): {wrong}")
    if total is None or not cores or total <= 100.0 * cores + tolerance_pct:
        return None
    return (f"sampler check failed: client + server CPU median {total:.0f}% of one core exceeds "
            f"the box's {100.0 * cores:.0f}% ({cores} cores, tolerance {tolerance_pct:.0f} points; "
            f"{figures}): {wrong}")


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}%"
