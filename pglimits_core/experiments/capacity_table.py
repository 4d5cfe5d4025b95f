"""The capacity table, from the run records alone: one row per design and target.

Columns (one vocabulary from records to axis labels; display names only when printing):
``variant``, ``system``, ``side`` (postgres / dedicated, from the server's class),
``target_p99_ms``; the ceiling — ``ceiling_per_s`` (median of its repetitions at the best client
count), ``ceiling_low``/``ceiling_high`` (the runs' range), ``ceiling_limit`` (server: a ceiling;
load: a floor, "≥"), ``ceiling_clients``, ``ceiling_server_cores``, ``ceiling_s`` (its windows), and
``ceiling_by_clients`` (every client count's median, range, limit and closed-loop p99: a claim made
at one client count reads it there); capacity at the target —
``capacity_per_s`` (the highest offered rate whose every steady confirmation held; None: none
held), ``capacity_limit`` (a confirmation whose load set saturated makes it a floor),
``capacity_miss_per_s`` (the lowest rate above it whose steady window missed the target: the
capacity lies between the two; None: no steady window missed — a short probe's miss, kept as
``probe_miss_per_s``, bounds nothing — so only a server-limited ceiling bounds it above), ``confirmations`` ("k of n held"), ``p99_ms`` and ``p99_low_ms``/``p99_high_ms`` of the held
confirmations, ``steady_s``; ``server_cpu_us_per_item`` at the capacity rate (exact window CPU;
printed beside the rates, never deciding); ``curve``: every probe and confirmation as
(offered_per_s, p99_ms, held). Where the ceiling ran the system's C tool: ``ceiling_by`` (the
tool), ``check_per_s`` (the harness's median at the ceiling's clients), ``check_over_ceiling``
(harness / tool), ``check_limit`` (the harness runs' limit side) and ``agrees`` (within
``AGREEMENT`` of each other; None: no check, or a load-limited harness below the tool — it
measured its own core, not the server). Where the rate points ran a compiled load, the rate
check (``rate_check_*``, ``rate_agrees``: ``rate_check_figures``).
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from pglimits_core.analysis.verdict import LOAD, combined_limit, limit_from_record
from pglimits_core.experiments.capacity import (
    CEILING,
    CHECK,
    CONFIRM,
    EXPERIMENT,
    MIN_ITEMS,
    PROBE,
    RATE_CHECK,
    slo_for,
)
from pglimits_core.load.ratesearch import PointResult, Slo
from pglimits_core.record.summary import Summary

Reading = Callable[[Summary, float, dict[str, Any]], PointResult]


def capacity_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["manifest"].get("params", {}).get("experiment") == EXPERIMENT]


def exact_of(manifest: dict[str, Any]) -> dict[str, Any]:
    return (manifest.get("cpu") or {}).get("exact") or {}


def limit_of(manifest: dict[str, Any]) -> str | None:
    """Which side set a run's limit (``analysis.verdict.limit_from_record``: the one mapping)."""
    return limit_from_record(manifest)


def side_of(server: str) -> str:
    from pglimits_core.servers.registry import server_class

    return server_class(server).side


def ceiling_limit(record: dict[str, Any], summary: Summary, ran_dry: Callable[[Summary], bool] | None) -> str | None:
    """A ceiling run's limit; one whose load ran out of work (a burn-down that emptied its backlog)
    measured its backlog, not the server: a floor."""
    return LOAD if ran_dry is not None and ran_dry(summary) else limit_of(record["manifest"])


def ceiling_figures(runs: list[dict[str, Any]], items_per_s: Callable[[Summary], float],
                    ran_dry: Callable[[Summary], bool] | None = None) -> dict[str, Any]:
    """The best client count's median over its repetitions, with the runs' range and limit."""
    by_clients: dict[int, list[tuple[float, dict[str, Any]]]] = defaultdict(list)
    for record in runs:
        if record["manifest"]["status"] == "complete" and record["summary"]:
            summary = Summary.model_validate(record["summary"])
            manifest = {**record["manifest"], "limit": {"side": ceiling_limit(record, summary, ran_dry)},
                        "_p99_ms": closed_loop_p99_ms(summary), "_drift": window_drift(record.get("path"))}
            by_clients[record["manifest"]["params"]["clients"]].append((items_per_s(summary), manifest))
    if not by_clients:
        return {"ceiling_per_s": None}
    per_clients = [_at_clients(clients, runs) for clients, runs in sorted(by_clients.items())]
    clients, best = max(by_clients.items(), key=lambda kv: statistics.median(r for r, _ in kv[1]))
    rates = [rate for rate, _ in best]
    cores = [exact_of(m).get("server_cores_used") for _, m in best]
    drifts = [m["_drift"] for _, m in best if m.get("_drift") is not None]
    return {"ceiling_per_s": statistics.median(rates), "ceiling_low": min(rates), "ceiling_high": max(rates),
            "ceiling_runs": len(rates), "ceiling_clients": clients,
            "ceiling_limit": combined_limit([limit_of(m) for _, m in best]),
            "ceiling_server_cores": None if None in cores else statistics.median(cores),
            "ceiling_s": min(m["params"].get("window_s") or 0 for _, m in best) or None,
            "ceiling_drift": statistics.median(drifts) if drifts else None,
            "ceiling_drift_low": min(drifts, default=None), "ceiling_drift_high": max(drifts, default=None),
            "ceiling_by_clients": per_clients}


