"""Queue study tables: throughput per consumer count, latency at matched rates, the cliff, crash recovery."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from pglimits_core.analysis import queue_health
from pglimits_core.analysis.runs import by_role, entry_rows, load_records
from pglimits_core.load.ratesearch import PointResult, Slo
from pglimits_core.record.summary import SUSTAINED_FRACTION

COLUMNS = ("run_id", "experiment", "variant", "role", "consumers")


def queue_frame(runs_root: Path | None = None) -> pd.DataFrame:
    frame = entry_rows(load_records("queue", runs_root))
    return frame if not frame.empty else pd.DataFrame(columns=list(COLUMNS))


def throughput_table(frame: pd.DataFrame, experiment: str = "throughput") -> pd.DataFrame:
    """Median jobs/s (and spread over repetitions) per variant × consumers: ``throughput`` is the
    closed-loop burn-down of a prefilled backlog, ``steady`` the producer/consumer steady state."""
    rows = frame[(frame.experiment == experiment) & (frame.role == "consumer")]
    if rows.empty:
        return pd.DataFrame()
    # A run that ran out of backlog inside the window measured its producers or its prefill,
    # not the consumers: its rate is a lower bound at best, so it is flagged and blanked.
    rows = rows.assign(backlog_ran_out=rows.left_after_run == 0, depth_not_held=False)
    if experiment == "steady":
        # A steady state exists only while the producers hold the backlog at its target, so they
        # idle there now and then. Producers that never idled kept the consumers waiting on them:
        # the rate measured the producers (on 2 cores, often starved by many consumers), not the
        # consumers. Flagged and blanked like a burn-down that ran out of backlog.
        producers = frame[(frame.experiment == experiment) & (frame.role == "producer")]
        never_idle = producers.set_index("run_id").idle_polls.eq(0)
        rows = rows.assign(depth_not_held=rows.run_id.map(never_idle).fillna(False).astype(bool))
    rows.loc[rows.backlog_ran_out | rows.depth_not_held, "items_per_s"] = float("nan")
    grouped = rows.groupby(["variant", "consumers"])
    table = grouped.agg(jobs_per_s=("items_per_s", "median"), min_jobs_per_s=("items_per_s", "min"),
                        backlog_ran_out=("backlog_ran_out", "any"), depth_not_held=("depth_not_held", "any"),
                        max_jobs_per_s=("items_per_s", "max"), runs=("run_id", "count"),
                        client_bound=("client_bound", "any"), lost=("lost", "sum"),
                        duplicates=("duplicates", "sum"))
    return table.reset_index()


def latency_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Enqueue latency (from intended start) and end-to-end latency at each offered rate."""
    rows = frame[frame.experiment == "latency"]
    if rows.empty:
        return pd.DataFrame()
    producer, consumer = by_role(rows)
    # Sustained means the producers kept the offered rate AND the consumers kept up with it;
    # otherwise the backlog grew and the latencies describe a queue filling up, not a rate.
    consumed = consumer.items_per_s.reindex(producer.index)
    sustained = producer.sustained.astype(bool) & (consumed >= SUSTAINED_FRACTION * producer.offered_rate)
    table = pd.DataFrame({
        "variant": producer.variant, "offered_per_s": producer.offered_rate,
        "achieved_per_s": producer.achieved_rate, "consumed_per_s": consumed, "sustained": sustained,
        "enqueue_p50_ms": producer.get("latency_p50_ms"), "enqueue_p99_ms": producer.get("latency_p99_ms"),
        "claim_p50_ms": consumer.get("claim_p50_ms"), "claim_p99_ms": consumer.get("claim_p99_ms"),
        "e2e_p50_ms": consumer.get("end_to_end_p50_ms"), "e2e_p95_ms": consumer.get("end_to_end_p95_ms"),
        "e2e_p99_ms": consumer.get("end_to_end_p99_ms"), "client_bound": producer.client_bound,
        "lost": producer.lost, "duplicates": producer.duplicates})
    return table.sort_values(["offered_per_s", "variant"]).reset_index(drop=True)


