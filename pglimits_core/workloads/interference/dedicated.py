"""The dedicated side: the same tenants at the same rates, each on its own engine on the same box.

The ranked FTS query on OpenSearch (the search study's ``LuceneIndex``: its requests byte for
byte), the HNSW query on Qdrant (the vector study's adapter, ``hnsw_ef`` = the profile's
recall-0.95 ef), both open loop at the Postgres side's rates, while the queue study's Redis
reliable queue churns at the same jobs/s with the same backlog waiting. redis-benchmark cannot
pace a rate, so the churn is qload's churn mode (``QloadChurn``: compiled, open loop, one job =
LPUSH + LMOVE + LREM from one worker, latency from its intended start, as pgbench's on the
Postgres side), on the same load CPU set; its CPU is sampled on its own
(``engines.ChurnCpuSampler``). Eight Python workers did it before and took 43-90 % of the load
core the bystanders' clients share, so no level could be read against the Postgres side.

The OLTP tenant (where planned) stays on Postgres on this side too: it is the application's own
database, and the dedicated systems take the queue, the search and the vectors off it. So on
this side Postgres serves only the point lookups, and its CPU counts with the engines' as server.

What only Postgres has (vacuum, a held xmin, autovacuum off, the no-dead-tuple control) has no
window here: the dedicated side runs the baseline and churn levels only. The engines' own
background work is sampled where it is cheap (``engines``: OpenSearch merges/refreshes/GC,
Qdrant's optimizer status), Redis' INFO by its server class's sampler.

Before each repetition's first window an unrecorded open-loop load of the bystanders at their
rates (``warmup_point``, ``dedicated.warmup_window_s``) lets the JVM compile and size its heap
under the load it is then measured at: the closed-loop set-up warm-up alone left OpenSearch's
server CPU falling through the first window and its GC in the baselines only.

The three servers are planned by one set-up point each (``ready_point``: the data loaded and
checked on it), so the study starts all of them; a window point on a fleet missing one fails
with the server named.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from pglimits_core.errors import PGLimitsError
from pglimits_core.load import BackgroundLoad
from pglimits_core.load.driver import active_worker_pids
from pglimits_core.load.tools.process import ToolProcess
from pglimits_core.load.tools.qload_churn import QloadChurn
from pglimits_core.record.manifest import new_manifest
from pglimits_core.record.rundir import RunDirectory, new_run_id
from pglimits_core.samplers import SamplerSet
from pglimits_core.samplers.classify import host_frame_verdict
from pglimits_core.samplers.host import HostSampler
from pglimits_core.servers.registry import server_class
from pglimits_core.studies.runner import RecordedRun, with_cpu_check
from pglimits_core.studies.window_cpu import seen_placement
from pglimits_core.workloads.interference import engines, evidence, ops, tenants
from pglimits_core.workloads.interference.merge import merged_result, write_samplers
from pglimits_core.workloads.interference.points import (
    STUDY,
    InterferenceVariant,
    Knobs,
    churn_rates,
    warm,
)
from pglimits_core.workloads.interference.window import (
    MAX_OVERRUN_S,
    Churn,
    ChurnThread,
    Measured,
    PlacementWatch,
    WarmedLoad,
    bystander_roles,
    shifted,
    sleep_until,
)
from pglimits_core.workloads.queue.systems.qload_verbs import PlainDesign, qload_target, qload_verbs
from pglimits_core.workloads.queue.systems.registry import make_adapter
from pglimits_core.workloads.queue.systems.registry import server_for as queue_server
from pglimits_core.workloads.search.systems.registry import server_for as search_server
from pglimits_core.workloads.vectors.systems.qdrant import collection_name
from pglimits_core.workloads.vectors.systems.registry import server_for as vector_server

if TYPE_CHECKING:
    from pglimits_core.workloads.interference.bystander_capacity import BystanderRates
    from pglimits_core.workloads.interference.churn_capacity import ChurnRate

#: the dedicated engines, by tenant (each workload's registry says which server it runs on)
SYSTEMS = {"fts": "opensearch", "vector": "qdrant", "churn": "redis_reliable"}
SERVERS = {"fts": search_server(SYSTEMS["fts"]), "vector": vector_server(SYSTEMS["vector"]),
           "churn": queue_server(SYSTEMS["churn"])}
#: where the OLTP tenant runs on this side: the application's Postgres, with nothing else on it
OLTP_SERVER = "postgres"
DEDICATED_SIDE = InterferenceVariant("dedicated", "dedicated", {"server": SERVERS["fts"]})
#: the Redis churn's persistence: fsync before every reply (the Postgres churn commits with
#: synchronous_commit = on, fsync = on: class per_commit on both sides)
DURABILITY = "always"
#: jobs per LPUSH while the backlog is prefilled
PREFILL_BATCH = 1000


def endpoints(ctx: Any, oltp: bool = False) -> dict[str, Any]:
    """Each tenant's endpoint (the OLTP tenant's Postgres only where it is planned: its CPU then
    counts as server CPU); a server the fleet lacks stops the point, named."""
    missing = [server for server in SERVERS.values() if server not in ctx.endpoints]
    if missing:
        raise PGLimitsError(f"interference dedicated side: {', '.join(missing)} not running",
                            "the set-up point of that server says why (pglimits doctor)")
    found = {tenant: ctx.endpoints[server] for tenant, server in SERVERS.items()}
    if oltp and OLTP_SERVER in ctx.endpoints:
        found["oltp"] = ctx.endpoints[OLTP_SERVER]
    return found


_READY: set[tuple[str, str, Any]] = set()


def ready(tenant: str, endpoint: Any, data: tenants.Data) -> dict[str, Any]:
    """The tenant's data on its engine (loaded once per study process and server)."""
    key = (tenant, endpoint.url, data)
    if key in _READY or tenant == "churn":
        return {}
    loaded = (tenants.load_corpus_into(endpoint.url, data, SYSTEMS["fts"]) if tenant == "fts"
              else tenants.load_vectors_into(endpoint, data, SYSTEMS["vector"]))
    _READY.add(key)
    return {f"{tenant}_loaded": loaded}


