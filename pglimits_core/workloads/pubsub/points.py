"""Pub/sub study recipes: fan-out at rising open-loop rates and flat out (the capacity experiment's
points too), commit serialization of NOTIFY, idle listeners, a stuck subscriber, the largest payload.

Every point is one recorded load run on a fresh channel (a new name per point: nothing of an
earlier point can arrive): ``subscribers`` receiving workers and ``publishers`` publishing
workers of the driver, subscribers listening before the common start. Phases: warm-up and the
measured window; after it each subscriber reads on until the channel is quiet (publishers late
on their schedule finish meanwhile) — no idle tail phase, so the run's CPU samples are those of
the load, which the client-bound verdict reads. Accounting
(``ledger.account``) and delivery latency go into the record's ``params.outcome``.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pglimits_core.config import data_dir
from pglimits_core.load import (
    ClosedLoop,
    OpenLoop,
    Phase,
    PointResult,
    Role,
    RunSpec,
)
from pglimits_core.samplers.memory import server_memory
from pglimits_core.studies.runner import RecordedRun, run_recorded
from pglimits_core.studies.study import StudyRun
from pglimits_core.studies.variant import Variant
from pglimits_core.workloads.pubsub.ledger import account, delivery_latency, read_json
from pglimits_core.workloads.pubsub.ops import PublishOp, SubscribeOp
from pglimits_core.workloads.pubsub.systems.base import PubsubSystem
from pglimits_core.workloads.pubsub.systems.registry import (
    make_system,
    server_for,
    system_class,
    validate_options,
)

STUDY = "pubsub"
PUBLISH_DRAIN_S = 1.0  # an open-loop publisher behind its schedule may finish this long after the window


@dataclass(frozen=True)
class PubsubVariant(Variant):
    """A system and its batch: "pg_notify batch=10" = 10 notifications per transaction,
    "redis_publish batch=10" = 10 PUBLISHes per pipeline."""

    @property
    def server(self) -> str:
        return server_for(self.system)

    @property
    def batch(self) -> int:
        """Messages per publish call."""
        return self.options.get("batch", 1)

    @property
    def transactional(self) -> bool:
        """Its publishes can share a transaction with a write (the commit-serialization rows)."""
        return system_class(self.system).transactional


def variant(system: str, batch: int = 1, label: str | None = None) -> PubsubVariant:
    options = validate_options(system, {"batch": batch})
    return PubsubVariant(label or f"{system} batch={batch}", system, options)


def _scratch() -> Path:
    path = data_dir() / "scratch"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def idle_listeners(system: PubsubSystem, count: int):
    """``count`` connections listening on channels nobody publishes to, held by the study process
    for the point (they never read: idle, as in an application that listens per tenant)."""
    with ExitStack() as stack:
        for index in range(count):
            system.listen_idle(stack, f"pl_idle_{index}")
        yield


def memory_held(pids: tuple[int, ...] | list[int], idle: int) -> dict[str, Any]:
    """The server's memory with ``idle`` listeners connected and no load yet: PSS summed over its
    processes (each shared page split between its sharers: the honest total; RSS sums count
    ``shared_buffers`` once per backend) and how many processes hold it."""
    readings = server_memory(pids, with_pss=True)
    pss = [r.pss_bytes for r in readings if r.pss_bytes is not None]
    return {"idle_listeners": idle, "processes": len(readings),
            "pss_mib": round(sum(pss) / 2**20, 2) if pss and len(pss) == len(readings) else None,
            "rss_mib": round(sum(r.rss_bytes for r in readings) / 2**20, 2)}


class ServerWatch:
    """Once a second while a point runs: what the system's server holds for pub/sub (its
    ``watcher``: Postgres ``pg_notification_queue_usage()``; Redis the largest pub/sub client
    output buffer and the pub/sub clients connected) and the server's resident memory. Read by
    the study process on its own connection."""

    def __init__(self, system: PubsubSystem, every_s: float = 1.0, pids: tuple[int, ...] = ()):
        self.system, self.every_s, self.pids = system, every_s, pids
        self.samples: list[dict[str, Any]] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ServerWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            read = self.system.watcher()
            started = time.monotonic()
            while not self._stop.is_set():
                self.samples.append({"t_s": round(time.monotonic() - started, 2), **read(), **self._rss()})
                self._stop.wait(self.every_s)
        except Exception as error:  # a watcher never fails the point; its error is recorded
            self.error = f"{type(error).__name__}: {error}"

    def _rss(self) -> dict[str, float]:
        """The server's resident memory in MiB: summed over its processes (Postgres backends
        share their buffers, so the sum overcounts) and its largest process (a lower bound)."""
        rss = [reading.rss_bytes for reading in server_memory(self.pids)]
        return {"server_rss_mib": sum(rss) / 2**20, "server_rss_largest_mib": max(rss, default=0) / 2**20} if rss else {}

    def summary(self) -> dict[str, Any]:
        keys = {k for s in self.samples for k in s if k != "t_s"}
        return {"samples": self.samples, "error": self.error,
                **{k if k.startswith("max_") else f"max_{k}": max(s.get(k, 0) for s in self.samples)
                   for k in keys}}


def check_room(v: PubsubVariant, limits: dict[str, Any], connections: int) -> None:
    """A point needing more connections than its server's ``limits`` allow is not run: the
    reason (and the fix) is its failure, listed under what could not be run."""
    system_class(v.system).check_room(limits, connections)


def _phases(warmup_s: float, duration_s: float) -> list[Phase]:
    return [Phase("warmup", warmup_s, warmup=True), Phase("measure", duration_s)]


def publisher_loop(rate: float | None, batch: int) -> OpenLoop | ClosedLoop:
    """Open loop at ``rate`` messages/s (``rate / batch`` publishes/s), or flat out (None)."""
    return ClosedLoop(idle_sleep_s=0) if rate is None else OpenLoop(rate=rate / batch, drain_s=PUBLISH_DRAIN_S)


def fanout_point(run: StudyRun, v: PubsubVariant, subscribers: int, publishers: int, rate: float | None,
                 duration_s: float, warmup_s: float = 1.0, payload_bytes: int = 64, experiment: str = "fanout",
                 idle: int = 0, stall_s: float = 0.0, extra_params: dict | None = None,
                 memory: bool = False) -> RecordedRun:
    """One fan-out run: ``subscribers`` workers on one channel, ``publishers`` workers publishing
    at ``rate`` messages/s in total (None: closed loop, flat out); ``idle`` idle listeners on
    other channels; ``stall_s`` > 0: subscriber 0 stops reading that long (the stuck drill);
    ``memory``: one reading of the server's memory once the idle listeners are connected."""
    def roles(common: tuple) -> list[Role]:
        return [subscriber_role(common, subscribers, stall_s),
                Role("publisher", PublishOp(*common, batch=v.batch, payload_bytes=payload_bytes),
                     workers=publishers, loop=publisher_loop(rate, v.batch), active_phases=PUBLISHING)]

    params = {"subscribers": subscribers, "publishers": publishers, "rate": rate,
              "loop": "closed" if rate is None else "open", "payload_bytes": payload_bytes,
              "idle_listeners": idle, "stall_s": stall_s, **(extra_params or {})}
    return run_point(run, v, experiment, roles, params, duration_s, warmup_s, idle=idle, memory=memory)


