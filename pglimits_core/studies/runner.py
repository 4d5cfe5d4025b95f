"""Run one load spec as a recorded experiment: samplers on, run record written, verdicts filled.

Every study point goes through ``run_recorded`` so every run directory carries the same
evidence: server descriptions and tuning ledgers, host facts, harness ceiling, client/server
CPU and the study process's own (``samplers.host.study_process``), the client-bound verdict and
the per-second sampler series (``samplers.parquet``). A run whose client + server CPU exceeds
what the box has is recorded as failed.

The CPU figures cover the load's measured window only (``samplers.classify.measured_rows``):
the harness's ``run_load`` says when its measured phases ran, and a tool run's window is its
commands' time line (``tool_window``). ``samplers.parquet`` keeps every second of the run, and
the manifest's ``cpu.window_t_s`` places the window on its ``t`` axis.

Host facts (the fsync probe, each harness ceiling) carry ``measured_at`` (UTC); a study
measures them again as it ends (``closing_host_facts``, into its outcome file).
"""

from __future__ import annotations

import io
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pglimits_core.load import RunSpec, run_load
from pglimits_core.load.driver import active_worker_pids
from pglimits_core.placement import in_force
from pglimits_core.record.manifest import new_manifest, utc_now_iso
from pglimits_core.record.results import measured_window
from pglimits_core.record.rundir import RunDirectory, atomic_write_bytes, new_run_id
from pglimits_core.record.summary import Summary
from pglimits_core.samplers import HostSampler, SamplerSet
from pglimits_core.samplers.classify import cpu_sum_error, host_frame_verdict, window_verdict
from pglimits_core.servers.base import Endpoint
from pglimits_core.servers.registry import server_class
from pglimits_core.studies import window_cpu
from pglimits_core.studies.timing import stopwatch


@dataclass
class Context:
    """What every run of a study shares: endpoints, their descriptions, ceilings, host facts."""

    endpoints: dict[str, Endpoint]
    descriptions: dict[str, dict[str, Any]]
    host: dict[str, Any]
    ceilings: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs_root: Path | None = None
    ceiling_s: float = 1.5  # how long each harness ceiling runs (the profile's harness_ceiling_s)
    done: Any = None  # a resume.DoneRuns when resuming: complete records reused, not re-measured
    servers: dict[str, Any] = field(default_factory=dict)  # the started Server objects, by name
    #: where the servers and the load run (``placement.Placement.describe()``); every record says it
    placement: dict[str, Any] = field(default_factory=lambda: in_force().describe())

    def describe_now(self, server: str) -> dict[str, Any]:
        """The server's description as it runs *now*: a variant may change runtime settings
        (Redis persistence by CONFIG SET), so a record must not carry the start-up description.
        Every server of the fleet (started or attached) is asked again at each point."""
        if server in self.servers:
            self.descriptions[server] = self.servers[server].describe()
        return self.descriptions.get(server, {})

    def reuse(self, study: str, system: str, variant: str, params: dict[str, Any]) -> RecordedRun | None:
        """The record of this exact point from an interrupted run, if resuming and one is left."""
        return self.done.take(study, system, variant, params) if self.done else None


@dataclass
class RecordedRun:
    path: Path
    summary: Summary | None
    status: str
    error: str | None
    extra: dict[str, Any]
    load_s: float | None = None  # seconds the load driver or C tool ran (studies.timing)


def open_record(ctx: Context, study: str, system: str, server: str, name: str, params: dict[str, Any],
                seed: int, description: dict[str, Any] | None = None) -> RunDirectory:
    """A run record for a point no load driver runs (a build, a crash or backup drill): the
    manifest with the server's description (``describe_now`` unless given), tuning ledger and
    harness ceiling, as a load run's has."""
    description = ctx.describe_now(server) if description is None else description
    manifest = new_manifest(new_run_id(study, system, name), study, system, name, seed=seed,
                            params=params, servers={server: description}, host=ctx.host,
                            tuning_ledger=description.get("settings", {}).get("tuning_ledger", []),
                            harness_ceiling=ctx.ceilings.get(server, {}), placement=ctx.placement)
    return RunDirectory.create(manifest, ctx.runs_root)


