"""Harness ceiling: the no-op round trip rate of this harness against each system.

Stored in every manifest so a reader can see how close a figure came to the harness's own
limit (MEASURING.md: a client-bound number is not a claim about the server).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.load import ClosedLoop, Phase, Role, RunSpec, run_load
from pglimits_core.load.driver import active_worker_pids
from pglimits_core.record.summary import build_summary
from pglimits_core.samplers import HostSampler, SamplerSet
from pglimits_core.samplers.classify import cpu_sum_error, host_frame_verdict
from pglimits_core.servers.registry import server_class


@dataclass
class ClosedLoopMeasure:
    """Measured-phase items/s, its summary entry, and the client/server CPU verdict."""

    items_per_s: float
    entry: Any
    client_cpu_pct: float | None
    server_cpu_pct: float | None
    client_bound: bool | None  # None where the question does not apply (an embedded engine)
    client_bound_reason: str


def closed_loop_rate(operation: Any, workers: int, duration_s: float, warmup_s: float = 1.0,
                     server_pids: tuple[int, ...] = (), seed: int = 0,
                     system: str | None = None) -> ClosedLoopMeasure:
    """Run ``operation`` closed-loop on ``workers`` processes while sampling host CPU.

    ``system``: the registered server name, whose CPU facts the verdict uses (None: a server
    that can use every core). Raises ``PGLimitsError`` when the run fails or its CPU figures
    exceed what the box has."""
    spec = RunSpec(phases=[Phase("warmup", warmup_s, warmup=True), Phase("measure", duration_s)],
                   roles=[Role("client", operation, workers=workers, loop=ClosedLoop(idle_sleep_s=0))],
                   seed=seed, start_method="fork")
    host = HostSampler(client_pids=active_worker_pids, server_pids=lambda: list(server_pids))
    with SamplerSet([host]) as samplers:
        result = run_load(spec)
    if result.status != "complete":
        raise PGLimitsError(f"calibration run failed: {result.error}", "check the server log")
    entry = next(e for e in build_summary(result, "calibration").entries if e.phase == "measure")
    return _with_cpu_verdict(entry, samplers.dataframe(), workers, system)


def _with_cpu_verdict(entry: Any, host: Any, workers: int, system: str | None) -> ClosedLoopMeasure:
    from pglimits_core.studies.runner import cpu_verdict  # runner builds on this module

    verdict = cpu_verdict(system, host, workers) if system else host_frame_verdict(host, workers)
    cpu = verdict["cpu"]
    problem = cpu_sum_error(cpu)
    if problem:
        raise PGLimitsError(f"calibration run failed: {problem}",
                            "check the host sampler's client and server pid sets")
    return ClosedLoopMeasure(entry.items_per_s, entry, cpu.get("client_cpu_pct_median"),
                             cpu.get("server_cpu_pct_median"), verdict["client_bound"],
                             verdict["client_bound_reason"])


def noop_operation(system: str) -> type:
    """The no-op operation class the server class names (``Server.noop_op``)."""
    target = server_class(system).noop_op
    if target is None:
        raise PGLimitsError(f"no harness ceiling operation for {system!r}",
                            f"set noop_op on its server class (see {__name__.rsplit('.', 1)[0]}.noop_ops)")
    module_name, class_name = target.split(":")
    return getattr(importlib.import_module(module_name), class_name)


def harness_ceiling(system: str, url: str, workers: int = 1, duration_s: float = 2.0) -> dict[str, Any]:
    """``{"op", "workers", "ops_per_s", "p50_us", "p99_us"}`` of the system's no-op round trip."""
    operation = noop_operation(system)(url)
    # warmed up as long as it runs, up to 1 s (the connection and the server's first round trips)
    measured = closed_loop_rate(operation, workers, duration_s, warmup_s=min(1.0, duration_s), system=system)
    service = measured.entry.latencies.get("service_time")
    return {"op": operation.name, "workers": workers, "duration_s": duration_s,
            "ops_per_s": round(measured.items_per_s, 1), "client_cpu_pct": measured.client_cpu_pct,
            "p50_us": service.p50_us if service else None, "p99_us": service.p99_us if service else None}
