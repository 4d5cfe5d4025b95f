"""The crash drill's tables: one row per drill, and per variant the median and range over its drills.

A drill runs no load driver: its facts live in the manifest's outcome (``drills.recovery_record``).
SIGKILL kills processes, not the machine: the OS page cache keeps every write that reached the
kernel, so "0 lost" holds for an unsynced SQLite too. This drill cannot separate durability
classes (an OS crash or power cut would); what it measures is restart time and, for Postgres,
how that grows with the WAL to replay.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from pglimits_core.workloads.queue.durability_tables import ensure_class, sort_by_class

SIGKILL_NOTE = "SIGKILL keeps the OS page cache: 0 lost here does not separate durability classes (an OS crash would)"
DRILL_COLUMNS = ["variant", "durability_class", "kill_target", "offered_per_s", "confirmed", "confirmed_per_s",
                 "lost", "recovery_s", "restart_s", "wal_to_replay_mb", "survives_sigkill", "note", "server_log"]


def recovery_drills(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per crash drill: the rate offered and confirmed, acknowledged messages lost, time
    from the restart call to the first answered claim (``recovery_s``) and to the server's start
    returning (``restart_s``), the WAL written since the last checkpoint at the kill (Postgres:
    what the restart replays), and ``survives_sigkill``: whether by its configuration an
    acknowledged write was in the kernel before the acknowledgement (then a kill must lose nothing)."""
    rows = frame[frame.experiment == "recovery"].drop_duplicates("run_id") if "path" in frame else frame[:0]
    if rows.empty:
        return pd.DataFrame(columns=DRILL_COLUMNS)
    drills = pd.DataFrame([_drill_row(run) for run in ensure_class(rows).itertuples()], columns=DRILL_COLUMNS)
    return sort_by_class(drills, ["variant"])


def _drill_row(run) -> dict:
    manifest = json.loads((Path(run.path) / "manifest.json").read_text())
    outcome = manifest.get("params", {}).get("outcome", {})
    base = {"variant": run.variant, "durability_class": run.durability_class}
    if run.status != "complete" or not outcome:
        return {**base, "note": f"failed: {run.error}"}
    # Nothing survived to claim (Redis without persistence): the time is to the first empty answer.
    first = outcome.get("first_claim_s")
    recovery = None if _foreign_state(outcome) else first if first is not None else outcome.get("recovery_s")
    return {**base, "kill_target": outcome.get("kill_target"),
            "offered_per_s": outcome.get("offered_rate", getattr(run, "rate", None)), "confirmed": outcome.get("confirmed"),
            "confirmed_per_s": outcome.get("confirmed_per_s"), "lost": outcome.get("lost"),
            "recovery_s": recovery,
            "restart_s": outcome.get("restart_s"),
            "wal_to_replay_mb": _mb((outcome.get("state_at_kill") or {}).get("wal_to_replay_bytes")),
            "survives_sigkill": outcome.get("durable_config"), "note": _drill_note(outcome),
            "server_log": " | ".join(outcome.get("server_log", []))}


def _mb(value: float | None) -> float | None:  # MiB, as the tables label it
    return None if value is None else round(value / 2**20, 1)


def _foreign_state(outcome: dict) -> bool:
    """The restarted server held more messages this drill never confirmed than it confirmed (one
    producer sends one message at a time, so at most one is in flight): it loaded state from an
    earlier run, and its time to a first claim is not this drill's recovery."""
    return (outcome.get("unconfirmed_present") or 0) > (outcome.get("confirmed") or 0)


def _drill_note(outcome: dict) -> str:
    notes = [outcome.get("durability", "")]
    if _foreign_state(outcome):
        notes.append(f"{FOREIGN_STATE}: it held {outcome['unconfirmed_present']:,} messages this drill never "
                     "confirmed, so no recovery time is shown")
    elif outcome.get("first_claim_s") is None:
        notes.append("nothing left to claim: recovery_s is the first (empty) answer")
    if outcome.get("durable_config") and outcome.get("lost"):
        notes.append("LOST ACKNOWLEDGED MESSAGES THAT A PROCESS KILL CANNOT LOSE BY CONFIGURATION")
    return "; ".join(n for n in notes if n)


FOREIGN_STATE = "the restart loaded an earlier run's snapshot"
RECOVERY_COLUMNS = ["variant", "durability_class", "kill_target", "drills", "failed_drills", "offered_per_s",
                    "confirmed_per_s", "lost", "recovery_s", "recovery_s_min", "recovery_s_max", "restart_s",
                    "wal_to_replay_mb", "wal_to_replay_mb_min", "wal_to_replay_mb_max", "survives_sigkill", "note"]


def recovery_table(drills: pd.DataFrame) -> pd.DataFrame:
    """Per variant over its drills: how many (``drills`` completed, ``failed_drills``), the median
    offered-load rate confirmed, acknowledged messages lost in all drills, the median and range of
    the time to the first answered claim and of the WAL to replay, and the notes."""
    if drills.empty:
        return pd.DataFrame(columns=RECOVERY_COLUMNS)
    rows = [_variant_row(group) for _, group in drills.groupby("variant", sort=False)]
    return sort_by_class(pd.DataFrame(rows, columns=RECOVERY_COLUMNS), ["variant"])


def _variant_row(drills: pd.DataFrame) -> dict:
    done = drills[drills.kill_target.notna()]
    failed = len(drills) - len(done)
    recovery, wal = _spread(done, "recovery_s"), _spread(done, "wal_to_replay_mb")
    notes = [*dict.fromkeys(n for n in drills.note if isinstance(n, str) and n)]
    notes += [f"{failed} drill(s) failed"] if failed else []
    return {"variant": drills.variant.iloc[0], "durability_class": drills.durability_class.iloc[0],
            "kill_target": done.kill_target.iloc[0] if len(done) else None, "drills": len(done),
            "failed_drills": failed, "offered_per_s": _spread(done, "offered_per_s")[0],
            "confirmed_per_s": _spread(done, "confirmed_per_s")[0],
            "lost": pd.to_numeric(done.lost, errors="coerce").sum(min_count=1),
            "recovery_s": recovery[0], "recovery_s_min": recovery[1], "recovery_s_max": recovery[2],
            "restart_s": _spread(done, "restart_s")[0], "wal_to_replay_mb": wal[0],
            "wal_to_replay_mb_min": wal[1], "wal_to_replay_mb_max": wal[2],
            "survives_sigkill": done.survives_sigkill.iloc[0] if len(done) else None,
            "note": "; ".join([SIGKILL_NOTE, *notes])}


def _spread(rows: pd.DataFrame, column: str) -> tuple[float, float, float]:
    """(median, min, max) of a column over the drills; NaN where no drill recorded it."""
    values = pd.to_numeric(rows[column], errors="coerce").dropna()
    return (values.median(), values.min(), values.max()) if len(values) else (float("nan"),) * 3