def samplers_for(server: str, endpoint: Endpoint, tables: list[str] | None,
                 client_pids: Any = active_worker_pids) -> list[Any]:
    """The host sampler (client = the load workers only, or ``client_pids()``; server = its
    pids and their children) plus the server kind's own sampler, if its class has one."""
    host = HostSampler(client_pids=client_pids, server_pids=lambda: list(endpoint.pids))
    own = server_class(server).sampler(endpoint, tables)
    return [host, own] if own is not None else [host]


def run_recorded(ctx: Context, study: str, system: str, variant: str, server: str, spec: RunSpec,
                 params: dict[str, Any], tables: list[str] | None = None,
                 after: Any = None) -> RecordedRun:
    """Run ``spec`` with samplers; ``after(result) -> dict`` adds study facts (accounting...)."""
    description = ctx.describe_now(server)
    manifest = new_manifest(
        new_run_id(study, system, variant), study, system, variant, seed=spec.seed,
        params={**params, "spec": spec.describe()}, servers={server: description},
        tuning_ledger=description.get("settings", {}).get("tuning_ledger", []),
        host=ctx.host, harness_ceiling=ctx.ceilings.get(server, {}), placement=ctx.placement)
    endpoint = ctx.endpoints[server]
    exact, on_start = window_cpu.for_harness(ctx.placement, lambda: endpoint.pids, active_worker_pids, spec)
    with RunDirectory.create(manifest, ctx.runs_root) as run_dir:
        with SamplerSet(samplers_for(server, endpoint, tables)) as samplers, stopwatch() as loaded:
            result = run_load(spec, on_start=on_start)
        frame = samplers.dataframe()
        extra = after(result) if after else {}
        summary = run_dir.write_result(result)
        workers = sum(role.workers for role in spec.roles)
        verdict = cpu_verdict(server, frame, workers, on_sampler_clock(result.window_monotonic_s, samplers))
        verdict |= window_cpu.manifest_update(verdict["cpu"], exact.evidence(server))
        update = {**verdict, "params": {**run_dir.manifest.params, "outcome": extra}}
        run_dir.manifest = run_dir.manifest.model_copy(update=update)
        _write_samplers(run_dir.path, frame)
        status, error = with_cpu_check(result.status, result.error, verdict["cpu"])
        run_dir.finish(status, error)
    return RecordedRun(run_dir.final_path, summary, status, error, extra, loaded["s"])


def run_tool_recorded(ctx: Context, study: str, system: str, variant: str, server: str, load: Any,
                      params: dict[str, Any], seed: int | None = None, tables: list[str] | None = None,
                      after: Any = None) -> RecordedRun:
    """``run_recorded`` for a point driven by the system's own C load tool (``load.tools``): the
    same manifest, samplers, CPU verdict and check, with the tool's processes as the client
    side; the manifest's params say ``tool``, ``tool_version`` and every command line as run
    (``load.describe()``), and ``client_versions`` carries the tool's version."""
    from pglimits_core.load.tools import ToolProcess
    from pglimits_core.record.manifest import client_library_versions

    description = ctx.describe_now(server)
    manifest = new_manifest(
        new_run_id(study, system, variant), study, system, variant, seed=seed,
        params={**params, **load.describe()}, servers={server: description},
        tuning_ledger=description.get("settings", {}).get("tuning_ledger", []), host=ctx.host,
        harness_ceiling=ctx.ceilings.get(server, {}), placement=ctx.placement,
        client_versions={**client_library_versions(), load.tool: load.version})
    with RunDirectory.create(manifest, ctx.runs_root) as run_dir, \
            tempfile.TemporaryDirectory(prefix=f"{load.tool}-") as scratch:
        process = ToolProcess(Path(scratch))
        spans = time_commands(process)
        endpoint = ctx.endpoints[server]
        exact = window_cpu.for_tool(ctx.placement, lambda: endpoint.pids, process, load)
        with SamplerSet(samplers_for(server, endpoint, tables, process.pids)) as samplers, \
                stopwatch() as loaded:
            result = load.run(process)
        extra = after(result) if after else {}
        window = on_sampler_clock(tool_window(result.phases, spans), samplers)
        recorded = _finish_tool_run(run_dir, server, samplers.dataframe(), result, extra, load.client_cores, window,
                                    exact.evidence(server))
        recorded.load_s = loaded["s"]
        return recorded