PUBLISHING = ("warmup", "measure")


def subscriber_role(common: tuple, subscribers: int, stall_s: float = 0.0) -> Role:
    return Role("subscriber", SubscribeOp(*common, stall_s=stall_s), workers=subscribers,
                loop=ClosedLoop(idle_sleep_s=0), max_errors=1000 if stall_s else 0)


def run_point(run: StudyRun, v: PubsubVariant, experiment: str, roles_for, params: dict[str, Any],
              duration_s: float, warmup_s: float, idle: int = 0, after=None, memory: bool = False) -> RecordedRun:
    """One recorded run on a fresh channel: ``roles_for(common)`` builds the roles from the
    operations' shared arguments; ``after(outcome) -> dict`` adds to the accounting."""
    ctx, endpoint = run.ctx, run.ctx.endpoints[v.server]
    ledger = Path(tempfile.mkdtemp(prefix="pubsub-", dir=_scratch()))
    common = (v.system, endpoint.url, f"pl_{uuid.uuid4().hex[:12]}", str(ledger), warmup_s, duration_s)
    spec = RunSpec(phases=_phases(warmup_s, duration_s), roles=roles_for(common), seed=run.seed,
                   start_method="fork")
    params = {"experiment": experiment, "variant": v.label, "batch": v.batch, **params}
    name = f"{experiment}:{v.label}"
    try:
        reused = ctx.reuse(STUDY, v.system, name, {**params, "spec": spec.describe()})
        if reused:
            return reused
        system = make_system(v.system, endpoint.url)
        limits = system.limits()
        check_room(v, limits, idle + sum(role.workers for role in spec.roles))

        held: dict[str, Any] | None = None

        def judged(_result) -> dict[str, Any]:
            outcome = judge(ledger, duration_s, watch, limits)
            return {**outcome, **(after(outcome) if after else {}), **({"server_memory": held} if memory else {})}

        with idle_listeners(system, idle), ServerWatch(system, pids=tuple(endpoint.pids)) as watch:
            held = memory_held(endpoint.pids, idle) if memory else None
            return run_recorded(ctx, STUDY, v.system, name, v.server, spec, params, after=judged)
    finally:
        shutil.rmtree(ledger, ignore_errors=True)


def judge(ledger: Path, duration_s: float, watch: ServerWatch | None, limits: dict[str, Any]) -> dict[str, Any]:
    """The point's accounting, delivery latency and rates from the workers' ledgers."""
    publishers, subscribers = read_json(ledger, "publisher-"), read_json(ledger, "subscriber-")
    accounting = account(publishers, subscribers)
    in_window = sum(s["in_window"] for s in subscribers)
    others = [s for s in subscribers if s["subscriber"] != "s0"]
    return {**accounting, "delivery": delivery_latency(subscribers),
            "delivery_others": delivery_latency(others) if others else None,
            "published_per_s": accounting["published_in_window"] / duration_s,
            "deliveries_per_s": in_window / duration_s,
            "subscriber_errors": {s["subscriber"]: s["error"] for s in subscribers if s.get("error")},
            "disconnects": sum(s.get("disconnects", 0) for s in subscribers),
            "server_watch": watch.summary() if watch else None, "limits": limits}


def point_result(outcome: dict[str, Any], rate: float) -> PointResult:
    """Achieved = messages meant for the window delivered per subscriber per second; the
    "backlog growth" the SLO bounds is the fraction of expected deliveries lost."""
    delivery, subscribers = outcome["delivery"], max(1, outcome["subscribers"])
    ratio = outcome.get("delivered_ratio")
    return PointResult(offered=rate, achieved=outcome["deliveries_per_s"] / subscribers,
                       p50_us=_us(delivery["p50_ms"]), p99_us=_us(delivery["p99_ms"]),
                       backlog_growth=1.0 - ratio if ratio is not None else 1.0)


def _us(ms: float | None) -> float | None:
    return None if ms is None else ms * 1000