def ready_point(run: Any, v: InterferenceVariant, tenant: str, knobs: Knobs, warmup_queries: int = 0,
                appendfsync: str = DURABILITY) -> dict[str, Any]:
    """Set-up point: the tenant's data on its dedicated server and ``warmup_queries`` untimed
    queries on it (or the queue checked, with its persistence)."""
    endpoint = run.ctx.endpoints[SERVERS[tenant]]
    if tenant == "churn":
        return {"backlog": reset_backlog(endpoint.url, knobs, appendfsync)}
    loaded = ready(tenant, endpoint, knobs.data)
    warm(tenant_op(tenant, endpoint, knobs), warmup_queries)
    return {**loaded, "warmup_queries": warmup_queries}


def warmup_point(run: Any, v: InterferenceVariant, knobs: Knobs, seconds: float, repetition: int,
                 bystanders: BystanderRates | None = None) -> dict[str, Any]:
    """Unrecorded: the bystanders open loop at their rates on their engines for ``seconds`` (the
    JVM compiles and sizes its heap under the load the windows then measure)."""
    knobs = bystanders.resolve(knobs) if bystanders is not None else knobs
    points = endpoints(run.ctx, bool(knobs.oltp_rate))
    for tenant in ("fts", "vector"):
        ready(tenant, points[tenant], knobs.data)
    role_list = bystander_roles(tenant_ops(points, knobs), knobs.workers)
    with BackgroundLoad(role_list, seed=run.seed + repetition, max_s=seconds + MAX_OVERRUN_S):
        time.sleep(seconds)
    return {"warmup_window_s": seconds}