def window_drift(run_path: str | None) -> float | None:
    """How a closed-loop window's rate moved inside it: the mean items/s of its last third over
    its first third (whole seconds: the first and last measured second dropped), minus 1 (-0.5: it
    halved). Thirds, not a few seconds at each end: a heavy-tailed query stream swings ±20 % from
    one 5-s stretch to the next on a flat rate. A ceiling is a window's average; one that falls
    steadily (dead tuples, index churn) depends on the window's length. None: no per-second
    series, or under 9 whole seconds."""
    if not run_path or not (Path(run_path) / "timeseries.parquet").exists():
        return None
    series = pd.read_parquet(Path(run_path) / "timeseries.parquet")
    series = series[(series.phase == "measure") & series.role.isin(("tool", "client"))]
    per_second = series.groupby("second")["items"].sum().sort_index().iloc[1:-1]
    third = len(per_second) // 3
    if third < 3:
        return None
    first, last = per_second.iloc[:third].mean(), per_second.iloc[-third:].mean()
    return None if not first else float(last / first - 1)


def _at_clients(clients: int, runs: list[tuple[float, dict[str, Any]]]) -> dict[str, Any]:
    """One client count's ceiling: the median rate, its range and limit, the median closed-loop
    p99 (service time, the tool's or the harness clients': what a closed loop of that many sees)."""
    rates = [rate for rate, _ in runs]
    p99s = [p99 for _, m in runs if (p99 := m.get("_p99_ms")) is not None]
    return {"clients": clients, "per_s": statistics.median(rates), "low": min(rates), "high": max(rates),
            "runs": len(rates), "limit": combined_limit([limit_of(m) for _, m in runs]),
            "p99_ms": statistics.median(p99s) if len(p99s) == len(runs) else None}


def closed_loop_p99_ms(summary: Summary) -> float | None:
    """The measured window's p99 service time of the load (a tool's, or the harness clients')."""
    p99s = [stats.p99_us for e in summary.entries if e.phase == "measure" and e.role in ("tool", "client")
            for kind, stats in e.latencies.items() if kind == "service_time" and stats.p99_us is not None]
    return max(p99s) / 1000 if p99s else None


#: the harness and the C tool agree when their rates on the same ceiling are within 25 % (the
#: study's tie band): outside it, one of the two loads measured itself, not the server
AGREEMENT = 0.25


def ceiling_tool(runs: list[dict[str, Any]]) -> str | None:
    """The C tool a design's ceiling ran (its records' ``params.tool``), None: the harness."""
    tools = {r["manifest"]["params"].get("tool") for r in runs}
    return next(iter(tools)) if len(tools) == 1 and None not in tools else None


def check_figures(checks: list[dict[str, Any]], ceiling: dict[str, Any], tool: str | None,
                  items_per_s: Callable[[Summary], float]) -> dict[str, Any]:
    """The harness's rate at the ceiling's clients against the tool's ceiling (no check: Nones)."""
    used = [r for r in checks if r["manifest"]["status"] == "complete" and r["summary"]
            and r["manifest"]["params"].get("clients") == ceiling.get("ceiling_clients")]
    rates = [items_per_s(Summary.model_validate(r["summary"])) for r in used]
    if not rates or not ceiling.get("ceiling_per_s"):
        return {"ceiling_by": tool, "check_per_s": None, "check_over_ceiling": None, "agrees": None,
                "check_limit": None}
    ratio = statistics.median(rates) / ceiling["ceiling_per_s"]
    limit = combined_limit([limit_of(r["manifest"]) for r in used])
    # a harness whose own core was the limit, below the tool, measured itself: the check says
    # nothing about the server (None), where a server-limited harness below the tool disagrees
    agrees = None if limit == LOAD and ratio < 1 - AGREEMENT else abs(ratio - 1) <= AGREEMENT
    return {"ceiling_by": tool, "check_per_s": statistics.median(rates), "check_over_ceiling": ratio,
            "agrees": agrees, "check_limit": limit}


