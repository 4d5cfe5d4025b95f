"""One measured window: every tenant at once on the one Postgres, with the samplers watching.

Order, so that every series shares one clock (``t`` = 0 at the bystanders' common start):
samplers on (host CPU split, pg_stat, the per-second vacuum sampler) -> the bystanders'
open-loop workers start (``BackgroundLoad``: ``start()`` returns at their common start, which
becomes t = 0) -> the churn's pgbench starts (a few hundred ms later; its log's epoch stamps are
put on the same axis) -> the act, if any (held xmin, autovacuum off), at its planned second ->
the window ends: bystanders stopped, pgbench ends at its next whole second (``-T``), samplers
off. The server log's autovacuum lines written meanwhile are kept for the exact vacuum windows.
"""

from __future__ import annotations

import math
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pglimits_core.load import BackgroundLoad, OpenLoop, Phase, Role
from pglimits_core.load.driver import active_worker_pids
from pglimits_core.load.tools import PgbenchLoad
from pglimits_core.load.tools.pgbench import read_logs
from pglimits_core.load.tools.process import ToolProcess
from pglimits_core.record.results import RunResult
from pglimits_core.samplers import SamplerSet
from pglimits_core.samplers.vacuum import ServerLogTail, VacuumSampler, server_log_path
from pglimits_core.studies.runner import samplers_for
from pglimits_core.studies.window_cpu import seen_placement

SERVER = "postgres"
#: seconds the bystanders may run past the window before BackgroundLoad stops them on its own
MAX_OVERRUN_S = 120.0


@dataclass
class Churn:
    """The churn's pgbench: ``script`` at ``rate`` transactions/s over ``clients``, ``batch``
    jobs each (1 but under the ``batch_claim`` mitigation)."""

    script: str
    rate: float
    clients: int
    op: str = "job"
    batch: int = 1

    @property
    def jobs_per_s(self) -> float:
        """The offered rate in jobs (what every level and table states)."""
        return self.rate * self.batch


def per_job(samples: list[tuple[int, int]], batch: int) -> list[tuple[int, int]]:
    """pgbench's transactions as jobs: each of a transaction's ``batch`` jobs was enqueued,
    claimed and acked by it, so each has its completion time and latency."""
    return samples if batch == 1 else [sample for sample in samples for _ in range(batch)]


@dataclass
class Measured:
    """What one window produced, every time on the window's axis (seconds from t = 0)."""

    bystanders: RunResult
    frame: Any  # the samplers' rows, t shifted onto the window's axis
    origin_epoch_s: float
    window_s: float
    events: dict[str, float] = field(default_factory=dict)
    churn_result: Any = None  # pgbench's own RunResult (its summary, its errors)
    churn_samples: list[tuple[float, int]] = field(default_factory=list)  # (done s, latency µs)
    churn_failed: int = 0
    churn_error: str | None = None
    origin_monotonic: float = 0.0
    churn_tool: dict[str, Any] = field(default_factory=dict)  # pgbench's command line and script
    log_text: str = ""
    #: the server log could be read (an empty text then means: no autovacuum ran)
    log_readable: bool = False
    sampler_errors: dict[str, int] = field(default_factory=dict)
    #: the first seconds of the window, their own phase: left out of every statistic
    warmup_s: float = 0.0
    #: the placement as configured and as the window's processes had it (read ~2 s in)
    placement: dict[str, Any] = field(default_factory=dict)


#: the bystanders' phase before ``PHASE`` (recorded, left out of the summary and the histograms)
WARMUP = "warmup"


class WarmedLoad(BackgroundLoad):
    """``BackgroundLoad`` whose first ``warmup_s`` seconds are a phase of their own: the
    ``load`` phase's histograms and summary then start after the start-up transient (the first
    second's p99 was 2.5x the rest of the window on the shared Postgres)."""

    def __init__(self, roles: list[Role], warmup_s: float, **options: Any):
        super().__init__(roles, **options)
        self.warmup_s = warmup_s
        if warmup_s > 0:
            self.spec = replace(self.spec, phases=[Phase(WARMUP, warmup_s, warmup=True), *self.spec.phases])

    def _ran_phases(self) -> list:
        """Each phase as long as it really ran: the warm-up, then the rest until the stop."""
        if self._started is None:
            return self.spec.phase_infos()
        elapsed, offset, ran = time.monotonic() - self._started, 0.0, []
        for info in self.spec.phase_infos():
            ran.append(replace(info, duration_s=round(max(0.0, min(info.duration_s, elapsed - offset)), 3)))
            offset += info.duration_s
        return ran


def log_tail(ctx: Any, server: str = SERVER) -> ServerLogTail | None:
    """A project server's log from now on (None for a server whose log is not ours to read)."""
    try:
        return ServerLogTail(server_log_path(ctx.servers.get(server) or ctx.endpoints[server]))
    except (KeyError, AttributeError, OSError):
        return None


class ChurnThread(threading.Thread):
    """pgbench in its own thread (``ToolProcess`` blocks until it exits)."""

    def __init__(self, load: PgbenchLoad, process: ToolProcess):
        super().__init__(name="interference-churn", daemon=True)
        self.load, self.process = load, process
        self.result: Any = None
        self.error: str | None = None

    def run(self) -> None:
        try:
            self.result = self.load.run(self.process)
        except Exception as exc:  # noqa: BLE001 — reported in the record, never lost
            self.error = f"{type(exc).__name__}: {exc}"


def sleep_until(deadline: float) -> None:
    time.sleep(max(0.0, deadline - time.monotonic()))


