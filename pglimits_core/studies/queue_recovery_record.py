"""Run records of the crash-recovery drill (``queue_recovery``): manifest, outcome, durability.

A drill runs no load driver, so its record carries an empty ``summary.json`` and
``timeseries.parquet``: ``record.validate`` requires both of a complete run, and readers
(``analysis.runs.entry_rows``) then see one row per drill with ``experiment == "recovery"``.
"""

from __future__ import annotations

from typing import Any

from pglimits_core.record.manifest import new_manifest
from pglimits_core.record.rundir import (
    RunDirectory,
    atomic_write_bytes,
    atomic_write_model,
    new_run_id,
)
from pglimits_core.record.summary import Summary
from pglimits_core.record.timeseries import KEY_COLUMNS
from pglimits_core.studies.queue import STUDY, QueueVariant
from pglimits_core.studies.runner import Context, RecordedRun


# --- the run record --------------------------------------------------------------------------------
def open_run(ctx: Context, v: QueueVariant, params: dict[str, Any], seed: int) -> RunDirectory:
    name = f"recovery:{v.label}"
    description = ctx.descriptions.get(v.server, {})
    manifest = new_manifest(new_run_id(STUDY, v.system, name), STUDY, v.system, name, seed=seed,
                            params=params, servers={v.server: description}, host=ctx.host,
                            tuning_ledger=description.get("settings", {}).get("tuning_ledger", []),
                            harness_ceiling=ctx.ceilings.get(v.server, {}))
    return RunDirectory.create(manifest, ctx.runs_root)


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


def drill_outcome(ctx: Context, v: QueueVariant, confirmed: list[str], recovered: dict[str, Any],
                  killed: dict[str, Any], load_s: float) -> dict[str, Any]:
    """Acknowledged ids missing after recovery are lost; ids present but never confirmed were in
    flight at the kill (committed, the ack never reached the producer) and are not a loss."""
    present, confirmed_set = set(recovered["present"]), set(confirmed)
    lost = [i for i in confirmed if i not in present]
    durable, semantics = DURABILITY_RULES[v.server](ctx, v)
    return {"confirmed": len(confirmed), "present_after": len(present), "lost": len(lost),
            "lost_sample": lost[:5], "unconfirmed_present": len(present - confirmed_set),
            "duplicates": len(recovered["present"]) - len(present),
            "recovery_s": recovered["recovery_s"], "first_claim_s": recovered["first_claim_s"],
            "restart_s": recovered["restart_s"], "drain_complete": recovered["drain_complete"],
            "confirmed_per_s": len(confirmed) / load_s, "kill_target": f"{v.server} {killed['target']}",
            "killed_pids": killed.get("pids", [killed["producer_pid"]]),
            "state_at_kill": killed.get("state", {}), "server_log": killed.get("server_log", []),
            "durable_config": durable, "durability": semantics}


def _settings(ctx: Context, server: str) -> dict[str, Any]:
    return ctx.descriptions.get(server, {}).get("settings", {})


def postgres_durability(ctx: Context, v: QueueVariant) -> tuple[bool, str]:
    settings = _settings(ctx, "postgres")
    sync = v.options.get("synchronous_commit", settings.get("synchronous_commit"))
    fsync = settings.get("fsync", "on")
    durable = sync != "off" and fsync == "on"
    return durable, (f"synchronous_commit={sync}, fsync={fsync}: "
                     + ("a commit returns after its WAL is flushed" if durable
                        else "a commit can return before its WAL leaves shared memory"))


def redis_durability(ctx: Context, v: QueueVariant) -> tuple[bool, str]:
    settings = _settings(ctx, "redis")
    aof = settings.get("appendonly")
    # With AOF on, the command is written to the file before the reply: a process kill keeps it.
    return aof == "yes", (f"appendonly={aof}, save={settings.get('save')!r}: "
                          + ("AOF written before the reply" if aof == "yes"
                             else "in memory only, not durable by configuration"))


def sqlite_durability(ctx: Context, v: QueueVariant) -> tuple[bool, str]:
    sync = v.options.get("synchronous", "normal")
    # In WAL mode every commit is written to the WAL file before it returns, so a process kill
    # loses nothing at any level; the levels differ only under an OS crash or power loss.
    return sync in ("normal", "full"), (f"synchronous={sync.upper()} (WAL): a process kill keeps every "
                                        "commit; " + ("FULL: an OS crash too" if sync == "full" else
                                                      "an OS crash can lose the last commits"))


DURABILITY_RULES = {"postgres": postgres_durability, "redis": redis_durability,
                    "sqlite": sqlite_durability}