def reset_backlog(url: str, knobs: Knobs, appendfsync: str = DURABILITY) -> int:
    """The Redis queue emptied, its persistence set (``appendfsync``: the queue study's option;
    ``always`` fsyncs every write before the reply, as Postgres' churn commits), ``backlog`` jobs
    waiting."""
    with make_adapter(SYSTEMS["churn"], url, appendfsync=appendfsync) as queue:
        queue.reset()
        for start in range(0, knobs.backlog, PREFILL_BATCH):
            count = min(PREFILL_BATCH, knobs.backlog - start)
            queue.enqueue([ops.job_payload(f"backlog-{start + i}", knobs.payload_bytes) for i in range(count)])
        return queue.depth()


def tenant_op(tenant: str, endpoint: Any, knobs: Knobs) -> Any:
    """A bystander's op on its dedicated engine (the search study's requests, the vector study's ef)."""
    if tenant == "fts":
        return ops.FtsQueryOp(endpoint.url, tenants.fts_queries(knobs.data), SYSTEMS["fts"], {})
    vectors_path = str(tenants.verified(knobs.data.vectors))
    return ops.VectorQueryOp(endpoint, knobs.data.index, vectors_path, knobs.vector_ef, SYSTEMS["vector"])


def tenant_ops(points: dict[str, Any], knobs: Knobs, seed: int = 0) -> list[tuple[Any, float]]:
    """The bystanders on their engines at the Postgres side's rates (the churn apart); the OLTP
    tenant on Postgres (``OLTP_SERVER``) where planned."""
    found = [(tenant_op("fts", points["fts"], knobs), knobs.fts_rate),
             (tenant_op("vector", points["vector"], knobs), knobs.vector_rate)]
    if knobs.oltp_rate and knobs.data.oltp_rows and "oltp" in points:
        found.append((ops.OltpLookupOp(points["oltp"].url, tenants.OLTP_TABLE, knobs.data.oltp_rows, seed),
                      knobs.oltp_rate))
    return found


def prepare_window(ctx: Any, knobs: Knobs, appendfsync: str) -> dict[str, Any]:
    """Untimed: data on each engine, the Redis backlog reset (with its persistence), the bystanders warm."""
    points = endpoints(ctx, bool(knobs.oltp_rate))
    loaded = {k: v for tenant in ("fts", "vector") for k, v in ready(tenant, points[tenant], knobs.data).items()}
    if knobs.oltp_rate and "oltp" in points:  # its table (and the others) on the application's Postgres
        loaded |= tenants.ready(points["oltp"].url, points["oltp"], knobs.data)
    depth = reset_backlog(points["churn"].url, knobs, appendfsync)
    for op, _rate in tenant_ops(points, knobs):
        warm(op, knobs.warmup_queries)
    return {**loaded, "start_depth": depth}


def churn_load(points: dict[str, Any], churn_rate: float, churn_workers: int, window_s: float,
               seed: int, payload_bytes: int) -> QloadChurn | None:
    """The Redis churn: qload's workers running whole jobs of ``payload_bytes`` (the Postgres
    churn's size) at ``churn_rate`` jobs/s from just after t = 0 to past the window's end (whole
    seconds, as pgbench's ``-T`` on the Postgres side)."""
    if churn_rate <= 0:
        return None
    queue = PlainDesign(SYSTEMS["churn"])
    return QloadChurn(qload_verbs(queue), qload_target(points["churn"].url, queue), churn_rate, churn_workers,
                      math.ceil(window_s + 0.3), seed=seed, payload_bytes=payload_bytes)