def _finish_tool_run(run_dir: RunDirectory, server: str, frame: Any, result: Any, extra: dict[str, Any],
                     client_cores: int, window_t_s: tuple[float, float] | None,
                     evidence: dict[str, Any]) -> RecordedRun:
    """Summary, verdict, samplers and status of a tool run; ``extra`` may fail it (``error``)."""
    summary = run_dir.write_result(result)
    verdict = unseen_client(cpu_verdict(server, frame, client_cores, window_t_s))
    verdict |= window_cpu.manifest_update(verdict["cpu"], evidence)
    update = {**verdict, "params": {**run_dir.manifest.params, "outcome": extra}}
    run_dir.manifest = run_dir.manifest.model_copy(update=update)
    _write_samplers(run_dir.path, frame)
    status, error = with_cpu_check(result.status, result.error, verdict["cpu"])
    if extra.get("error"):  # the point's own check (e.g. the queue ran dry): the figures are wrong
        status, error = "failed", "; ".join(e for e in (error, extra["error"]) if e)
    run_dir.finish(status, error)
    return RecordedRun(run_dir.final_path, summary, status, error, extra)


UNSEEN_CLIENT = ("cannot tell: the tool's commands ended between the sampler's one-second readings, "
                 "so its client CPU was not measured")


def unseen_client(verdict: dict[str, Any]) -> dict[str, Any]:
    """A tool whose every command ran shorter than the sampler's interval shows 0 % client CPU:
    that is not a measurement, so no client-bound verdict is drawn from it. A run without a
    server median (no samples, a window too short) keeps the reason that says why."""
    cpu = verdict.get("cpu", {})
    if cpu.get("client_cpu_pct_median") or cpu.get("server_cpu_pct_median") is None:
        return verdict
    return {**verdict, "client_bound": None, "client_bound_reason": UNSEEN_CLIENT}


#: ``cpu_verdict``'s default: the caller's frame is its measured window already (a study that
#: cuts its own windows, e.g. interference), so every row counts
FRAME_IS_WINDOW: Any = object()


def cpu_verdict(server: str, frame: Any, workers: int, window_t_s: Any = FRAME_IS_WINDOW) -> dict[str, Any]:
    """``host_frame_verdict`` with the server kind's own CPU facts (its core ceiling, whether
    its engine runs inside the client), read from its registered server class, over the rows
    of the measured window ``window_t_s`` (``window_verdict``; None: the window is not known)."""
    kind = server_class(server)
    facts = {"server_cores": kind.cpu_ceiling_cores, "engine_in_client": kind.engine_in_client}
    if window_t_s is FRAME_IS_WINDOW:
        return host_frame_verdict(frame, workers, **facts)
    return window_verdict(frame, window_t_s, workers, **facts)


def on_sampler_clock(window_monotonic_s: tuple[float, float] | None, samplers: SamplerSet) -> tuple[float, float] | None:
    """A window on the ``time.monotonic()`` clock as seconds on the samplers' ``t`` axis (since
    the set started); None when either is unknown."""
    origins = [t.start_time for t in samplers.threads if t.start_time is not None]
    if window_monotonic_s is None or not origins:
        return None
    return window_monotonic_s[0] - min(origins), window_monotonic_s[1] - min(origins)


def time_commands(process: Any) -> list[tuple[float, float]]:
    """Wraps ``process.run`` so each command's [start, end] (``time.monotonic()``) is noted in
    the list returned, in the order they ran: a tool's result has no clock of its own."""
    spans: list[tuple[float, float]] = []
    run = process.run

    def timed(command: Any) -> Any:
        began = time.monotonic()
        try:
            return run(command)
        finally:
            spans.append((began, time.monotonic()))

    process.run = timed
    return spans


