"""Crash-recovery drill (seed 000's "Crash recovery" paragraph and Finding 3).

Per variant: empty the queue (which also applies the variant's persistence, e.g. Redis' AOF);
for Postgres, CHECKPOINT, so the WAL that crash recovery replays is the load's alone. A
producer (a ``load.BackgroundLoad`` worker process with its own adapter and connection)
enqueues one message at a time at the drill's offered rate (an open loop), the same for every
system, and appends each id to its ledger only after ``enqueue`` returned, i.e. after the
system acknowledged it (``ops.EnqueueOp``); a system that cannot keep up is recorded with the
rate it confirmed; its first failed enqueue (the server killed under it) ends it. After
``load_s`` the drill SIGKILLs the server (Postgres, Redis: the whole process tree) or, for
SQLite, the process holding the database (the producer itself — SQLite has no server). It then
restarts the same server object on the same data, with the settings the variant ran
(``Server.pin_runtime_settings``), and polls a claim every few ms until the queue answers;
finally it drains everything and counts confirmed ids that did not survive (acknowledged
messages lost).

What this drill can and cannot show: a SIGKILL ends processes, not the machine, so the OS page
cache survives it. Whatever a system wrote to the kernel before acknowledging survives whether
or not it was ever fsynced, so "0 lost" cannot separate the durability classes (fsync per
commit / periodic / none): SQLite synchronous=OFF loses nothing here either. Only an OS crash
or a power loss would separate them. The drill does catch acknowledged writes that lived only
in process memory (Redis without persistence, Postgres synchronous_commit=off's WAL buffers),
and it measures restart time; for Postgres against the WAL to replay, recorded at the kill.

Timings (monotonic, from the restart call): ``first_claim_s`` until a claim returned a message
(None when nothing survived), ``recovery_s`` until the queue first answered a claim (with a
message, or empty with depth 0), ``restart_s`` until the server object's ``start()`` returned.
Every drill is one run record (params.experiment = "recovery", params.drill = its index among
the repetitions); it has no load-driver summary, so it carries an empty ``summary.json`` and
``timeseries.parquet`` to stay a valid record.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from pglimits_core.datasets.messages import decode
from pglimits_core.load import BackgroundLoad, ClosedLoop, OpenLoop, Role
from pglimits_core.servers.process import process_tree
from pglimits_core.servers.registry import server_class
from pglimits_core.studies.runner import Context, RecordedRun
from pglimits_core.workloads.queue.drills.recovery_record import (
    drill_outcome,
    finish_run,
    open_run,
    with_server_description,
)
from pglimits_core.workloads.queue.ops import EnqueueOp
from pglimits_core.workloads.queue.points import (
    STUDY,
    QueueVariant,
    _scratch,
    drain,
    fresh_queue,
    read_ledger,
    variant,
)
from pglimits_core.workloads.queue.systems.registry import make_adapter

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

POLL_S = 0.005             # claim poll while the server comes back: ms resolution, cheap
RECOVERY_LIMIT_S = 120.0   # the seed saw Postgres at 28-41 s; anything past 2 min is a failure
PRODUCER_READY_S = 30.0    # the child must have connected before the load clock starts
PRODUCER_SLACK_S = 30.0    # the producer stops itself this long after load_s if never killed

MAX_LOG_LINES = 20


# --- the producer ------------------------------------------------------------------------------
PRODUCER = "recovery-producer"


def producer_load(v: QueueVariant, url: str, ledger_dir: Path, rate: float | None, load_s: float,
                  seed: int) -> BackgroundLoad:
    """One producer, one message per enqueue, at ``rate`` (from intended start times: behind
    schedule it goes flat out) or flat out (``rate`` None), until stopped or killed (at most
    ``load_s + PRODUCER_SLACK_S``). Killing it is the crash itself for SQLite (``may_die``)."""
    producer = EnqueueOp(v.system, url, v.options, 1, str(ledger_dir), seed)
    loop = OpenLoop(rate=rate, drain_s=0.0) if rate else ClosedLoop(idle_sleep_s=0.0)
    return BackgroundLoad([Role(PRODUCER, producer, loop=loop, may_die=True)], seed=seed,
                          max_s=load_s + PRODUCER_SLACK_S, open_timeout_s=PRODUCER_READY_S)


def kill_process(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


# --- the kill -------------------------------------------------------------------------------------
def before_load(server_name: str, url: str) -> dict[str, Any]:
    # a failure here fails the drill: the starting state is unknown
    return server_class(server_name).before_crash_load(url)


def state_at_kill(server_name: str, url: str) -> dict[str, Any]:
    try:
        return server_class(server_name).state_at_crash(url)
    except Exception as exc:  # the state is context, not the measurement: note it and kill anyway
        return {"state_error": f"{type(exc).__name__}: {exc}"}


def log_size(server: Any) -> int:
    path = getattr(server, "log_path", None)
    return path.stat().st_size if path is not None and path.exists() else 0


def recovery_log_lines(server: Any, name: str, offset: int) -> list[str]:
    """The recovery lines the server logged after ``offset`` (its logs are appended to)."""
    pattern, path = server_class(name).recovery_log_pattern, getattr(server, "log_path", None)
    if pattern is None or path is None or not path.exists():
        return []
    with path.open("rb") as log:
        log.seek(offset)
        text = log.read().decode(errors="replace")
    return [line.strip() for line in text.splitlines() if re.search(pattern, line)][:MAX_LOG_LINES]


def kill_server_tree(server: Any) -> dict[str, Any]:
    """SIGKILL the server's process group and every descendant: Postgres backends call setsid()
    into groups of their own, so the postmaster's group alone would leave them holding the
    shared memory and the new postmaster would refuse to start."""
    pid = server.endpoint.pids[0]
    procs = process_tree(pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(procs, timeout=10)
    return {"pid": pid, "pids": [p.pid for p in procs]}


# --- restart and the first claim -------------------------------------------------------------------
def restart_in_background(server: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """stop() reaps the dead process, start() brings it back on the same data dir; in a thread so
    the claim poll runs meanwhile (start() itself only polls health every 100 ms)."""
    state: dict[str, Any] = {"t0": time.monotonic()}

    def restart() -> None:
        try:
            server.stop()
            server.start()
            state["restart_s"] = time.monotonic() - state["t0"]
        except BaseException as exc:  # re-raised by the caller after join
            state["error"] = exc

    thread = threading.Thread(target=restart, name="recovery-restart", daemon=True)
    thread.start()
    return thread, state


def poll_first_claim(server: Any, v: QueueVariant, old_endpoint: Any, state: dict[str, Any]):
    """``(adapter, claimed messages, answered_s)`` once a claim answers; the adapter stays open."""
    adapter, last_error = None, "no endpoint yet"
    while time.monotonic() - state["t0"] < RECOVERY_LIMIT_S and "error" not in state:
        endpoint = server.endpoint
        if endpoint is not None and endpoint is not old_endpoint:
            try:
                adapter = adapter or opened(v, endpoint.url)
                messages = adapter.claim(1)
                if messages or adapter.depth() == 0:
                    return adapter, messages, time.monotonic() - state["t0"]
            except Exception as exc:  # refused / "starting up" / reset: whichever client raised it
                last_error = f"{type(exc).__name__}: {exc}"
                adapter = close_quietly(adapter)
        time.sleep(POLL_S)
    close_quietly(adapter)
    raise RuntimeError(state.get("error") or f"no claim answered within {RECOVERY_LIMIT_S:.0f}s: {last_error}")


def opened(v: QueueVariant, url: str):
    adapter = make_adapter(v.system, url, **v.options, worker_id="recovery-consumer")
    adapter.open()
    return adapter


def close_quietly(adapter: Any) -> None:
    if adapter is not None:
        with contextlib.suppress(Exception):
            adapter.close()
    return None


def recover(server: Any, v: QueueVariant) -> dict[str, Any]:
    """Restart, time the first claim, drain; the claimed and drained ids are what survived."""
    # Taken before the restart thread runs: SQLite's restart takes ~2 ms, so reading it after
    # the thread started could already see the new endpoint and wait for a change that never comes.
    dead_endpoint = server.endpoint
    thread, state = restart_in_background(server)
    adapter, claimed, answered_s = poll_first_claim(server, v, dead_endpoint, state)
    try:
        first_ids = [decode(m.payload)[0] for m in claimed]
        if claimed:
            adapter.ack([m.id for m in claimed])
        thread.join(RECOVERY_LIMIT_S)
        if "error" in state:
            raise state["error"]
        drained, emptied = drain(adapter)
    finally:
        adapter.close()
    return {"present": first_ids + drained, "drain_complete": emptied, "recovery_s": answered_s,
            "first_claim_s": answered_s if claimed else None, "restart_s": state.get("restart_s")}


# --- one drill -------------------------------------------------------------------------------------
def recovery_point(run: StudyRun, v: QueueVariant, load_s: float, rate: float | None,
                   drill: int = 0) -> RecordedRun:
    """One drill of one variant (``drill``: its index among the repetitions), written as one run
    record (failed records keep the reason). Only a server this study started (in
    ``run.servers``) is ever killed."""
    ctx, fleet = run.ctx, run.fleet
    params = {"experiment": "recovery", "variant": v.label, "options": v.options, "drill": drill,
              "load_s": load_s, "rate": rate, "kill_signal": "SIGKILL"}
    reused = ctx.reuse(STUDY, v.system, f"recovery:{v.label}", params)
    if reused:  # drilled before an interruption
        return reused
    with open_run(ctx, v, params, run.seed) as run_dir:
        try:
            outcome = crash_and_recover(ctx, run.servers, v, load_s, rate, run.seed)
        finally:
            sync_fleet(fleet, v.server, ctx)
        # the server as the variant ran it (Redis persistence is set per variant, at runtime)
        with_server_description(run_dir, v, ctx.descriptions.get(v.server, {}))
        return finish_run(run_dir, v, outcome)


def crash_and_recover(ctx: Context, servers: dict[str, Any], v: QueueVariant, load_s: float,
                      rate: float | None, seed: int) -> dict[str, Any]:
    server = servers.get(v.server)
    if server is None:
        raise RuntimeError(f"{v.server} is not a server this study started (attached or unavailable): "
                           "a crash drill must not kill someone else's server")
    url = ctx.endpoints[v.server].url
    described = prepared_queue(ctx, v)
    ledger_dir = Path(tempfile.mkdtemp(prefix="recovery-", dir=_scratch()))
    try:
        log_offset = log_size(server)
        prepared = {"before_load": before_load(v.server, url),
                    "restart_settings": server.pin_runtime_settings()}
        killed = load_then_kill(server, v, url, ledger_dir, rate, load_s, seed) | prepared
        recovered = recover(server, v)
        killed["server_log"] = recovery_log_lines(server, v.server, log_offset)
        refresh_context(ctx, servers, v.server)
        confirmed = read_ledger(ledger_dir, "enqueue")  # whole lines: a cut one was never confirmed
        return drill_outcome(v, described, confirmed, recovered, killed, load_s, rate)
    finally:
        shutil.rmtree(ledger_dir, ignore_errors=True)


def prepared_queue(ctx: Context, v: QueueVariant) -> dict[str, Any]:
    """Empty the queue with the variant's settings applied; its description, read back from the
    server. No connection of ours stays open on it."""
    adapter = fresh_queue(ctx, v)
    try:
        return adapter.describe()
    finally:
        adapter.close()


def load_then_kill(server: Any, v: QueueVariant, url: str, ledger_dir: Path, rate: float | None,
                   load_s: float, seed: int) -> dict[str, Any]:
    with producer_load(v, url, ledger_dir, rate, load_s, seed) as load:
        time.sleep(load_s)
        target = server_class(v.server).crash_kill_target
        killed = {"target": target, "producer_pid": load.pids(PRODUCER)[0]}
        if target == "server":
            killed["state"] = state_at_kill(v.server, url)
            killed.update(kill_server_tree(server))
        # the crash itself for SQLite; for the servers, the load stops here
        kill_process(killed["producer_pid"])
    return killed


def refresh_context(ctx: Context, servers: dict[str, Any], name: str) -> None:
    """The restarted server may listen on a new port: later points must use the new endpoint."""
    server = servers[name]
    ctx.endpoints[name] = server.endpoint
    ctx.descriptions[name] = server.describe()


def sync_fleet(fleet: Any, name: str, ctx: Context) -> None:
    """The fleet hands out the restarted server's endpoint too (``servers status``, teardown)."""
    if name in getattr(fleet, "endpoints", {}) and name in ctx.endpoints:
        fleet.endpoints[name] = ctx.endpoints[name]


def drilled_variant(label: str, variants: list[QueueVariant]) -> QueueVariant:
    """The study's variant of that label, or of the same system and options (a drill label may
    list its options in another order), else the variant the label spells."""
    by_label = {v.label: v for v in variants}
    if label in by_label:
        return by_label[label]
    spelled = variant_from_label(label)
    same = [v for v in variants if _config(v) == _config(spelled)]
    return same[0] if same else spelled


def _config(v: QueueVariant) -> tuple[str, dict[str, Any]]:
    return v.system, {"batch": 1, **v.options}  # batch 1 is what no batch means


def variant_from_label(label: str) -> QueueVariant:
    """A label not among the study's variants, e.g. "sqlite_wal batch=1 synchronous=full"."""
    system, *pairs = label.split()
    return variant(system, **dict(pair.split("=", 1) for pair in pairs))