def samplers(ctx: Any, points: dict[str, Any], knobs: Knobs, churn_pids: Any) -> list[Any]:
    """Host (client = every worker and the churn's qload, server = the engines), the churn's own
    CPU, Redis INFO, OpenSearch node stats and the Qdrant collection."""
    every = [pid for e in points.values() for pid in e.pids]
    found = [HostSampler(client_pids=lambda: active_worker_pids() + churn_pids(), server_pids=lambda: every),
             engines.ChurnCpuSampler(client_pids=churn_pids, server_pids=lambda: list(points["churn"].pids)),
             engines.OpenSearchSampler(points["fts"].url),
             engines.QdrantSampler(points["vector"].url, collection_name(knobs.data.index.tag))]
    own = server_class(SERVERS["churn"]).sampler(points["churn"], None)
    return found + ([own] if own is not None else [])


def measure(ctx: Any, role_list: list[Any], knobs: Knobs, window_s: float, seed: int,
            churn: QloadChurn | None = None) -> Measured:
    """Every tenant for ``window_s`` with the samplers on; t = 0 at the workers' common start,
    the churn started right after it."""
    points = endpoints(ctx, bool(knobs.oltp_rate))
    with tempfile.TemporaryDirectory(prefix="interference-") as scratch:
        process = ToolProcess(Path(scratch))
        def observe() -> dict[str, Any]:
            return seen_placement(ctx.placement, [pid for point in points.values() for pid in point.pids],
                                  active_worker_pids() + process.pids())

        with (SamplerSet(samplers(ctx, points, knobs, process.pids)) as sampler_set,
              WarmedLoad(role_list, knobs.warmup_s, seed=seed, max_s=window_s + MAX_OVERRUN_S) as load,
              PlacementWatch(observe, window_s) as placement):
            origin, origin_epoch = time.monotonic(), time.time()
            thread = ChurnThread(churn, process) if churn is not None else None
            if thread is not None:
                thread.start()
            sleep_until(origin + window_s)
        if thread is not None:
            thread.join(window_s + 180)
    measured = Measured(load.result, None, origin_epoch, window_s, origin_monotonic=origin, warmup_s=knobs.warmup_s,
                        placement=placement.seen)
    if thread is not None:
        took_jobs(measured, thread, origin)
    start = sampler_set.threads[0].start_time if sampler_set.threads else origin
    measured.frame = shifted(sampler_set.dataframe(), start - origin)
    measured.sampler_errors = sampler_set.errors()
    return measured


def took_jobs(measured: Measured, thread: ChurnThread, origin: float) -> None:
    """The churn's jobs on the window's axis (seconds from t = 0) and its error, in ``measured``."""
    jobs = thread.result
    measured.churn_result = jobs
    measured.churn_error = thread.error or (jobs.error if jobs is not None else None)
    if jobs is not None:
        measured.churn_samples = [(done - origin, latency) for done, latency in jobs.jobs]


def dedicated_point(run: Any, v: InterferenceVariant, mechanism: str, level: float, rates: ChurnRate,
                    window_s: float, repetition: int, knobs: Knobs, churn_workers: int,
                    appendfsync: str = DURABILITY, run_order: int | None = None,
                    level_order: str | None = None, bystanders: BystanderRates | None = None) -> RecordedRun:
    ctx = run.ctx
    churn_rate = rates.at(level)  # the Postgres side's rate at this level: the same jobs/s
    knobs = bystanders.resolve(knobs) if bystanders is not None else knobs  # the Postgres side's rates too
    params = {"experiment": mechanism, "variant": v.label, "side": "dedicated", "mechanism": mechanism,
              "level": level, "churn_rate": churn_rate, "churn_base": rates.describe(),
              "window_s": window_s, "repetition": repetition,
              "run_order": run_order, "level_order": level_order,
              "act": None, "systems": SYSTEMS, "churn_workers": churn_workers,
              "churn_client": "qload -churn: open loop (Poisson), a job = LPUSH + LMOVE + LREM", "appendfsync": appendfsync,
              **knobs.params()}
    name = f"dedicated {mechanism}:{level:g}"
    if reused := ctx.reuse(STUDY, v.system, name, params):
        return reused
    start_state = prepare_window(ctx, knobs, appendfsync)
    servers = {server: ctx.describe_now(server) for server in SERVERS.values()}
    if knobs.oltp_rate and OLTP_SERVER in ctx.endpoints:  # the OLTP tenant's Postgres, alone
        servers[OLTP_SERVER] = ctx.describe_now(OLTP_SERVER)
    manifest = new_manifest(new_run_id(STUDY, v.system, name), STUDY, v.system, name, seed=run.seed,
                            params=params, servers=servers, host=ctx.host)
    with RunDirectory.create(manifest, ctx.runs_root) as run_dir:
        points = endpoints(ctx, bool(knobs.oltp_rate))
        role_list = bystander_roles(tenant_ops(points, knobs, run.seed + repetition), knobs.workers)
        churn = churn_load(points, churn_rate, churn_workers, window_s, run.seed + repetition, knobs.payload_bytes)
        measured = measure(ctx, role_list, knobs, window_s, run.seed + repetition, churn)
        return finish(run_dir, measured, Churn("qload -churn", churn_rate, churn_workers) if churn else None,
                      {"start_state": start_state, **({"churn_tool": churn.describe()} if churn else {})})