def cliff_points(frame: pd.DataFrame) -> pd.DataFrame:
    """Every rate-search probe with its verdict under the SLO it was searched with."""
    rows = frame[frame.experiment == "cliff"]
    if rows.empty:
        return pd.DataFrame()
    producer, consumer = by_role(rows)
    table = pd.DataFrame({"variant": producer.variant, "offered_per_s": producer.offered_rate,
                          "produced_per_s": producer.items_per_s, "consumed_per_s": consumer.items_per_s,
                          "achieved_per_s": producer.achieved_rate,
                          "e2e_p50_ms": consumer.get("end_to_end_p50_ms"),
                          "e2e_p99_ms": consumer.get("end_to_end_p99_ms"), "slo": producer.slo})
    table["failed"] = [_verdict(row) for row in table.itertuples()]
    return table.sort_values(["variant", "offered_per_s"]).reset_index(drop=True)


def _verdict(row) -> str:
    slo = Slo(**row.slo) if isinstance(row.slo, dict) else Slo(p99_bound_us=50_000)
    achieved = min(row.achieved_per_s or 0.0, row.consumed_per_s or 0.0)
    backlog = max(0.0, (row.produced_per_s or 0.0) - (row.consumed_per_s or 0.0)) / row.offered_per_s
    p99 = None if pd.isna(row.e2e_p99_ms) else row.e2e_p99_ms * 1000
    point = PointResult(row.offered_per_s, achieved, None, p99, backlog)
    return slo.failure(point) or ""


def cliff_table(points: pd.DataFrame) -> pd.DataFrame:
    """Highest sustainable rate per variant and the lowest rate that failed (the cliff)."""
    if points.empty:
        return pd.DataFrame()
    rows = []
    for name, group in points.groupby("variant"):
        ok, bad = group[group.failed == ""], group[group.failed != ""]
        rows.append({"variant": name, "sustainable_per_s": ok.offered_per_s.max() if len(ok) else None,
                     "first_failed_per_s": bad.offered_per_s.min() if len(bad) else None,
                     "why_failed": bad.sort_values("offered_per_s").failed.iloc[0] if len(bad) else "",
                     "probes": len(group)})
    return pd.DataFrame(rows)


RECOVERY_COLUMNS = ["variant", "kill_target", "confirmed", "lost", "recovery_s", "wal_to_replay_mb",
                    "durable", "note", "server_log"]


