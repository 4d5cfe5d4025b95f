"""Run records -> tidy DataFrames. Reads ``manifest.json`` and ``summary.json``; a table that
computes figures from a run's per-second samplers reads them with ``measured_samplers``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from pglimits_core.analysis.verdict import LOAD, combined_limit, limit_from_record, shared_cores
from pglimits_core.samplers.classify import FOREIGN_CPU_PCT, measured_rows


def entry_rows(records: list[dict[str, Any]],
               run_columns: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> pd.DataFrame:
    """One row per run × role × measured phase, with the latency percentiles flattened (µs).
    ``run_columns(manifest)`` adds a workload's own per-run columns (its accounting, its classes)."""
    rows = []
    for record in records:
        manifest, summary = record["manifest"], record["summary"] or {"entries": []}
        base = {**_run_columns(record["path"], manifest), **(run_columns(manifest) if run_columns else {})}
        for entry in summary["entries"]:
            rows.append({**base, **_entry_columns(entry)})
        if not summary["entries"]:
            rows.append(base)
    return pd.DataFrame(rows)


#: another process's CPU in a run's window (median, % of one core) above which the run is flagged:
#: client and server share 2 cores, and a busy neighbour takes from both (the verdict's threshold)
OTHER_CPU_FLAG_PCT = FOREIGN_CPU_PCT


def busy_neighbour(value) -> bool:
    """Another process took more than ``OTHER_CPU_FLAG_PCT`` of a core in the run's seconds."""
    return value is not None and not pd.isna(value) and float(value) > OTHER_CPU_FLAG_PCT


def trusted(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs whose CPU split can be believed: no busy neighbour by the table's measure (CPU
    neither client nor server) nor by the run's own verdict ("cannot tell: ..." in its reason)."""
    keep = pd.Series(True, index=runs.index)
    if "other_cpu_pct" in runs:
        keep &= ~runs.other_cpu_pct.map(busy_neighbour)
    if "client_bound_reason" in runs:
        keep &= ~runs.client_bound_reason.fillna("").astype(str).str.startswith("cannot tell")
    return runs[keep]


#: client + server CPU at or above this share of the box's cores: the two saturated the machine
#: together (a table's marker; which side set the limit is each run's own ``limit``)
SATURATED_SHARE = 0.85


def box_saturated(runs: pd.DataFrame) -> bool | None:
    """Whether the runs' median client + server CPU reached ``SATURATED_SHARE`` of the box
    (None: the CPU split or the core count was not recorded). The harness process counts with the
    client where recorded (load generation on the client's side; older records lack it)."""
    if not {"client_cpu_pct", "server_cpu_pct", "cores"} <= set(runs.columns):
        return None
    harness = pd.to_numeric(runs.get("harness_cpu_pct", pd.Series(0.0, index=runs.index)), errors="coerce")
    both, cores = (runs.client_cpu_pct + runs.server_cpu_pct + harness.fillna(0.0)).dropna(), runs.cores.dropna()
    if both.empty or cores.empty:
        return None
    return bool(both.median() >= SATURATED_SHARE * 100 * float(cores.median()))


def run_limits(runs: pd.DataFrame) -> list[str | None]:
    """Each run's limit (``verdict.limit_from_record``: a frame without the ``limit`` column —
    one built by hand, or by older code — maps each run's old client-bound verdict)."""
    return [limit_from_record(row) for _, row in runs.iterrows()]


def runs_limit(runs: pd.DataFrame) -> str | None:
    """The limit of the figure these runs give together (``verdict.combined_limit``)."""
    return combined_limit(run_limits(runs))


def flag(value: Any) -> bool:
    """A table cell's yes/no (NaN and None: no)."""
    return value is not None and not pd.isna(value) and bool(value)