def measure_window(ctx: Any, roles: list[Role], churn: Churn | None, window_s: float, seed: int,
                   tables: list[str], act: Callable[[float], dict[str, float]] | None = None,
                   warmup_s: float = 0.0, queue_server: str = SERVER) -> Measured:
    """Run every tenant for ``window_s`` (its first ``warmup_s`` a phase of their own);
    ``act(origin_monotonic)`` does the mechanism's act at its seconds and returns when they
    happened (seconds from t = 0). ``queue_server``: where the churn runs (the split side's own
    instance; its vacuums, dead tuples and log are the ones watched, and its processes count as
    the server's beside the bystanders' instance)."""
    endpoint, queue = ctx.endpoints[SERVER], ctx.endpoints[queue_server]
    tail = log_tail(ctx, queue_server)
    with tempfile.TemporaryDirectory(prefix="interference-") as scratch:
        process = ToolProcess(Path(scratch))
        sampler_list = [*samplers_for(SERVER, _both(endpoint, queue), tables,
                                      lambda: active_worker_pids() + process.pids()),
                        VacuumSampler(queue.url, tables=tables)]
        def observe() -> dict[str, Any]:
            return seen_placement(ctx.placement, [*endpoint.pids, *queue.pids], active_worker_pids() + process.pids())

        with SamplerSet(sampler_list) as samplers:
            measured = _run_tenants(queue.url, roles, churn, (window_s, warmup_s), seed, process, act, observe)
        sampler_start = samplers.threads[0].start_time if samplers.threads else measured.origin_monotonic
        measured.frame = shifted(samplers.dataframe(), sampler_start - measured.origin_monotonic)
        measured.sampler_errors = samplers.errors()
        if churn is not None:
            samples, measured.churn_failed = read_logs(Path(scratch))
            measured.churn_samples = on_axis(per_job(samples, churn.batch), measured.origin_epoch_s)
    measured.log_text, measured.log_readable = (tail.read(), True) if tail is not None else ("", False)
    return measured


class PlacementWatch:
    """Reads the window's placement once its tenants run (``OBSERVE_AT_S`` in, or halfway
    through a shorter window), off the measuring thread; ``seen`` stays {} if the window ended
    first."""

    OBSERVE_AT_S = 2.0

    def __init__(self, observe: Callable[[], dict[str, Any]], window_s: float):
        self.seen: dict[str, Any] = {}
        self._timer = threading.Timer(min(self.OBSERVE_AT_S, window_s / 2), self._read, args=(observe,))
        self._timer.daemon = True

    def _read(self, observe: Callable[[], dict[str, Any]]) -> None:
        try:
            self.seen = observe()
        except Exception as exc:  # noqa: BLE001 — a process gone between listing and reading
            self.seen = {"error": f"placement not read: {exc}"}

    def __enter__(self) -> PlacementWatch:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def _both(endpoint: Any, queue: Any) -> Any:
    """The bystanders' endpoint, its pids joined by the queue instance's when that is another."""
    if queue is endpoint:
        return endpoint
    return replace(endpoint, pids=(*endpoint.pids, *queue.pids))


def _run_tenants(url: str, roles: list[Role], churn: Churn | None, span: tuple[float, float], seed: int,
                 process: ToolProcess, act: Callable[[float], dict[str, float]] | None,
                 observe: Callable[[], dict[str, Any]]) -> Measured:
    """Bystanders from t = 0, the churn right after, the act, until the window ends."""
    thread, (window_s, warmup_s) = None, span
    with WarmedLoad(roles, warmup_s, seed=seed, max_s=window_s + MAX_OVERRUN_S) as load:
        origin, origin_epoch = time.monotonic(), time.time()
        if churn is not None:
            seconds = math.ceil(window_s + 0.3)  # pgbench -T: whole seconds, past the window's end
            tool = PgbenchLoad(url, churn.script, churn.clients, seconds, op=churn.op, script_name="churn.sql",
                               rate=churn.rate)
            thread = ChurnThread(tool, process)
            thread.start()
        with PlacementWatch(observe, window_s) as placement:
            events = act(origin) if act is not None else {}
            sleep_until(origin + window_s)
    if thread is not None:
        thread.join(window_s + 180)
    measured = Measured(load.result, None, origin_epoch, window_s, events, origin_monotonic=origin,
                        warmup_s=warmup_s, placement=placement.seen)
    if thread is not None:
        measured.churn_result, measured.churn_error = thread.result, thread.error
        # the churn's own command line and script in the record (the password stays in the env)
        measured.churn_tool = {**tool.describe(), "argv": tool.commands()[0].argv}
    return measured


def shifted(frame: Any, offset_s: float) -> Any:
    """The samplers' rows with ``t`` moved onto the window's axis (t = 0 at the common start)."""
    if frame is None or len(frame) == 0 or "t" not in frame:
        return frame
    frame = frame.copy()
    frame["t"] = frame["t"] + offset_s
    return frame


def on_axis(samples: list[tuple[int, int]], origin_epoch_s: float) -> list[tuple[float, int]]:
    """pgbench's ``(completion epoch µs, latency µs)`` as (seconds from t = 0, latency µs)."""
    return sorted(((done_us / 1e6 - origin_epoch_s, latency) for done_us, latency in samples))


def bystander_roles(ops: list[tuple[Any, float]], workers: int) -> list[Role]:
    """Each bystander op open loop at its rate (queries/s), ``workers`` processes each."""
    return [Role(op.name, op, workers=workers, loop=OpenLoop(rate=rate, arrival="poisson", drain_s=2.0))
            for op, rate in ops]