def tool_window(phases: list[Any], spans: list[tuple[float, float]]) -> tuple[float, float] | None:
    """The measured window of a tool run: its phases (warm-up first) from the first command's
    start, cut where the load commands ended. A command that starts after the phases' time is
    up is not load (vegeta's ``encode`` of the results); pgbench's connection time before its
    first transaction shifts its phases later, so the window errs inside the load."""
    if not spans:
        return None
    begin = spans[0][0]
    time_up = begin + sum(phase.duration_s for phase in phases)
    ended = max((end for start, end in spans if start < time_up), default=spans[0][1])
    return measured_window(phases, begin, ended)


def with_cpu_check(status: str, error: str | None, cpu: dict[str, Any]) -> tuple[str, str | None]:
    """The run's ``(status, error)`` after the sampler check: CPU figures the box cannot have
    produced fail the run, because every CPU-based conclusion drawn from it would be wrong."""
    problem = cpu_sum_error(cpu)
    if problem is None:
        return status, error
    return "failed", "; ".join(e for e in (error, problem) if e)


def _write_samplers(path: Path, frame: Any) -> None:
    if frame is None or len(frame) == 0:
        return
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    atomic_write_bytes(path / "samplers.parquet", buffer.getvalue())


def build_context(fleet: Any, ceilings: bool = True, runs_root: Path | None = None,
                  ceiling_s: float = 1.5) -> Context:
    """Describe every running server, the host (with fsync latency) and each harness ceiling
    (``ceiling_s`` long); both measured facts say when (``measured_at``, UTC), as
    ``closing_host_facts``'s do."""
    from pglimits_core.samplers import describe_host

    host = describe_host(data_dir_path := (runs_root or _default_runs()))
    host["fsync_8k"] = timed_fsync(data_dir_path)
    ceilings_by_server = measure_ceilings(fleet.endpoints, duration_s=ceiling_s) if ceilings else {}
    return Context(dict(fleet.endpoints), fleet.describe(), host, ceilings_by_server, runs_root,
                   ceiling_s=ceiling_s, servers=dict(getattr(fleet, "servers", {})))


def timed_fsync(path: Path) -> dict[str, Any]:
    """The 8 kB fsync probe, stamped with when it ran."""
    from pglimits_core.samplers import measure_fsync_latency

    began = utc_now_iso()
    return {**measure_fsync_latency(path, n=200), "measured_at": began}


def measure_ceilings(endpoints: dict[str, Endpoint], tolerant: bool = False,
                     duration_s: float = 1.5) -> dict[str, dict[str, Any]]:
    """Each server's harness ceiling (``calibration.harness_ceiling``), stamped with when it ran.
    ``tolerant``: a server that cannot be measured (it died) gets ``{"error": ...}`` instead of
    raising — a study's closing measurement must not lose the study."""
    from pglimits_core.studies.calibration import harness_ceiling

    ceilings = {}
    for name, endpoint in endpoints.items():
        began = utc_now_iso()
        try:
            ceilings[name] = {**harness_ceiling(name, endpoint.url, workers=1, duration_s=duration_s),
                              "measured_at": began}
        except Exception as exc:
            if not tolerant:
                raise
            ceilings[name] = {"error": f"{type(exc).__name__}: {exc}", "measured_at": began}
    return ceilings


def closing_host_facts(ctx: Context) -> dict[str, Any]:
    """The host facts of ``build_context`` measured again as a study ends, beside the ones
    measured as it began (``{"start": ..., "end": ...}``, each stamped): the start's were taken
    in one moment of the box and quoted as the box's; two that disagree show it was disturbed."""
    start = {"fsync_8k": ctx.host.get("fsync_8k"), "harness_ceiling": ctx.ceilings}
    measured = {name: ctx.endpoints[name] for name in ctx.ceilings if name in ctx.endpoints}
    end = {"fsync_8k": timed_fsync(ctx.runs_root or _default_runs()),
           "harness_ceiling": measure_ceilings(measured, tolerant=True, duration_s=ctx.ceiling_s)}
    return {"start": start, "end": end}


def _default_runs() -> Path:
    from pglimits_core.config import runs_dir

    path = runs_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path