def measured(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of runs that completed: a failed run (a worker lost, impossible CPU figures) is
    listed under "what could not be run", never averaged into a table."""
    return frame[frame.status == "complete"] if "status" in frame else frame


def by_role(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Producer and consumer rows of the same runs, each indexed by run id."""
    return (rows[rows.role == "producer"].set_index("run_id"),
            rows[rows.role == "consumer"].set_index("run_id"))


# params that describe the ask as a whole, not a point's knob; never flattened into columns
NOT_KNOBS = ("experiment", "variant", "outcome", "spec", "options", "slo")


def _run_columns(path: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """What every run record has, plus each scalar knob of its point (consumers, rate, clients...)."""
    params, cpu = manifest.get("params", {}), manifest.get("cpu") or {}
    knobs = {key: value for key, value in params.items()
             if key not in NOT_KNOBS and (value is None or isinstance(value, (int, float, str, bool)))}
    limit = limit_from_record(manifest)
    return {"run_id": manifest["run_id"], "system": manifest["system"], "status": manifest["status"],
            "error": manifest.get("error"), "experiment": params.get("experiment"),
            "variant": params.get("variant"), **knobs,
            "client_bound": client_bound(manifest, limit),
            "client_bound_reason": manifest.get("client_bound_reason"),
            "limit": limit,  # which side set the limit (``analysis.verdict``)
            # read from the CPU sets' exact counters (the split placement), not the per-second samples
            "limit_from_sets": isinstance(manifest.get("limit"), dict) and not shared_cores(manifest),
            "client_cpu_pct": cpu.get("client_cpu_pct_median"),
            "server_cpu_pct": cpu.get("server_cpu_pct_median"),
            # the window's exact server CPU (cores), where the sets were read: the authoritative figure
            "server_cores_exact": (cpu.get("exact") or {}).get("server_cores_used"),
            "harness_cpu_pct": cpu.get("harness_cpu_pct_median"),  # None in records before it was sampled
            "other_cpu_pct": other_cpu_pct(cpu), "cores": cpu.get("cores"),
            "slo": params.get("slo"), "path": str(path)}


def client_bound(manifest: dict[str, Any], limit: str | None) -> bool | None:
    """Whether the load, not the server, set the run's limit: with the server and its load on
    CPU sets of their own, the sets' reading says it (the record's per-second ``client_bound``
    judges a shared box, and is never true there); on shared cores, that per-second verdict."""
    if isinstance(manifest.get("limit"), dict) and not shared_cores(manifest):
        return None if limit is None else limit == LOAD
    return manifest.get("client_bound")


def other_cpu_pct(cpu: dict[str, Any]) -> float | None:
    """CPU taken in the same seconds by processes neither client, server nor the study's own
    (median, % of one core); a record without the harness series counts the harness in it."""
    other = cpu.get("other_cpu_pct_median")
    if other is None and (over_busy := cpu.get("client_plus_server_over_busy_pct_median")) is not None:
        other = -over_busy
    return None if other is None else max(0.0, other)


SAMPLERS_FILE = "samplers.parquet"


def measurement_window(manifest: dict[str, Any]) -> tuple[float, float] | None:
    """The measured window's [start, end] on the run's ``samplers.parquet`` ``t`` axis, as the
    runner recorded it (``cpu.window_t_s``); None in a record written before it was recorded."""
    window = (manifest.get("cpu") or {}).get("window_t_s")
    return (float(window[0]), float(window[1])) if window else None


def measured_samplers(run_path: str | Path) -> pd.DataFrame:
    """A run's sampler rows for a figure of its measured window (CPU per operation, bytes per
    message): the window's rows (``samplers.classify.measured_rows``, as the run's own CPU
    medians) when the record carries the window's bounds. A record without them gives every
    row, set-up and tear-down included: its samplers' clock was never tied to its load's, so the
    window cannot be placed afterwards. Empty when the run has no sampler file."""
    path = Path(run_path)
    if not (path / SAMPLERS_FILE).exists():
        return pd.DataFrame()
    frame = pd.read_parquet(path / SAMPLERS_FILE)
    manifest = path / "manifest.json"
    window = measurement_window(json.loads(manifest.read_text())) if manifest.exists() else None
    return frame if window is None else measured_rows(frame, window)


def _entry_columns(entry: dict[str, Any]) -> dict[str, Any]:
    columns = {key: entry.get(key) for key in ("role", "op", "phase", "loop", "workers", "duration_s",
                                              "items_per_s", "ops_per_s", "idle_polls", "errors",
                                              "offered_rate", "achieved_rate", "sustained", "ops",
                                              "late", "missed")}
    for kind, stats in entry.get("latencies", {}).items():
        for pct in ("p50", "p95", "p99", "p999", "max"):
            columns[f"{kind}_{pct}_ms"] = _ms(stats.get(f"{pct}_us"))
        columns[f"{kind}_count"] = stats.get("count")
    return columns


def _ms(value: float | None) -> float | None:
    return None if value is None else value / 1000.0


def versions_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Each server's version and the client library versions recorded in the runs' manifests."""
    rows = {}
    for record in records:
        manifest = record["manifest"]
        for server, description in manifest.get("servers", {}).items():
            rows[server] = {"server": server, "version": description.get("version"),
                            "harness ceiling (no-op/s, 1 client)": manifest.get("harness_ceiling", {}).get("ops_per_s")}
    return pd.DataFrame(list(rows.values()))
