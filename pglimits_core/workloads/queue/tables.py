"""Queue study tables: throughput per consumer count, latency at matched rates, capacity and the drills. Every
table carries each variant's durability class and is grouped by it: compare within a class."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.flags import (  # noqa: F401 (re-exported for the queue's modules)
    any_verdict,
    flag_set,
)
from pglimits_core.analysis.runs import (
    box_saturated,
    busy_neighbour,
    by_role,
    entry_rows,
    measured,
    run_limits,
    runs_limit,
    trusted,
)
from pglimits_core.record.summary import SUSTAINED_FRACTION
from pglimits_core.workloads.queue import health as queue_health
from pglimits_core.workloads.queue import latency_names
from pglimits_core.workloads.queue.capacity import capacity_table_of
from pglimits_core.workloads.queue.drills import consumer_crash_tables as queue_consumer_crash
from pglimits_core.workloads.queue.drills import recovery_tables as queue_recovery
from pglimits_core.workloads.queue.durability_tables import (
    ensure_class,
    fill_by_variant,
    run_class,
    sort_by_class,
)
from pglimits_core.workloads.queue.head_to_head import latency_verdicts, reach, throughput_verdicts
from pglimits_core.workloads.queue.placement_points import placement_table
from pglimits_core.workloads.queue.tool_tables import harness_bench_table, server_cpu_us_per_job

COLUMNS = ("run_id", "experiment", "variant", "durability_class", "role", "consumers")
# Why a run's rate is only a floor for its consumers, per experiment.
LOWER_BOUND_WHY = {"throughput": "backlog ran out", "steady": "producer-bound"}


def queue_frame(records: list[dict]) -> pd.DataFrame:
    """One row per run × role × measured phase of the queue records (``analysis.runs``), each
    with its variant's durability class and the run's exactly-once accounting."""
    frame = entry_rows(records, queue_run_columns)
    return _no_verdict_on_unexplained_cpu(fill_by_variant(frame)) if not frame.empty else pd.DataFrame(columns=list(COLUMNS))


def _no_verdict_on_unexplained_cpu(frame: pd.DataFrame) -> pd.DataFrame:
    """A run whose machine was busier than its client and server explain (processes the sampler
    missed, or a neighbour) has no trustworthy per-second CPU split: its client-bound verdict is
    "cannot tell" (None), never a ᶜ or a "not client-bound"; nor can it say which side set the
    limit — unless the limit was read from the CPU sets' exact counters (the split placement),
    which see a neighbour on a saturated set themselves."""
    if "other_cpu_pct" not in frame or "client_bound" not in frame:
        return frame
    untrusted = frame.other_cpu_pct.map(busy_neighbour)
    from_sets = frame["limit_from_sets"].fillna(False).astype(bool) if "limit_from_sets" in frame else False
    limits = pd.Series(run_limits(frame), index=frame.index, dtype=object)
    trusted = ~untrusted | from_sets
    return frame.assign(client_bound=frame.client_bound.astype(object).where(trusted, None),
                        limit=limits.where(trusted, None))


def queue_run_columns(manifest: dict) -> dict:
    """A queue run's own columns: durability class, the knobs every table groups by (present
    even where a point has no such knob), the accounting, and the SQLite busy counters."""
    params = manifest.get("params", {})
    outcome = params.get("outcome", {})
    return {"durability_class": run_class(manifest), "consumers": params.get("consumers"),
            "producers": params.get("producers"), "rate": params.get("rate"),
            "lost": outcome.get("lost"), "duplicates": outcome.get("duplicates"),
            "produced": outcome.get("produced"), "left_after_run": outcome.get("drained_after"),
            "left_in_queue": outcome.get("left_after_run"),  # the depth a run left (a burn-down's, a soak's)
            **_worker_busy(outcome), **consumer_fairness(outcome.get("consumer_acks"))}


def consumer_fairness(acks: dict[str, int] | None) -> dict:
    """How evenly a run's acknowledged messages spread over its consumers: Jain's index
    ((Σx)² / (n·Σx²): 1 = every consumer the same, 1/n = one consumer did everything) and the
    least and most a consumer did as a share of the mean. None before runs recorded it, or with
    fewer than two consumers."""
    counts = list((acks or {}).values())
    if len(counts) < 2 or not sum(counts):
        return {"fairness_jain": None, "consumer_min_share": None, "consumer_max_share": None}
    mean = sum(counts) / len(counts)
    return {"fairness_jain": sum(counts) ** 2 / (len(counts) * sum(c * c for c in counts)),
            "consumer_min_share": min(counts) / mean, "consumer_max_share": max(counts) / mean}


def _worker_busy(outcome: dict) -> dict:
    """SQLite busy-handler counters summed over the load workers (``worker_stats``); the study
    process's own adapter (``adapter_stats``) only drains the queue, so its counters say nothing."""
    stats = outcome.get("worker_stats") or {}
    wait_ns = stats.get("busy_wait_ns")
    return {"worker_busy_events": stats.get("busy_events"), "worker_busy_timeouts": stats.get("busy_timeouts"),
            "worker_busy_wait_ms": None if wait_ns is None else wait_ns / 1e6}