def other_targets_windows(runs: list[dict[str, Any]], target: float, reading: Reading) -> list[dict[str, Any]]:
    """The steady windows the other targets' searches ran, judged again by ``target``: a window is
    one measurement whichever search asked for it — one whose p99 held 10 ms held 100 ms too, and
    a 50-ms search's window at 4 ms met 10 ms — so a capacity reads every steady window of its
    design, and a looser target's capacity is never below a tighter one's. Only steady
    confirmations count (never a short probe)."""
    others = [r for r in runs if r["manifest"]["params"]["stage"] == CONFIRM
              and (r["manifest"]["params"].get("target_p99_ms") or target) != target]
    return readings(others, reading, judged_at_ms=target)


def recorded_slo(params: dict[str, Any]) -> Slo:
    """The SLO a point was judged by, as its record says (older: the target with today's shares)."""
    return Slo(**params["slo"]) if params.get("slo") else slo_for(params["target_p99_ms"])


def readings(runs: list[dict[str, Any]], reading: Reading, judged_at_ms: float | None = None) -> list[dict[str, Any]]:
    """Every probe and confirmation of one target as (stage, offered, p99, held, manifest); with
    ``judged_at_ms``, each held to that p99 bound instead of its own (its other terms unchanged)."""
    rows = []
    for record in runs:
        manifest, params = record["manifest"], record["manifest"]["params"]
        slo = recorded_slo(params)
        if judged_at_ms is not None:
            slo = Slo(**{**vars(slo), "p99_bound_us": judged_at_ms * 1000})
        offered = float(params["offered_per_s"])
        if manifest["status"] != "complete" or not record["summary"]:
            point = PointResult(offered, 0.0, None, None)
        else:
            point = reading(Summary.model_validate(record["summary"]), offered, params.get("outcome") or {})
        rows.append({"stage": params["stage"], "offered": offered, "point": point,
                     "held": slo.failure(point) is None, "manifest": manifest,
                     "judged_at_ms": judged_at_ms})
    return rows


def required(row: dict[str, Any]) -> int:
    """How many steady windows its confirmation took (older records: as many as it ran)."""
    return int(row["manifest"]["params"].get("confirmations_required") or 1)