def finish(run_dir: RunDirectory, measured: Measured, churn: Churn | None, extra: dict[str, Any]) -> RecordedRun:
    """The record: the bystanders' result with the churn's jobs as a role beside them."""
    result = merged_result(measured, churn)
    summary = run_dir.write_result(result)
    verdict = host_frame_verdict(host_rows(measured.frame, "host"), sum(r.workers for r in result.roles))
    outcome = {**extra, **window_outcome(measured, churn)}
    run_dir.manifest = run_dir.manifest.model_copy(
        update={**verdict, "placement": measured.placement, "params": {**run_dir.manifest.params, "outcome": outcome}})
    write_samplers(run_dir.path, measured.frame)
    status, error = with_cpu_check(result.status, result.error, verdict["cpu"])
    run_dir.finish(status, error)
    return RecordedRun(run_dir.final_path, summary, status, error, outcome)


def host_rows(frame: Any, sampler: str) -> Any:
    return None if frame is None or len(frame) == 0 else frame[frame["sampler"] == sampler]


def window_outcome(measured: Measured, churn: Churn | None) -> dict[str, Any]:
    """What the window showed, every statistic after the warm-up; the churn's from its jobs."""
    result, seconds = measured.bystanders, measured.window_s - measured.warmup_s
    tenants_seen = {role: evidence.bystander_stats(result, role) for role in evidence.ran(result, evidence.BYSTANDERS)}
    series = {role: s[s.index < measured.window_s] for role in tenants_seen
              if len(s := evidence.bystander_series(result, role))}
    jobs = evidence.churn_in_window(measured.churn_samples, measured.window_s, measured.warmup_s)
    if churn is not None:
        tenants_seen["churn"] = evidence.sample_stats(jobs.latency_us.to_numpy())
        series["churn"] = evidence.churn_series(evidence.churn_in_window(measured.churn_samples, measured.window_s))
    churn_cpu = host_frame_verdict(host_rows(measured.frame, "churn_host"), 1)["cpu"]
    reported = getattr(measured.churn_result, "reported", None) or {}
    return {"tenants": tenants_seen, "events": {}, "sampler_errors": measured.sampler_errors,
            "churn": churn_rates(churn.jobs_per_s if churn else 0, len(jobs) / seconds,
                                 client_cpu_pct=churn_cpu.get("client_cpu_pct_median"),
                                 queue_server_cpu_pct=churn_cpu.get("server_cpu_pct_median"),
                                 failed=int(reported.get("errors") or 0), error=measured.churn_error),
            "vacuum": {"windows_source": "none: the dedicated engines have no vacuum", "cycles": None,
                       "long_enough": None, "windows": []},
            "background": engines.background_summary(measured.frame),
            "alignment": {},
            "warmup_s": measured.warmup_s,
            "series": evidence.compact(series, pd.Series(dtype=float), measured.window_s)}