def throughput_table(frame: pd.DataFrame, experiment: str = "throughput") -> pd.DataFrame:
    """Median jobs/s per variant × consumers over the runs that measured the consumers, with their
    min–max and their count (``runs``; ``runs_recorded`` counts every run of the point).
    ``throughput`` is the closed-loop burn-down of a prefilled backlog, ``steady`` the
    producer/consumer steady state.

    A run whose consumers waited on something else measured a floor of their rate: a burn-down
    that emptied its backlog inside the window, a steady point whose producers never held the
    depth (producer-bound). A point with only such runs is a lower bound (``lower_bound``,
    rendered "≥ x (why)" in ``jobs_per_s_text``), never blanked."""
    rows = measured(frame)
    rows = rows[(rows.experiment == experiment) & (rows.role == "consumer")]
    if rows.empty:
        return pd.DataFrame()
    rows = _lower_bound_runs(ensure_class(rows), frame, experiment)
    table = pd.DataFrame([_sweep_point(runs) for _, runs in rows.groupby(["variant", "consumers"])])
    table["runs_recorded"] = _with_failed_runs(table, frame, experiment)
    table.insert(3, "jobs_per_s_text", table.apply(rate_text, axis=1))
    return sort_by_class(table, ["variant", "consumers"])


def _with_failed_runs(table: pd.DataFrame, frame: pd.DataFrame, experiment: str) -> pd.Series:
    """Every recorded run of each point, failed ones included ("2 of 3 runs" must say a run
    failed, not hide it)."""
    if "status" not in frame:
        return table.runs_recorded
    every = frame[frame.experiment == experiment].groupby(["variant", "consumers"]).run_id.nunique()
    recorded = [every.get((v, c), 0) for v, c in zip(table.variant, table.consumers, strict=True)]
    return pd.concat([table.runs_recorded, pd.Series(recorded, index=table.index)], axis=1).max(axis=1)


