"""The rate the churn levels are fractions of: a stated ``queue_rate``, or the churn design's own
capacity measured first in the same run (``churn_capacity`` in the profile).

Measured: before any window, pgbench runs the churn's own script (``churn.churn_script``: one
job's enqueue, two-phase claim and ack a transaction, so the queue keeps its backlog) closed
loop from the load's CPU set, the bystanders idle, the queue reset to the backlog the windows
start from. Its jobs/s over the measured seconds is the capacity; the record says whether the
server's CPU set was the limit (the manifest's CPU verdict). A level of 0.5 is then half of what
this server's core does, on whichever box the study runs — not a number carried from another
machine's records. A resumed study reads the capacity from its record.

``ChurnRate`` is the one object per plan that every window asks for its offered rate
(``at(level)``); a window whose capacity was not measured fails with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools import PgbenchLoad
from pglimits_core.studies.runner import run_tool_recorded
from pglimits_core.workloads.interference import churn, start_state
from pglimits_core.workloads.interference.points import STUDY
from pglimits_core.workloads.interference.window import SERVER

EXPERIMENT = "churn_capacity"


@dataclass
class ChurnRate:
    """The base the churn levels multiply: ``stated`` jobs/s, else the ``measured`` capacity."""

    stated: float | None = None
    measured: float | None = None
    #: why the capacity could not be measured (its point's error)
    error: str | None = None

    @property
    def source(self) -> str:
        return "stated" if self.stated is not None else "measured"

    def base(self) -> float:
        if self.stated is not None:
            return float(self.stated)
        if self.measured is None:
            raise PGLimitsError(
                f"interference: the churn's capacity was not measured ({self.error or 'its point has not run'})",
                "see the churn_capacity record's error, fix it and rerun the study with --resume")
        return float(self.measured)

    def at(self, level: float) -> float:
        """The offered jobs/s at ``level`` (0: no churn)."""
        return 0.0 if level <= 0 else round(level * self.base(), 1)

    def learn(self, recorded: Any) -> None:
        """The capacity from the capacity point's record (a failed one keeps its error)."""
        rate = jobs_per_s(recorded)
        if getattr(recorded, "status", None) == "complete" and rate:
            self.measured, self.error = rate, None
        else:
            self.error = getattr(recorded, "error", None) or "the capacity run measured no jobs/s"

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "jobs_per_s": self.stated if self.stated is not None else self.measured}


def jobs_per_s(recorded: Any) -> float | None:
    """The measured window's jobs/s of a recorded tool run (None without a summary)."""
    summary = getattr(recorded, "summary", None)
    rates = [e.items_per_s for e in getattr(summary, "entries", []) or [] if e.items_per_s]
    return round(max(rates), 1) if rates else None


def capacity_point(run: Any, v: Any, clients: int, duration_s: int, warmup_s: int, knobs: Any,
                   rates: ChurnRate) -> Any:
    """The churn's own ceiling on the server, closed loop, before the windows; ``rates`` learns it."""
    import psycopg

    ctx = run.ctx
    params = {"experiment": EXPERIMENT, "variant": v.label, "side": "postgres", "mechanism": EXPERIMENT,
              "clients": clients, "duration_s": duration_s, "warmup_s": warmup_s, "backlog": knobs.backlog,
              "payload_bytes": knobs.payload_bytes}
    endpoint = ctx.endpoints[SERVER]
    load = PgbenchLoad(endpoint.url, churn.churn_script(knobs.payload_bytes), clients, duration_s, warmup_s,
                       op="job", script_name="churn.sql")
    recorded = ctx.reuse(STUDY, v.system, EXPERIMENT, {**params, **load.describe()})
    if recorded is None:
        with psycopg.connect(endpoint.url, autocommit=True) as conn:
            start = churn.reset_queue(conn, knobs.backlog, knobs.payload_bytes)
            settled = start_state.settle(conn, list(churn.QUEUE_TABLES))
        recorded = run_tool_recorded(ctx, STUDY, v.system, EXPERIMENT, SERVER, load, params, seed=run.seed,
                                     tables=list(churn.QUEUE_TABLES),
                                     after=lambda _result: {"start_depth": start["depth"], **settled})
    rates.learn(recorded)
    return recorded


#: the records that measure a capacity before the windows: the churn's and each shared bystander's
CAPACITY_EXPERIMENTS = (EXPERIMENT, "bystander_capacity")
#: what the capacity frame rows carry as their mechanism (never a window's)
CAPACITY = "capacity"


def capacity_row(record: dict[str, Any]) -> dict[str, Any] | None:
    """A capacity run of a record as one frame row (None: a window's record)."""
    from pglimits_core.analysis.verdict import limit_from_record

    manifest = record["manifest"]
    params = manifest.get("params") or {}
    if params.get("experiment") not in CAPACITY_EXPERIMENTS:
        return None
    churned = params["experiment"] == EXPERIMENT
    entries = [e for e in (record.get("summary") or {}).get("entries") or [] if e.get("phase") != "warmup"]
    rates = [e.get("items_per_s" if churned else "ops_per_s") for e in entries]
    rates = [r for r in rates if r]
    exact = (manifest.get("cpu") or {}).get("exact") or {}
    return {"run_id": manifest["run_id"], "status": manifest.get("status"), "error": manifest.get("error"),
            "side": "postgres", "mechanism": CAPACITY, "level": None,
            "capacity_of": "churn" if churned else params.get("tenant"),
            "capacity_per_s": round(max(rates), 1) if rates else None,
            "unit": "jobs/s" if churned else "operations/s",
            "clients": params.get("clients", params.get("workers")), "capacity_s": params.get("duration_s"),
            "limit": limit_from_record(manifest),
            "server_cores_used": exact.get("server_cores_used"), "load_cores_used": exact.get("load_cores_used"),
            "server_set_busy": exact.get("server_set_busy"), "load_set_busy": exact.get("load_set_busy"),
            "params": params, "outcome": params.get("outcome") or {}, "path": record.get("path")}


#: the capacity table's columns, in order
CAPACITY_COLUMNS = ("capacity_of", "capacity_per_s", "unit", "clients", "capacity_s", "limit", "server_cores_used",
                    "load_cores_used", "server_set_busy", "load_set_busy", "status", "error", "run_id")


def capacity_table(frame: Any) -> Any:
    """The capacities measured first: the churn's and each shared bystander's (empty where every
    rate was stated)."""
    import pandas as pd

    if frame is None or frame.empty or "mechanism" not in frame:
        return pd.DataFrame(columns=list(CAPACITY_COLUMNS))
    rows = frame[frame.mechanism == CAPACITY]
    return rows.reindex(columns=list(CAPACITY_COLUMNS)).reset_index(drop=True)
