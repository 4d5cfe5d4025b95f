"""The clock: worker processes, closed and open loops, phases, rate search.

A study author builds a ``RunSpec`` and calls ``run_load``::

    from pglimits_core.load import ClosedLoop, OpenLoop, Phase, Role, RunSpec, run_load
    spec = RunSpec(
        phases=[Phase("warmup", 5, warmup=True), Phase("measure", 30)],
        roles=[Role("producer", EnqueueOp(dsn), workers=4, loop=OpenLoop(rate=2000)),
               Role("consumer", ClaimOp(dsn), workers=8, loop=ClosedLoop(idle_sleep_s=0.001))],
        seed=42)
    result = run_load(spec)          # pglimits_core.record.results.RunResult

then ``pglimits_core.record.rundir.record_run(result, new_manifest(...))`` writes the run.
A drill that needs load running *while* it acts (a backup, a kill) uses ``BackgroundLoad(roles)``
instead: the same roles and workers, until ``stop()``.
Names are resolved lazily so a worker process does not import pandas for nothing.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "run_load": "driver", "RunSpec": "spec", "Role": "spec", "Phase": "spec",
    "OpenLoop": "spec", "ClosedLoop": "spec", "Operation": "operation", "OpOutcome": "operation",
    "WorkerContext": "operation", "current_worker": "operation",
    "intended_start_ns": "operation", "run_start_ns": "operation", "search_rate": "ratesearch",
    "Slo": "ratesearch", "PointResult": "ratesearch", "RateSearchResult": "ratesearch",
    "BackgroundLoad": "background",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
