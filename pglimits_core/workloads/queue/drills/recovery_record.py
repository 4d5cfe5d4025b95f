"""Run records of the crash-recovery drill (``drills.recovery``): manifest, outcome, durability.

Every record carries the variant's durability class and says what the drill cannot show: a
SIGKILL keeps the OS page cache, so "0 lost" is no durability result (``DRILL_SCOPE``).
A drill runs no load driver, so its record carries an empty ``summary.json`` and
``timeseries.parquet``: ``record.validate`` requires both of a complete run, and readers
(``analysis.runs.entry_rows``) then see one row per drill with ``experiment == "recovery"``.
"""

from __future__ import annotations

from typing import Any

from pglimits_core.record.rundir import (
    RunDirectory,
    atomic_write_bytes,
    atomic_write_model,
)
from pglimits_core.record.summary import Summary
from pglimits_core.record.timeseries import KEY_COLUMNS
from pglimits_core.studies.runner import Context, RecordedRun, open_record
from pglimits_core.workloads.queue.points import STUDY, QueueVariant


# --- the run record --------------------------------------------------------------------------------
def open_run(ctx: Context, v: QueueVariant, params: dict[str, Any], seed: int) -> RunDirectory:
    return open_record(ctx, STUDY, v.system, v.server, f"recovery:{v.label}", params, seed,
                       description=ctx.descriptions.get(v.server, {}))


def finish_run(run_dir: RunDirectory, v: QueueVariant, outcome: dict[str, Any]) -> RecordedRun:
    """No load driver ran: an empty summary and time series keep the record valid for readers."""
    import pandas as pd

    params = {**run_dir.manifest.params, "outcome": outcome}
    run_dir.manifest = run_dir.manifest.model_copy(update={"params": params})
    atomic_write_model(run_dir.path / "summary.json",
                       Summary(run_id=run_dir.manifest.run_id, status="complete", entries=[]))
    atomic_write_bytes(run_dir.path / "timeseries.parquet",
                       pd.DataFrame(columns=KEY_COLUMNS).to_parquet(index=False))
    return RecordedRun(run_dir.finish("complete"), None, "complete", None, outcome)


def with_server_description(run_dir: RunDirectory, v: QueueVariant, description: dict[str, Any]) -> None:
    """The manifest's server and tuning ledger as the variant ran it (read after the drill: the
    restarted server runs the variant's settings), not as the study first found it."""
    ledger = description.get("settings", {}).get("tuning_ledger", [])
    run_dir.manifest = run_dir.manifest.model_copy(
        update={"servers": {v.server: description}, "tuning_ledger": ledger})


# Said in every record, because a "0 lost" row invites reading it as a durability result.
DRILL_SCOPE = ("SIGKILL of processes keeps the OS page cache: a write that reached the kernel "
               "before its acknowledgement survives whether or not it was fsynced, so 0 lost "
               "cannot separate durability classes (per_commit / periodic / none); only an OS "
               "crash or power loss would. The drill catches acknowledged writes that lived only "
               "in process memory, and measures restart time.")
RATE_REACHED_FRACTION = 0.95  # as the load driver's "sustained"


def drill_outcome(v: QueueVariant, described: dict[str, Any], confirmed: list[str],
                  recovered: dict[str, Any], killed: dict[str, Any], load_s: float,
                  rate: float | None) -> dict[str, Any]:
    """Acknowledged ids missing after recovery are lost; ids present but never confirmed were in
    flight at the kill (committed, the ack never reached the producer) and are not a loss."""
    present, confirmed_set = set(recovered["present"]), set(confirmed)
    lost = [i for i in confirmed if i not in present]
    confirmed_per_s = len(confirmed) / load_s
    return {"confirmed": len(confirmed), "present_after": len(present), "lost": len(lost),
            "lost_sample": lost[:5], "unconfirmed_present": len(present - confirmed_set),
            "duplicates": len(recovered["present"]) - len(present),
            "recovery_s": recovered["recovery_s"], "first_claim_s": recovered["first_claim_s"],
            "restart_s": recovered["restart_s"], "drain_complete": recovered["drain_complete"],
            **offered_and_confirmed(rate, confirmed_per_s),
            "kill_target": f"{v.server} {killed['target']}",
            "killed_pids": killed.get("pids", [killed["producer_pid"]]),
            "before_load": killed.get("before_load", {}), "state_at_kill": killed.get("state", {}),
            "restart_settings": killed.get("restart_settings", {}),
            "server_log": killed.get("server_log", []),
            **durability_facts(described), "drill_scope": DRILL_SCOPE, "adapter": described}


def offered_and_confirmed(rate: float | None, confirmed_per_s: float) -> dict[str, Any]:
    """Every system is offered the same rate; one that cannot take it shows what it confirmed.
    ``rate`` None is flat out: then each system sets its own load and the drills differ."""
    reached = None if rate is None else confirmed_per_s >= RATE_REACHED_FRACTION * rate
    return {"offered_rate": rate, "confirmed_per_s": confirmed_per_s, "rate_reached": reached}


def durability_facts(described: dict[str, Any]) -> dict[str, Any]:
    """The variant's durability class (read back from the server by the adapter) and whether
    this drill can lose its acknowledged writes at all (``durable_config``: the write was in the
    kernel before the acknowledgement, so a process kill must lose nothing)."""
    return {"durability_class": described["durability_class"],
            "durability_label": described["durability_label"],
            "durability_setting": described["durability_setting"],
            "durability": described["durability"],
            "durable_config": described["survives_process_kill"]}
