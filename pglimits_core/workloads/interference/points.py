"""One interference point = one window = one run record, per (mechanism, level, repetition).

Before the window (untimed): the bystanders' data loaded and frozen once (``tenants.ready``), the
queue and control tables reset to ``backlog`` jobs and frozen, each bystander warmed with
``warmup_queries`` queries, ``age(relfrozenxid)`` of every table read. Then ``window.measure_window``
and the record: the bystanders' and the churn's latencies in one summary and time series (roles
``fts``, ``vector``, ``churn``, one phase ``load`` = the whole window), the samplers' per-second
rows (host CPU split, pg_stat, the vacuum sampler's columns) in ``samplers.parquet``, and the
outcome (``evidence``, ``stretches``) in the manifest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pglimits_core.record.manifest import new_manifest
from pglimits_core.record.rundir import RunDirectory, new_run_id
from pglimits_core.studies.runner import RecordedRun, cpu_verdict, with_cpu_check
from pglimits_core.studies.variant import Variant
from pglimits_core.workloads.interference import (
    acts,
    churn,
    evidence,
    ops,
    rotation,
    start_state,
    tenants,
)
from pglimits_core.workloads.interference.mechanisms import is_act, kind_of
from pglimits_core.workloads.interference.merge import merged_result, write_json, write_samplers
from pglimits_core.workloads.interference.stretches import stretches
from pglimits_core.workloads.interference.window import (
    SERVER,
    Churn,
    bystander_roles,
    measure_window,
)

if TYPE_CHECKING:
    from pglimits_core.workloads.interference.bystander_capacity import BystanderRates
    from pglimits_core.workloads.interference.churn_capacity import ChurnRate

STUDY = "interference"
#: the parsed autovacuum/auto-ANALYZE log lines of the window, beside the record
LOG_FILE = "autovacuum-log.json"


class InterferenceVariant(Variant):
    """A side of the study: ``postgres`` (every tenant on the one instance) or ``dedicated`` (each
    on its own engine; ``options["server"]`` is the server its points are planned on)."""

    @property
    def server(self) -> str:
        return self.options.get("server", SERVER)


POSTGRES_SIDE = InterferenceVariant("postgres", "postgres")
#: the split side: the bystanders on the project's Postgres, the queue on an instance of its own
SPLIT_SIDE = InterferenceVariant("split", "split", {"server": "postgres_queue"})


@dataclass(frozen=True)
class Knobs:
    """What every point of a study run shares (from the profile section)."""

    data: tenants.Data
    fts_rate: float
    vector_rate: float
    vector_ef: int
    workers: int
    warmup_queries: int
    churn_clients: int
    backlog: int
    payload_bytes: int
    min_cycles: int
    #: the rate the levels are fractions of, as stated (None: measured in the run, ``churn_capacity``)
    queue_rate: float | None = None
    #: seconds at the start of each window left out of every statistic (their own phase)
    warmup_s: float = 0.0
    #: the OLTP tenant's point lookups/s (None: no OLTP tenant; its accounts: ``data.oltp_rows``)
    oltp_rate: float | None = None

    def params(self) -> dict[str, Any]:
        return {**{k: v for k, v in vars(self).items() if k != "data"}, "data": self.data.params()}


def rotated(act: dict[str, Any] | None) -> bool:
    """The window runs the churn on the rotated, partitioned queue (``rotation``)."""
    return (act or {}).get("mitigation") == "partition_rotation"


def churn_load(mechanism: str, rate: float, knobs: Knobs, act: dict[str, Any] | None = None) -> Churn | None:
    """pgbench's script for the mechanism (the control's makes no dead tuple; a rotated window's
    runs on the partitioned queue; a batch_claim window's moves ``batch`` jobs a transaction at
    the same jobs/s); None at level 0."""
    if rate <= 0:
        return None
    if mechanism == "control":
        return Churn(churn.control_script(knobs.payload_bytes), rate, knobs.churn_clients)
    if rotated(act):
        return Churn(rotation.churn_script(knobs.payload_bytes), rate, knobs.churn_clients)
    batch = int((act or {}).get("batch", 1))  # the batch_claim mitigation: as many jobs/s, batch per transaction
    return Churn(churn.churn_script(knobs.payload_bytes, batch=batch), rate / batch, knobs.churn_clients, batch=batch)


def the_act(mechanism: str, url: str, act: dict[str, Any] | None, window_s: float):
    """The mechanism's act inside the window (None: plain churn, control or baseline), with the
    rotation beside it in a rotated window."""
    found = None
    if act is not None and is_act(mechanism):
        kind = kind_of(mechanism)
        if kind == "held_xmin":
            found = acts.hold_xmin(url, act["before_s"], act["act_s"])
        elif kind == "autovacuum_off":
            found = acts.autovacuum_off(url, act["before_s"], act["act_s"], act.get("until_dead"))
        else:
            found = acts.hold(kind, url, act["before_s"], act["act_s"], act.get("timeout_s"))
    return rotation.beside(found, url, act["period_s"], window_s) if rotated(act) else found


def prepare_run(ctx: Any, knobs: Knobs, act: dict[str, Any] | None = None,
                queue_server: str = SERVER) -> dict[str, Any]:
    """Untimed: data ready and frozen, the queue reset and settled on ``queue_server`` (statistics
    flushed, no autovacuum pending or running on it), a mitigation's queue-table ``settings`` set
    or the rotated queue reset to the backlog, bystanders warm; the tables' freeze ages, the
    queue server's autovacuum settings and the queue tables' state read last, just before t = 0."""
    import psycopg

    endpoint = ctx.endpoints[SERVER]
    loaded = tenants.ready(endpoint.url, endpoint, knobs.data)
    queue_url, watched = ctx.endpoints[queue_server].url, [*churn.QUEUE_TABLES, *rotation.PARTITIONS]
    if queue_server != SERVER:  # the bystanders' instance left as a window on it would leave it
        with psycopg.connect(endpoint.url, autocommit=True) as conn:
            reset_queues(conn, knobs, None)
            start_state.settle(conn, watched)
    with psycopg.connect(queue_url, autocommit=True) as conn:
        start = reset_queues(conn, knobs, act)
        settled = start_state.settle(conn, watched)
        ages = tenants.frozen_ages(conn, list(churn.QUEUE_TABLES))
    with psycopg.connect(endpoint.url, autocommit=True) as conn:
        ages |= tenants.frozen_ages(conn, tenants.bystander_tables(knobs.data))
    for op, _rate in bystander_ops(ctx, knobs):
        warm(op, knobs.warmup_queries)
    with psycopg.connect(queue_url, autocommit=True) as conn:
        state = {"tables_at_t0": start_state.table_state(conn, list(churn.QUEUE_TABLES)),
                 "autovacuum_settings": start_state.autovacuum_settings(conn),
                 "queue_reloptions": churn.queue_options(conn)}
    return {**loaded, "start_depth": start["depth"], "relfrozenxid_age": ages, **settled, **state,
            "queue_server": queue_server}


def reset_queues(conn: Any, knobs: Knobs, act: dict[str, Any] | None) -> dict[str, int]:
    """The queue and control tables reset (a mitigation's settings on the queue), and the rotated
    queue reset for a rotated window or emptied for any other."""
    start = churn.reset_queue(conn, knobs.backlog, knobs.payload_bytes)
    if (act or {}).get("settings"):
        churn.set_queue_options(conn, act["settings"])
    if rotated(act):
        return rotation.reset(conn, knobs.backlog, knobs.payload_bytes)
    rotation.clear(conn)
    return start


def bystander_ops(ctx: Any, knobs: Knobs, seed: int = 0) -> list[tuple[Any, float]]:
    """Each bystander's op and rate: FTS, vectors and, where planned, the OLTP tenant."""
    endpoint = ctx.endpoints[SERVER]
    vectors_path = str(tenants.verified(knobs.data.vectors))
    found = [(ops.FtsQueryOp(endpoint.url, tenants.fts_queries(knobs.data)), knobs.fts_rate),
             (ops.VectorQueryOp(endpoint, knobs.data.index, vectors_path, knobs.vector_ef), knobs.vector_rate)]
    if knobs.oltp_rate and knobs.data.oltp_rows:
        found.append((ops.OltpLookupOp(endpoint.url, tenants.OLTP_TABLE, knobs.data.oltp_rows, seed), knobs.oltp_rate))
    return found


def warm(op: Any, queries: int) -> None:
    """``queries`` untimed calls on one connection of the op (buffers hold what it reads)."""
    op.open()
    try:
        for _ in range(queries):
            op()
    finally:
        op.close()


def interference_point(run: Any, v: InterferenceVariant, mechanism: str, level: float, rates: ChurnRate,
                       window_s: float, repetition: int, knobs: Knobs,
                       act: dict[str, Any] | None = None, run_order: int | None = None,
                       level_order: str | None = None, bystanders: BystanderRates | None = None) -> RecordedRun:
    ctx = run.ctx
    churn_rate = rates.at(level)
    knobs = bystanders.resolve(knobs) if bystanders is not None else knobs
    params = {"experiment": mechanism, "variant": v.label, "side": v.label, "mechanism": mechanism, "level": level,
              "churn_rate": churn_rate, "churn_base": rates.describe(), "window_s": window_s,
              "repetition": repetition, "act": act,
              "run_order": run_order, "level_order": level_order, **knobs.params()}
    name = f"{mechanism}:{level:g}"
    if reused := ctx.reuse(STUDY, v.system, name, params):
        return reused
    start_state = prepare_run(ctx, knobs, act, v.server)
    description = ctx.describe_now(SERVER)
    servers = {SERVER: description, **({v.server: ctx.describe_now(v.server)} if v.server != SERVER else {})}
    manifest = new_manifest(new_run_id(STUDY, v.system, name), STUDY, v.system, name, seed=run.seed,
                            params=params, servers=servers, host=ctx.host,
                            tuning_ledger=description.get("settings", {}).get("tuning_ledger", []),
                            harness_ceiling=ctx.ceilings.get(SERVER, {}))
    with RunDirectory.create(manifest, ctx.runs_root) as run_dir:
        load = churn_load(mechanism, churn_rate, knobs, act)
        roles = bystander_roles(bystander_ops(ctx, knobs, run.seed + repetition), knobs.workers)
        measured = measure_window(ctx, roles, load, window_s, run.seed + repetition, sampled_tables(knobs, act),
                                  the_act(mechanism, ctx.endpoints[v.server].url, act, window_s), knobs.warmup_s,
                                  queue_server=v.server)
        tool = {"churn_tool": measured.churn_tool} if measured.churn_tool else {}
        return finish(run_dir, measured, load, knobs, {"start_state": start_state, **tool}, run.seed + repetition)


def sampled_tables(knobs: Knobs, act: dict[str, Any] | None = None) -> list[str]:
    partitions = list(rotation.PARTITIONS) if rotated(act) else []
    return [*churn.QUEUE_TABLES, *partitions, *tenants.bystander_tables(knobs.data)]


def finish(run_dir: RunDirectory, measured: Any, load: Churn | None, knobs: Knobs, extra: dict[str, Any],
           seed: int) -> RecordedRun:
    """Summary, time series, samplers, outcome and status of one window."""
    result = merged_result(measured, load)
    summary = run_dir.write_result(result)
    workers = sum(role.workers for role in result.roles)
    verdict = cpu_verdict(SERVER, measured.frame, workers)
    outcome = {**extra, **window_outcome(measured, load, knobs, seed)}
    run_dir.manifest = run_dir.manifest.model_copy(
        update={**verdict, "placement": measured.placement, "params": {**run_dir.manifest.params, "outcome": outcome}})
    write_samplers(run_dir.path, measured.frame)
    write_json(run_dir.path, LOG_FILE, evidence.log_entries(measured))
    status, error = with_cpu_check(result.status, result.error, verdict["cpu"])
    if problem := act_problem(measured.events):
        status, error = "failed", "; ".join(e for e in (error, problem) if e)
    run_dir.finish(status, error)
    return RecordedRun(run_dir.final_path, summary, status, error, outcome)


def act_problem(events: dict[str, Any]) -> str | None:
    """An act that was not undone fails the run: the next runs would start from another state."""
    if events.get("holder_gone") is False:
        return f"the {events.get('holder_kind', 'held-xmin')} session was still there after the act"
    if events.get("autovacuum_restored") is False:
        return "autovacuum_enabled was still off on the queue table after the act"
    if (events.get("rotation") or {}).get("error"):
        return f"the partition rotation failed: {events['rotation']['error']}"
    return None


#: a churn level holds when the queue completed at least this share of the offered jobs/s in the
#: window; below it the queue built a backlog of its own: its latency is that backlog's
SUSTAINED_SHARE = 0.95


def churn_rates(offered: float, achieved: float, **extra: Any) -> dict[str, Any]:
    """Offered vs completed jobs/s and whether the window sustained the offered rate. The offered
    rate is rounded as the achieved one: a batched churn's (its transactions/s × jobs a
    transaction) must read as the same rate as the plain churn's, not 459.20000000000005."""
    offered = None if offered is None else round(offered, 2)
    return {"offered_per_s": offered, "jobs_per_s": round(achieved, 2),
            "sustained": None if not offered else bool(achieved >= SUSTAINED_SHARE * offered), **extra}


def batched(load: Churn | None, jobs_per_s: float) -> dict[str, Any]:
    """Under batch claims, the churn's transactions beside its jobs (the record's summary and
    histograms count jobs: each of a transaction's ``batch`` jobs has its latency)."""
    if load is None or load.batch == 1:
        return {}
    return {"batch": load.batch, "transactions_per_s": round(jobs_per_s / load.batch, 2)}


def vacuum_outcome(spans: list[dict[str, Any]], source: str, knobs: Knobs) -> dict[str, Any]:
    """The maintenance spans (table, kind, sub-second start/end) and the queue's cycle count."""
    cycles = evidence.vacuum_cycles(spans, knobs.warmup_s)
    queue = [s for s in spans if s["table"] in evidence.JOB_TABLES]
    return {"windows_source": source, "cycles": cycles, "long_enough": cycles >= knobs.min_cycles, "spans": spans,
            "windows": [[s["start_s"], s["end_s"]] for s in queue if s["kind"] != "analyze"],
            "analyze_windows": [[s["start_s"], s["end_s"]] for s in queue if s["kind"] == "analyze"]}


def window_outcome(measured: Any, load: Churn | None, knobs: Knobs, seed: int) -> dict[str, Any]:
    """What the window showed, every statistic after the warm-up (``seed``: kept in the record)."""
    series = evidence.tenant_series(measured)
    dead = evidence.dead_series(measured.frame)
    spans, source = evidence.maintenance_spans(measured)
    claims = evidence.churn_in_window(measured.churn_samples, measured.window_s, knobs.warmup_s)
    tenants_seen = {role: evidence.bystander_stats(measured.bystanders, role)
                    for role in evidence.ran(measured.bystanders, evidence.BYSTANDERS)}
    if load is not None:
        tenants_seen["churn"] = evidence.sample_stats(claims.latency_us.to_numpy())
    return {"tenants": tenants_seen, "events": measured.events, "sampler_errors": measured.sampler_errors,
            "warmup_s": knobs.warmup_s, "seed": seed,
            "churn": churn_rates(load.jobs_per_s if load else 0, len(claims) / (measured.window_s - knobs.warmup_s),
                                 failed=measured.churn_failed, error=measured.churn_error,
                                 **batched(load, len(claims) / (measured.window_s - knobs.warmup_s))),
            "vacuum": vacuum_outcome(spans, source, knobs),
            "alignment": {role: evidence.alignment(s, spans, knobs.warmup_s) for role, s in series.items()},
            "series": evidence.compact(series, dead, measured.window_s, evidence.server_series(measured.frame)),
            **stretches(measured, series, dead)}