def confirmed(rows: list[dict[str, Any]], below: float | None = None) -> tuple[float | None, list[dict[str, Any]]]:
    """The highest rate (under ``below``, if given) whose confirmation ran every window it needed
    and all of them held (an interrupted confirmation, 1 of 3 windows measured, confirms
    nothing), with those windows."""
    by_rate: dict[float, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["stage"] == CONFIRM and (below is None or row["offered"] < below):
            by_rate[row["offered"]].append(row)
    held = [rate for rate, group in by_rate.items()
            if all(r["held"] for r in group) and len(group) >= required(group[0])]
    return (max(held), by_rate[max(held)]) if held else (None, [])


def held_up_to(rows: list[dict[str, Any]]) -> tuple[float | None, list[dict[str, Any]], dict[str, Any] | None]:
    """The capacity: the highest confirmed rate with no steady window missing the target at or
    below it — a tail that is not monotone in rate (a spike missed at 938/s, 3 windows held at
    1,313/s) is read at the held rate under the miss, never above it — its windows, and the
    lowest such miss with the rate that held above it (None where none did). A miss the load
    caused (its set saturated) bounds nothing."""
    rate, held = confirmed(rows)
    misses = [r for r in rows if r["stage"] == CONFIRM and not r["held"] and _a_measured_miss(r)
              and rate is not None and r["offered"] <= rate]
    if not misses:
        return rate, held, None
    miss = min(misses, key=lambda r: r["offered"])
    lower, windows = confirmed(rows, below=miss["offered"])
    return lower, windows, {**miss, "held_above": rate}


def _a_measured_miss(row: dict[str, Any]) -> bool:
    """A window that measured a miss: complete, a p99 from enough operations, its load set not the
    limit (an errored or interrupted window, or a thin one, vetoes no rate that held)."""
    window = row["manifest"]["params"].get("window_s") or 0
    return (row["manifest"]["status"] == "complete" and row["point"].p99_us is not None
            and row["offered"] * window >= MIN_ITEMS and limit_of(row["manifest"]) != LOAD)


def capacity_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rate, held, early_miss = held_up_to(rows)
    p99s = [r["point"].p99_us / 1000 for r in held if r["point"].p99_us is not None]
    needed = required(held[0]) if held else 0
    failed = [r for r in rows if r["stage"] == CONFIRM and not r["held"]]
    probes = [r["offered"] for r in rows if r["stage"] == PROBE and r["held"]]
    borrowed = {r["manifest"]["params"].get("target_p99_ms") for r in held if r.get("judged_at_ms") is not None}
    figures: dict[str, Any] = {"capacity_per_s": rate,
                               # a rate that held all its windows above a steady miss (not the capacity)
                               "held_above_miss_per_s": early_miss and early_miss["held_above"],
                               # held windows another target's search ran (``other_targets_windows``): its target
                               "capacity_windows_of_ms": min(borrowed) if borrowed else None,
                               "confirmations": f"{len(held)} of {needed} held" if rate else "none held",
                               "capacity_limit": combined_limit([limit_of(r["manifest"]) for r in held]) if held else None,
                               "curve": [(r["offered"], _ms(r["point"].p99_us), r["held"]) for r in rows],
                               # what a search tried: the steady windows that failed (rate, p99, limit side)
                               # and the highest short probe that held
                               "confirm_failed": [(r["offered"], _ms(r["point"].p99_us), limit_of(r["manifest"]))
                                                  for r in failed],
                               "confirm_s": max((r["manifest"]["params"].get("window_s") or 0 for r in rows
                                                 if r["stage"] == CONFIRM), default=None) or None,
                               "probe_held_max_per_s": max(probes) if probes else None,
                               **_missed_everywhere(rows), **_missed_under(early_miss, rate)}
    if rate is not None:
        # only a steady window's miss bounds the capacity (a short probe's decides nothing); the
        # lowest probe that missed above it is kept to show what the search saw
        miss = _lowest_miss_above(rate, [r for r in rows if r["stage"] == CONFIRM])
        probe_miss = _lowest_miss_above(rate, [r for r in rows if r["stage"] == PROBE])
        figures["capacity_miss_per_s"] = None if miss is None else miss["offered"]
        # a miss the load caused (its set saturated) bounds nothing: the capacity is then a floor
        figures["capacity_miss_limit"] = None if miss is None else limit_of(miss["manifest"])
        figures["probe_miss_per_s"] = None if probe_miss is None else probe_miss["offered"]
    if p99s:
        figures |= {"p99_ms": statistics.median(p99s), "p99_low_ms": min(p99s), "p99_high_ms": max(p99s)}
        cpu = [_cpu_per_item(r) for r in held]
        figures["server_cpu_us_per_item"] = None if None in cpu else statistics.median(cpu)
        figures["steady_s"] = held[0]["manifest"]["params"].get("window_s")
    return figures


def _lowest_miss_above(rate: float, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    return min((r for r in rows if not r["held"] and r["offered"] > rate), key=lambda r: r["offered"], default=None)


def rate_check_figures(checks: list[dict[str, Any]], figures: dict[str, Any]) -> dict[str, Any]:
    """The harness's window at the capacity rate beside the compiled load's (``rate_check_*``):
    its rate, p99, whether it held the target, its limit side, and ``rate_agrees`` — both loads
    held the target there (None: no check, a check at another rate than the figure, or a harness
    limited by its own core that missed: it measured itself)."""
    if not checks:
        return {}
    # the check at the figure where there is one (the last run at it), else the last check
    check = next((c for c in reversed(checks) if c["offered"] == figures.get("capacity_per_s")), checks[-1])
    limit = limit_of(check["manifest"])
    at_figure = check["offered"] == figures.get("capacity_per_s")
    # a check at another rate than the figure (the capacity read from another search's windows)
    # checks nothing about the figure: shown, never an agreement
    agrees = None if (limit == LOAD and not check["held"]) or not at_figure else bool(check["held"])
    return {"rate_check_per_s": check["offered"], "rate_check_p99_ms": _ms(check["point"].p99_us),
            "rate_check_held": check["held"], "rate_check_limit": limit, "rate_check_at_figure": at_figure,
            "rate_check_tool_p99_ms": figures.get("p99_ms") if at_figure else None, "rate_agrees": agrees}


def _missed_under(miss: dict[str, Any] | None, rate: float | None) -> dict[str, Any]:
    """Where a steady window missed under every rate that held (a spike at 938/s, held only at
    1,313/s): the capacity is below that miss, as for a design that held nowhere (``below_*``)."""
    if miss is None or rate is not None:
        return {}
    return {"below_per_s": miss["offered"], "below_limit": limit_of(miss["manifest"]),
            "below_p99_ms": _ms(miss["point"].p99_us), "below_window_s": miss["manifest"]["params"].get("window_s")}


def _missed_everywhere(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Where no probe and no confirmation held: ``below_per_s``, the lowest rate that missed with
    at least ``MIN_ITEMS`` operations (the experiment's: enough for a p99) offered in its window (its capacity is under it), and
    that window's ``below_limit`` and ``below_p99_ms``; nothing where anything held."""
    if not rows or any(r["held"] for r in rows):
        return {}
    full = [r for r in rows if r["offered"] * (r["manifest"]["params"].get("window_s") or 0) >= MIN_ITEMS]
    if not full:
        return {}
    lowest = min(full, key=lambda r: r["offered"])
    return {"below_per_s": lowest["offered"], "below_limit": limit_of(lowest["manifest"]),
            "below_p99_ms": _ms(lowest["point"].p99_us), "below_window_s": lowest["manifest"]["params"].get("window_s"),
            "lowest_tried_per_s": min(r["offered"] for r in rows)}


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1000


def _cpu_per_item(row: dict[str, Any]) -> float | None:
    cores, achieved = exact_of(row["manifest"]).get("server_cores_used"), row["point"].achieved
    return None if cores is None or not achieved else cores / achieved * 1e6


def capacity_table(records: list[dict[str, Any]], reading: Reading, items_per_s: Callable[[Summary], float],
                   ran_dry: Callable[[Summary], bool] | None = None, split_by: str | None = None) -> pd.DataFrame:
    """One row per (variant, target) of the ``capacity`` records among ``records``; with
    ``split_by`` (a params key, e.g. the search's ``stream``) one design per (variant, that value),
    the value in its own column."""
    groups: dict[tuple[str, Any], list[dict[str, Any]]] = defaultdict(list)
    for record in capacity_records(records):
        params = record["manifest"]["params"]
        groups[(params["variant"], params.get(split_by) if split_by else None)].append(record)
    rows = []
    for (variant, split), runs in sorted(groups.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        manifest = runs[0]["manifest"]
        server = next(iter(manifest["servers"]))
        base = {"variant": variant, "system": manifest["system"], "server": server, "side": side_of(server),
                **({split_by: split} if split_by else {})}
        ceilings = [r for r in runs if r["manifest"]["params"]["stage"] == CEILING]
        ceiling = ceiling_figures(ceilings, items_per_s, ran_dry)
        ceiling |= check_figures([r for r in runs if r["manifest"]["params"]["stage"] == CHECK], ceiling,
                                 ceiling_tool(ceilings), items_per_s)
        targets = sorted({r["manifest"]["params"]["target_p99_ms"] for r in runs
                          if r["manifest"]["params"]["stage"] in (PROBE, CONFIRM)})
        for target in targets:
            at = [r for r in runs if r["manifest"]["params"].get("target_p99_ms") == target]
            searched = [r for r in at if r["manifest"]["params"]["stage"] != RATE_CHECK]
            figures = capacity_figures(readings(searched, reading) + other_targets_windows(runs, target, reading))
            figures["window_held_above_per_s"] = None if figures.get("capacity_miss_per_s") is not None else (
                window_held_above(runs, target, reading, figures.get("capacity_per_s")))
            # a check window, like a steady one, is judged by each target whichever search asked for it
            checked = [r for r in runs if r["manifest"]["params"]["stage"] == RATE_CHECK]
            rows.append({**base, "target_p99_ms": target, **ceiling, **figures,
                         **rate_check_figures(readings(checked, reading, judged_at_ms=target), figures)})
        if not targets:
            rows.append({**base, "target_p99_ms": None, **ceiling})
    return pd.DataFrame(rows)


def window_held_above(runs: list[dict[str, Any]], target: float, reading: Reading, rate: float | None) -> float | None:
    """The highest rate above the capacity where any window of the design (a probe or a steady
    window, at any target) met this target, asked where no steady window missed above it: the
    search stopped lower (a first probe's miss sends it down), so the figure is a floor."""
    if rate is None:
        return None
    windows = [r for r in runs if r["manifest"]["params"]["stage"] in (PROBE, CONFIRM)
               and float(r["manifest"]["params"]["offered_per_s"]) > rate]
    held = [row["offered"] for row in readings(windows, reading, judged_at_ms=target) if row["held"]]
    return max(held, default=None)


def records_at(paths: Any) -> list[dict[str, Any]]:
    """The records (manifest, summary) at each distinct path of ``paths`` (a frame's ``path``)."""
    records = []
    for path in sorted({str(p) for p in paths}):
        summary = Path(path) / "summary.json"
        records.append({"path": path, "manifest": json.loads((Path(path) / "manifest.json").read_text()),
                        "summary": json.loads(summary.read_text()) if summary.exists() else None})
    return records
