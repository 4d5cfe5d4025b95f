"""Search run records of points no load driver runs (load, correctness): the outcome in
``params``, an empty summary and time series, so they validate as a crash drill's do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pglimits_core.record.rundir import atomic_write_bytes, atomic_write_model
from pglimits_core.record.summary import Summary
from pglimits_core.record.timeseries import KEY_COLUMNS
from pglimits_core.studies.runner import Context, RecordedRun, open_record

STUDY = "search"


def recorded(ctx: Context, system: str, server: str, name: str, params: dict[str, Any], seed: int,
             measure: Callable[[], dict[str, Any]]) -> RecordedRun:
    """A record of ``measure() -> outcome``; a point measured before an interruption is reused.
    An exception leaves the record failed, with its reason."""
    if reused := ctx.reuse(STUDY, system, name, params):
        return reused
    with open_record(ctx, STUDY, system, server, name, params, seed) as run_dir:
        outcome = measure()
        run_dir.manifest = run_dir.manifest.model_copy(update={"params": {**params, "outcome": outcome}})
        atomic_write_model(run_dir.path / "summary.json",
                           Summary(run_id=run_dir.manifest.run_id, status="complete", entries=[]))
        import pandas as pd

        atomic_write_bytes(run_dir.path / "timeseries.parquet", pd.DataFrame(columns=KEY_COLUMNS).to_parquet(index=False))
        return RecordedRun(run_dir.finish("complete"), None, "complete", None, outcome)