def recovery_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per crash drill: acknowledged messages lost and time to the first claim after the
    restart. The drill's facts live in the manifest's outcome (a drill has no load summary)."""
    rows = frame[frame.experiment == "recovery"].drop_duplicates("run_id") if "path" in frame else frame[:0]
    if rows.empty:
        return pd.DataFrame(columns=RECOVERY_COLUMNS)
    table = pd.DataFrame([_recovery_row(run) for run in rows.itertuples()], columns=RECOVERY_COLUMNS)
    return table.sort_values("variant", kind="stable").reset_index(drop=True)


def _recovery_row(run) -> dict:
    manifest = json.loads((Path(run.path) / "manifest.json").read_text())
    outcome = manifest.get("params", {}).get("outcome", {})
    if run.status != "complete" or not outcome:
        return {"variant": run.variant, "note": f"failed: {run.error}"}
    # Nothing survived to claim (Redis without persistence): the time is to the first empty answer.
    first = outcome.get("first_claim_s")
    return {"variant": run.variant, "kill_target": outcome.get("kill_target"),
            "confirmed": outcome.get("confirmed"), "lost": outcome.get("lost"),
            "recovery_s": first if first is not None else outcome.get("recovery_s"),
            "wal_to_replay_mb": _mb(outcome.get("state_at_kill", {}).get("wal_to_replay_bytes")),
            "durable": outcome.get("durable_config"), "note": _recovery_note(outcome),
            "server_log": " | ".join(outcome.get("server_log", []))}


def _mb(value: float | None) -> float | None:
    return None if value is None else round(value / 2**20, 1)


def _recovery_note(outcome: dict) -> str:
    notes = [outcome.get("durability", "")]
    if outcome.get("first_claim_s") is None:
        notes.append("nothing left to claim: recovery_s is the first (empty) answer")
    if outcome.get("durable_config") and outcome.get("lost"):
        notes.append("DURABLE CONFIG LOST ACKNOWLEDGED MESSAGES")
    return "; ".join(n for n in notes if n)


def outcome_table(outcome: dict | None) -> pd.DataFrame:
    """What could not be run and why (unavailable servers, failed points) — never hidden."""
    if not outcome:
        return pd.DataFrame(columns=["what", "reason"])
    rows = [{"what": f"server {name}", "reason": reason} for name, reason in outcome.get("unavailable", {}).items()]
    rows += [{"what": f"{f['experiment']} {f['variant']}", "reason": f["error"]} for f in outcome.get("failures", [])]
    failed_runs = [r for r in outcome.get("runs", []) if r.status != "complete"]
    rows += [{"what": f"run {r.path.name}", "reason": r.error} for r in failed_runs]
    return pd.DataFrame(rows, columns=["what", "reason"])


def queue_report(profile: str, runs_root: str = "", figures_dir: str = "",
                 tables_dir: str = "") -> dict[str, pd.DataFrame]:
    """All queue tables of a profile's runs; figures saved (PNG + SVG) for every table with data
    (default ``figures/<host-id>/<profile>/``); tables as Markdown + CSV (default
    ``data/results/<host-id>/<profile>/tables/``)."""
    from pglimits_core.config import profile_figures_dir, profile_results_dir, profile_runs_dir
    from pglimits_core.plotting import figures

    frame = queue_frame(profile_runs_dir(profile, runs_root))
    figures_dir = Path(figures_dir) if figures_dir else profile_figures_dir(profile)
    tables_dir = Path(tables_dir) if tables_dir else profile_results_dir(profile) / "tables"
    tables = {"throughput": throughput_table(frame), "steady": throughput_table(frame, "steady"),
              "latency": latency_table(frame)}
    tables["cliff_points"] = cliff_points(frame)
    tables["cliff"] = cliff_table(tables["cliff_points"])
    tables["resources"] = queue_health.resources_table(frame)
    tables["queue_health"] = queue_health.queue_health_table(frame)
    tables["dead_tuples"] = queue_health.dead_tuple_series(frame)
    tables["recovery"] = recovery_table(frame)
    charts = {"throughput": ("queue-consumer-sweep", figures.consumer_sweep_chart),
              "steady": ("queue-steady-state", lambda t: figures.consumer_sweep_chart(
                  t, "Queue steady state: producers hold ~target depth, consumers swept\n"
                     "(left out: points where the producers could not hold the depth)")),
              "dead_tuples": ("queue-dead-tuples", figures.dead_tuples_chart),
              "latency": ("queue-latency", figures.latency_chart),
              "cliff_points": ("queue-cliff", figures.cliff_chart)}
    plotted = {"throughput": "jobs_per_s", "steady": "jobs_per_s", "latency": "e2e_p99_ms", "cliff_points": "consumed_per_s",
               "dead_tuples": "dead_tuples"}
    for key, (name, chart) in charts.items():
        table = tables[key]
        if not table.empty and table[plotted[key]].notna().any():  # an all-blank chart says nothing
            figures.save_figure(chart(table.dropna(subset=[plotted[key]])), name, figures_dir)
    if tables_dir:
        _write_tables(tables, Path(tables_dir))
    return tables


def _write_tables(tables: dict[str, pd.DataFrame], directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        table.to_csv(directory / f"queue-{name}.csv", index=False)
        (directory / f"queue-{name}.md").write_text(table.to_markdown(index=False) if not table.empty else "(no data)\n")


def servers_table(profile: str, runs_root: str = "") -> pd.DataFrame:
    """Versions of the servers these queue runs measured (from their manifests)."""
    from pglimits_core.analysis.runs import versions_table
    from pglimits_core.config import profile_runs_dir

    return versions_table(load_records("queue", profile_runs_dir(profile, runs_root)))
