"""Resuming an interrupted study, and keeping a fresh run's records apart from older ones.

A point's identity is what was asked of it (study, system, variant, parameters, load spec),
never when it ran. A resumed study takes one complete record per planned point of the same
identity instead of measuring it again, so three repetitions stay three records and a rate
search replays its probes from disk up to where it stopped. Failed records are measured again
(they stay on disk as evidence).

A fresh (not resumed) run first moves the study's earlier records aside, to
``data/superseded-runs/<profile>/<time>/``: two runs' records in one directory would be read as
extra repetitions. Nothing is deleted.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from pglimits_core.config import data_dir
from pglimits_core.record.records import load_records
from pglimits_core.record.rundir import PARTIAL_SUFFIX, utc_stamp
from pglimits_core.record.summary import Summary

# manifest params written after the run (its outcome, the resolved load) are not part of the ask
AFTER_THE_RUN = ("outcome", "load")


#: a C tool's port arguments: a fresh study starts its servers on new ports, so a resumed one
#: would otherwise find no earlier tool run the same
_PORT_FLAGS = ("-p", "--port")
_PORT_IN_TEXT = re.compile(r"(:|port=)\d{2,5}\b")


def without_ports(argv: list[Any]) -> list[Any]:
    """``argv`` with every port (after ``-p``/``--port``, in ``host:port`` and ``port=``) masked."""
    masked = []
    for i, arg in enumerate(argv):
        if i and str(argv[i - 1]) in _PORT_FLAGS:
            masked.append("*")
        else:
            masked.append(_PORT_IN_TEXT.sub(lambda m: m.group(1) + "*", str(arg)) if isinstance(arg, str) else arg)
    return masked


def point_identity(study: str, system: str, variant: str, params: dict[str, Any]) -> str:
    """A canonical string for one planned point (equal for a plan and its record)."""
    asked = {key: value for key, value in params.items() if key not in AFTER_THE_RUN}
    if "spec" in asked:
        # an operation's repr holds a memory address: different every run, says nothing
        asked["spec"] = {**asked["spec"], "roles": [{k: v for k, v in role.items() if k != "operation"}
                                                    for role in asked["spec"].get("roles", [])]}
    if "tool_commands" in asked:
        asked["tool_commands"] = [{**c, "argv": without_ports(c.get("argv") or [])} for c in asked["tool_commands"]]
    # through JSON once, so tuples/lists and the manifest's own round trip compare equal
    normalised = json.loads(json.dumps([study, system, variant, asked], default=str))
    return json.dumps(normalised, sort_keys=True)


class DoneRuns:
    """The complete records of one study under ``runs_root``, handed out once each by identity."""

    def __init__(self, runs_root: Path, study: str):
        self._by_identity: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        for record in load_records(study, runs_root):
            manifest = record["manifest"]
            if manifest.get("status") == "complete":
                key = point_identity(study, manifest["system"], manifest["variant"], manifest.get("params", {}))
                self._by_identity[key].append(record)
        self.reused = 0

    def take(self, study: str, system: str, variant: str, params: dict[str, Any]):
        """A ``RecordedRun`` read back from disk for this point, or None if it must be measured."""
        from pglimits_core.studies.runner import RecordedRun

        records = self._by_identity.get(point_identity(study, system, variant, params))
        if not records:
            return None
        record = records.popleft()
        self.reused += 1
        summary = Summary.model_validate(record["summary"]) if record["summary"] else None
        outcome = record["manifest"].get("params", {}).get("outcome", {})
        return RecordedRun(record["path"], summary, "complete", None, outcome)


def supersede_runs(runs_root: Path, study: str, profile: str) -> Path | None:
    """Move ``study``'s earlier records (finished or ``.partial``) out of ``runs_root``; returns
    where they went, or None if there were none."""
    if not runs_root.is_dir():
        return None
    marker = f"-{study}-"  # run ids are <time>-<study>-<system>-...
    earlier = [p for p in runs_root.iterdir() if p.is_dir() and marker in p.name.removesuffix(PARTIAL_SUFFIX)]
    if not earlier:
        return None
    target = data_dir() / "superseded-runs" / profile / f"{utc_stamp()}-{study}"
    target.mkdir(parents=True, exist_ok=True)
    for path in earlier:
        shutil.move(str(path), target / path.name)
    return target