def _lower_bound_runs(rows: pd.DataFrame, frame: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """Per run: ``backlog_ran_out``, ``depth_not_held`` and ``lower_bound_why`` ("" when the run
    measured the consumers)."""
    ran_out = rows.left_after_run == 0
    not_held = pd.Series(False, index=rows.index)
    if experiment == "steady":
        # A steady state exists only while the producers hold the backlog at its target, so they
        # idle there now and then. Producers that never idled kept the consumers waiting on them:
        # the rate is what the producers delivered (on 2 cores, often starved by many consumers).
        producers = frame[(frame.experiment == experiment) & (frame.role == "producer")]
        never_idle = producers.set_index("run_id").idle_polls.eq(0)
        not_held = rows.run_id.map(never_idle).fillna(False).astype(bool)
    why = (ran_out | not_held).map({True: LOWER_BOUND_WHY.get(experiment, "lower bound"), False: ""})
    return rows.assign(backlog_ran_out=ran_out, depth_not_held=not_held, lower_bound_why=why)


def _sweep_point(runs: pd.DataFrame) -> dict:
    """One variant × consumers point: the median of the runs that measured the consumers, else of
    the lower-bound runs (then the point is a lower bound)."""
    measured, floors = runs[runs.lower_bound_why == ""], runs[runs.lower_bound_why != ""]
    # A floor above a measured run (a burn-down that emptied its backlog because it was the
    # fastest) must not be dropped: then every run counts and the point is a lower bound.
    censored = len(floors) and len(measured) and floors.items_per_s.max() > measured.items_per_s.min()
    used = measured if len(measured) and not censored else runs
    rates, first = used.items_per_s.dropna(), runs.iloc[0]
    # server CPU per job only from runs whose CPU split can be believed (``trusted``): a verdict
    # sent to the CPU rule because the split was doubted must not then use that same split
    believed = trusted(used)
    cpu = server_cpu_us_per_job(server_pct(believed), believed.items_per_s).dropna()
    lower = measured.empty or bool(censored)
    return {"variant": first.variant, "durability_class": first.durability_class, "consumers": first.consumers,
            "jobs_per_s": rates.median(), "min_jobs_per_s": rates.min(), "max_jobs_per_s": rates.max(),
            "runs": len(rates), "runs_recorded": len(runs), "lower_bound": lower,
            "lower_bound_why": "" if not lower else (f"{len(floors)} of {len(runs)} runs: "
                                                    if censored else "") + floors.lower_bound_why.iloc[0],
            "backlog_ran_out": bool(runs.backlog_ran_out.any()), "depth_not_held": bool(runs.depth_not_held.any()),
            "client_bound": any_verdict(used.client_bound), "limit": runs_limit(used),
            "box_saturated": box_saturated(used),
            # the server's own CPU per job (µs; every server process the sampler saw), median (min–max)
            # over the trusted runs, and how many those are
            "server_cpu_us_per_job": cpu.median() if len(cpu) else None, "server_cpu_runs": len(cpu),
            "min_server_cpu_us_per_job": cpu.min() if len(cpu) else None,
            "max_server_cpu_us_per_job": cpu.max() if len(cpu) else None, "lost": runs.lost.sum(),
            "duplicates": runs.duplicates.sum(), "worker_busy_events": _median(used, "worker_busy_events")}


def rate_text(point, where: str = "") -> str:
    """"2,374 (2,289–2,442)", "2,015 (1 of 3 runs)", "≥ 16,900 @4 (16,600–17,300; producer-bound)":
    the median, ``where`` (e.g. "@4"), the spread of the runs behind it, how many of the recorded
    runs those are, and why a lower bound is one."""
    if pd.isna(point.jobs_per_s):
        return "—"
    notes = [f"{point.min_jobs_per_s:,.0f}–{point.max_jobs_per_s:,.0f}"] if point.runs > 1 else []
    notes += [f"{point.runs} of {point.runs_recorded} runs"] if point.runs < point.runs_recorded else []
    notes += [point.lower_bound_why] if point.lower_bound else []
    value = ("≥ " if point.lower_bound else "") + f"{point.jobs_per_s:,.0f}" + (f" {where}" if where else "")
    return value + (f" ({'; '.join(notes)})" if notes else "")


def _column(rows: pd.DataFrame, column: str) -> pd.Series:
    """``rows[column]``, or NaN throughout where the records lack it."""
    return rows[column] if column in rows else pd.Series(float("nan"), index=rows.index)


def _median(rows: pd.DataFrame, column: str) -> float | None:
    values = pd.to_numeric(rows[column], errors="coerce") if column in rows else pd.Series(dtype=float)
    return values.median() if values.notna().any() else None


def latency_table(frame: pd.DataFrame, experiment: str = "latency") -> pd.DataFrame:
    """One row per run at each offered rate: enqueue latency (from the intended start, open loop),
    the claim's own round trip, and send → claim latency (the claim's return − the message's
    scheduled send time, so a producer running behind schedule shows up in it; the ack is not).
    ``experiment`` "matched": the source studies' rates over steady windows (``plan.MATCHED``)."""
    rows = measured(frame)
    rows = rows[rows.experiment == experiment]
    if rows.empty:
        return pd.DataFrame()
    producer, consumer = by_role(ensure_class(rows))
    # Sustained means the producers kept the offered rate AND the consumers kept up with it;
    # otherwise the backlog grew and the latencies describe a queue filling up, not a rate.
    consumed = consumer.items_per_s.reindex(producer.index)
    sustained = producer.sustained.astype(bool) & (consumed >= SUSTAINED_FRACTION * producer.offered_rate)
    table = pd.DataFrame({
        "variant": producer.variant, "durability_class": producer.durability_class,
        "offered_per_s": producer.offered_rate, "achieved_per_s": producer.achieved_rate,
        "consumed_per_s": consumed, "sustained": sustained, "window_s": producer.get("duration_s"),
        # sends that started after the window: timed as enqueues, but claimed only by the untimed
        # drain, so they are missing from the send → claim percentiles (see docs/METHODOLOGY.md)
        "late_sends_pct": _late_pct(producer),
        "enqueue_p50_ms": producer.get("latency_p50_ms"), "enqueue_p99_ms": producer.get("latency_p99_ms"),
        "claim_p50_ms": consumer.get("claim_p50_ms"), "claim_p99_ms": consumer.get("claim_p99_ms"),
        **latency_names.columns(consumer), "client_bound": producer.client_bound,
        "limit": run_limits(producer),
        # server CPU µs per consumed message, the consumers' idle polls included (see resources)
        "server_cpu_us_per_job": server_cpu_us_per_job(server_pct(producer), consumed),
        "lost": producer.lost, "duplicates": producer.duplicates})
    return sort_by_class(table, ["offered_per_s", "variant"])


def server_pct(rows: pd.DataFrame) -> pd.Series:
    """The server's CPU over each run's window, % of one core: the exact counters of its CPU set
    where they were read, else the sampler's per-second median."""
    sampled = _column(rows, "server_cpu_pct")
    if "server_cores_exact" not in rows:
        return sampled
    return (pd.to_numeric(rows.server_cores_exact, errors="coerce") * 100).fillna(sampled)


def _late_pct(producer: pd.DataFrame) -> pd.Series | None:
    if "late" not in producer:
        return None
    return (100.0 * producer.late.fillna(0) / producer.ops.where(producer.ops > 0)).round(2)


def fairness_table(frame: pd.DataFrame, experiments: tuple[str, ...] = ("throughput", "latency")) -> pd.DataFrame:
    """Per variant × experiment × consumers (≥ 2): the spread of per-consumer acknowledgements,
    medians over the runs that recorded it — the cost the batched claim is said to have."""
    rows = measured(frame)
    if rows.empty or "fairness_jain" not in rows:
        return pd.DataFrame()
    rows = ensure_class(rows[(rows.role == "consumer") & rows.experiment.isin(experiments)
                             & rows.fairness_jain.notna()])
    if rows.empty:
        return pd.DataFrame()
    table = (rows.groupby(["variant", "durability_class", "experiment", "consumers", "rate"], dropna=False)
             .agg(runs=("run_id", "nunique"), fairness_jain=("fairness_jain", "median"),
                  min_jain=("fairness_jain", "min"), consumer_min_share=("consumer_min_share", "median"),
                  consumer_max_share=("consumer_max_share", "median"))
             .reset_index())
    return sort_by_class(table, ["variant", "experiment", "consumers", "rate"])


def all_tables(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every queue table of one frame of runs, by name."""
    throughput = throughput_table(frame)
    tables = {"throughput": throughput_verdicts(throughput), "steady": throughput_table(frame, "steady"),
              "latency": latency_verdicts(latency_table(frame), reach(throughput))}
    if not (matched := latency_table(frame, "matched")).empty:  # only where the matched rates were run
        tables["matched"] = latency_verdicts(matched, reach(throughput), steady=True)
    tables["resources"] = queue_health.resources_table(frame)
    tables["queue_health"] = queue_health.queue_health_table(frame)
    tables["dead_tuples"] = queue_health.dead_tuple_series(frame)
    tables["recovery_drills"] = queue_recovery.recovery_drills(frame)
    tables["recovery"] = queue_recovery.recovery_table(tables["recovery_drills"])
    tables["consumer_crash"] = queue_consumer_crash.consumer_crash_table(frame)
    tables["fairness"] = fairness_table(frame)
    if not (capacity := capacity_table_of(frame)).empty:  # only where the capacity experiment was run
        tables["capacity"] = capacity
    if not (placement := placement_table(frame)).empty:  # only where the placement check was run
        tables["placement"] = placement
    if not (bench := harness_bench_table(frame)).empty:  # only where the harness benchmark was run
        tables["harness_bench"] = bench
    return tables
