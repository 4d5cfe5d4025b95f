"""The consumer-crash drill's table: per queue design, what a consumer killed holding claims cost.

Each drill is one run record (experiment "consumer_crash", ``drills.consumer_crash``)
with its accounting in the manifest's ``params.outcome``. At-least-once designs must show
lost = 0 (the dead consumer's batch redelivered by the reaper or the visibility timeout);
delete-mode's loss of exactly the batch it held is the design's at-most-once property, labelled
as such — the price of its throughput next to the two-phase table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

CONSUMER_CRASH_COLUMNS = ["variant", "guarantee", "shown", "drills", "failed_drills", "held_by_killed",
                          "redelivered", "lost", "in_doubt", "duplicates", "redelivery_s",
                          "redelivery_s_max", "drain_complete", "recovery"]


def consumer_crash_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per variant over its drills (``frame``: ``analysis.runs.entry_rows``): the design's
    guarantee and the one the numbers showed, messages the killed consumer held, how many came
    back, lost / in doubt / duplicated (summed over drills), the median and largest time from the
    kill until the last held message was acknowledged again, and the design's recovery path."""
    if frame.empty or "experiment" not in frame or "path" not in frame:
        return pd.DataFrame(columns=CONSUMER_CRASH_COLUMNS)
    runs = frame[frame.experiment == "consumer_crash"].drop_duplicates("run_id")
    if runs.empty:
        return pd.DataFrame(columns=CONSUMER_CRASH_COLUMNS)
    drills = pd.DataFrame([_drill(run) for run in runs.itertuples()])
    rows = [_variant_row(variant, group) for variant, group in drills.groupby("variant", sort=True)]
    return pd.DataFrame(rows, columns=CONSUMER_CRASH_COLUMNS)


def _drill(run) -> dict:
    params = json.loads((Path(run.path) / "manifest.json").read_text()).get("params", {})
    outcome = params.get("outcome") or {}
    ok = run.status == "complete" and bool(outcome)
    return {"variant": run.variant, "ok": ok, "guarantee": params.get("guarantee"),
            "recovery": params.get("recovery"), **(outcome if ok else {})}


def _variant_row(variant: str, group: pd.DataFrame) -> dict:
    done = group[group.ok]
    shown = sorted(set(done.get("shown", pd.Series(dtype=object)).dropna()))
    times = done.get("redelivery_s", pd.Series(dtype=float)).dropna()

    def total(column: str):
        return int(done[column].sum()) if column in done and not done.empty else None

    return {"variant": variant, "guarantee": group.guarantee.iloc[0], "shown": " | ".join(shown),
            "drills": len(done), "failed_drills": len(group) - len(done),
            "held_by_killed": total("held_by_killed"), "redelivered": total("redelivered"),
            "lost": total("lost"), "in_doubt": total("in_doubt"), "duplicates": total("duplicates"),
            "redelivery_s": round(float(times.median()), 3) if len(times) else None,
            "redelivery_s_max": round(float(times.max()), 3) if len(times) else None,
            "drain_complete": bool(done.drain_complete.all()) if "drain_complete" in done and len(done) else None,
            "recovery": group.recovery.iloc[0]}


CONSUMER_CRASH_CAPTION = (
    "Consumer crash per design: one consumer SIGKILLed holding a claimed batch, the others running; "
    "its claims come back by the design's reaper or visibility timeout (at-least-once: lost must be 0) "
    "or are gone by design (delete-mode, at-most-once). Summed over the drills; redelivery_s = kill to "
    "the last held message acknowledged again (median, max)")


def consumer_crash_lines(table: pd.DataFrame | None) -> list[str]:
    """The README block's paragraph and table (nothing when no drill ran)."""
    if table is None or table.empty:
        return []
    shown = table[["variant", "guarantee", "shown", "drills", "held_by_killed", "redelivered", "lost",
                   "in_doubt", "duplicates", "redelivery_s", "redelivery_s_max"]]
    return ["**Consumer crash.** " + CONSUMER_CRASH_CAPTION + ".", "",
            shown.to_markdown(index=False), ""]
