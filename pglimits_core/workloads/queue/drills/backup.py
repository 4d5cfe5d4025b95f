"""Backup/restore drill (seed 000's backup paragraph): a hot backup of a live queue, restored
into a fresh data directory on a second server instance, with every message id accounted for
across the backup point.

Per drill: empty the queue (the variant's settings applied), prefill ``queue_messages``
(the queue's stated size), let the server prepare (``prepare_hot_backup``; Postgres: replication
checked and a CHECKPOINT, so the backup's own checkpoint flushes only the load's writes), then
the load of ``backup_load`` runs: one producer and ``CONSUMERS`` consumers at ``rate`` msg/s
each side, so the queue holds its size. A consumer holds each claim ``WORK_S`` before
acknowledging it, as a job takes time, so some claims are in flight at the backup. After
``load_s`` the backup starts (``t0``) with the load still running; it is the server's own verb,
``hot_backup``:

- SQLite: the online backup API (``sqlite3.Connection.backup``, all pages in one step), not
  ``VACUUM INTO``: it is what the seed's ``.backup`` runs, one read transaction gives a
  consistent snapshot that never blocks the WAL writers, and it copies pages as they are
  (``VACUUM INTO`` rebuilds every b-tree: more CPU, a compacted copy, another measurement).
- Postgres: ``pg_basebackup`` of the project's own server (its own binaries), plain format,
  WAL streamed (``-X stream``), fast checkpoint (``-c fast``: a spread checkpoint would wait up
  to 0.9 x checkpoint_timeout = 13.5 min here), over a replication connection to 127.0.0.1.
- Redis: ``BGSAVE SCHEDULE``, wait until ``rdb_saves`` grew and ``rdb_bgsave_in_progress`` is 0,
  then copy the RDB file.

The backup ends (``t_end``) when the artefact is in the backup directory; then the load stops.
Restore (the server's ``restored_copy``): copy the artefact into a fresh data directory and
start a second instance there on a free port of 127.0.0.1 (Postgres: crash recovery from the
base backup's label, replaying its streamed WAL; Redis: loads the RDB, started without an AOF;
SQLite: the copied file opened). ``restore_to_first_claim_s`` runs from the start of the copy
to the first claim that returned a message. Then the claims the restored copy still holds are
released (the design's reaper; pgmq: visibility reset) and the queue is drained: its ids are
what the backup kept.

The accounting (``account_backup``) compares those ids with the load's ledgers (monotonic
times of every confirmed enqueue, claim and acknowledgement):

- ``acked_reappeared``: acknowledged before ``t0``, present in the restore. Must be 0 for every
  design: an acknowledgement returned before the backup began.
- ``lost``: enqueue confirmed before ``t0``, missing from the restore and not consumed before
  ``t_end`` (a message consumed while the backup ran may be in the snapshot or not).
- ``in_flight_at_backup`` / ``in_flight_returned``: claimed and not yet acknowledged at ``t0``,
  and how many of those the restore holds. At-least-once designs keep them claimed in the
  snapshot (SQLite/Postgres rows with a claim, Redis processing lists), so they come back through
  the reaper — except those acknowledged after ``t0`` but before the snapshot point
  (``in_flight_acked_during_backup`` bounds them; a missing one not acknowledged is counted lost);
  delete-mode (at-most-once) deleted them at the claim, so none return by design.

What it can and cannot show: one backup of one size on a shared 2-core box, page cache warm,
backup and restore on the same disk; restore time is copy + start + replay of a few seconds of
WAL, not of hours of archived WAL, and the backup is not verified beyond the queue's own ids.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pglimits_core.datasets.messages import SIZE_MIX, decode
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.registry import SERVERS, server_class
from pglimits_core.servers.storage import directory_bytes
from pglimits_core.studies.runner import Context, RecordedRun, open_record
from pglimits_core.workloads.queue.drills.backup_load import backup_load, read_events
from pglimits_core.workloads.queue.drills.recovery import drilled_variant, recovery_log_lines
from pglimits_core.workloads.queue.drills.recovery_record import (
    durability_facts,
    finish_run,
    with_server_description,
)
from pglimits_core.workloads.queue.points import (
    STUDY,
    QueueVariant,
    _scratch,
    drain,
    fresh_queue,
    prefill,
)
from pglimits_core.workloads.queue.systems.registry import adapter_class, make_adapter

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

EXPERIMENT = "backup"
WORK_S = 0.005             # a consumer holds each claim this long before acking: jobs take time
BACKUP_LIMIT_S = 600.0     # as the servers' own bound on a backup (their hot_backup_limit_s)
LOAD_LIMIT_S = 2 * BACKUP_LIMIT_S  # the load's bound past load_s, if it were never stopped
RESTORE_LIMIT_S = 300.0    # start + replay + first claim
POLL_S = 0.01
MEAN_PAYLOAD_BYTES = sum(size * share for size, share in SIZE_MIX)
# disk a drill needs per message: payload + row/index overhead, for the source, the backup and
# the restored copy (WAL of the load on top); deliberately generous
DISK_BYTES_PER_MESSAGE = 3 * (MEAN_PAYLOAD_BYTES + 200)
DRAIN_S_PER_MESSAGE = 0.001  # drain bound: 1 ms per message (drains run at >= 5k/s here)
SCOPE = ("one hot backup under a moderate producer+consumer load, restored by copying the artefact "
         "into a fresh data directory on the same disk and starting a second instance there (page "
         "cache warm); restore time is copy + start + replay of the WAL streamed during the backup, "
         "not of archived WAL; the restore is checked through the queue's own ids only")

Events = list[tuple[str, int, list[str]]]


# --- the accounting across the backup point --------------------------------------------------------
def account_backup(prefilled: list[str], events: Events, t0: int, t_end: int,
                   restored: list[str], at_most_once: bool) -> dict[str, Any]:
    """Every id against the backup point ``t0`` and the backup's end ``t_end`` (see the module doc)."""
    def ids(kind: str, before: int | None = None) -> set[str]:
        return {i for k, t, batch in events if k == kind and (before is None or t < before) for i in batch}

    confirmed = list(prefilled) + [i for k, t, batch in events if k == "enq" and t < t0 for i in batch]
    acked_before, claimed_before = ids("ack", t0), ids("claim", t0)
    in_flight = claimed_before - acked_before
    # a message consumed while the backup ran may be in the snapshot or not: neither is a loss
    taken_by_end = ids("claim", t_end) if at_most_once else ids("ack", t_end)
    present = set(restored)
    lost = [i for i in confirmed if i not in present and i not in taken_by_end]
    confirmed_during = ids("enq", t_end) - set(confirmed)
    known = set(prefilled) | ids("enq")
    return {"confirmed_before_backup": len(confirmed), "acked_before_backup": len(acked_before),
            "acked_reappeared": len(acked_before & present),
            "acked_reappeared_sample": sorted(acked_before & present)[:5],
            "lost": len(lost), "lost_sample": lost[:5],
            "in_flight_at_backup": len(in_flight), "in_flight_returned": len(in_flight & present),
            # acknowledged while the backup ran: back in the restore only if the snapshot came first
            "in_flight_acked_during_backup": len(in_flight & ids("ack", t_end)),
            # every message a consumer had been handed (by the backup's end) that the restore
            # hands out again: the claims the snapshot caught, whenever its point lay
            "claimed_returned": len((ids("claim", t_end) - acked_before) & present),
            "acked_during_backup_present": len((ids("ack", t_end) - acked_before) & present),
            "confirmed_during_backup_present": len(confirmed_during & present),
            "restored_messages": len(present), "duplicates": len(restored) - len(present),
            "unknown_ids": len(present - known)}


# --- what the drill needs before it starts -----------------------------------------------------------
def backed_up_server(v: QueueVariant) -> type:
    """The class of ``v``'s server, which must have the hot backup verbs (``hot_backup``,
    ``restored_copy``); a one-line error naming the servers that do otherwise."""
    cls = server_class(v.server)
    if not hasattr(cls, "hot_backup"):
        able = [name for name in SERVERS if hasattr(server_class(name), "hot_backup")]
        raise PGLimitsError(f"no backup drill for {v.label!r} (server {v.server})",
                            f"list variants of: {', '.join(able)} in queue.backup.variants")
    return cls


def backed_up_variant(label: str, variants: list[QueueVariant]) -> QueueVariant:
    """The variant a ``queue.backup.variants`` label names (as the crash drill reads its labels);
    a system whose server has no hot backup is a one-line error."""
    v = drilled_variant(label, variants)
    backed_up_server(v)
    return v


def check_disk(queue_messages: int, where: Path) -> dict[str, Any]:
    """A queue this size must fit three times (source, backup, restored copy) with room to spare."""
    needed = int(queue_messages * DISK_BYTES_PER_MESSAGE)
    free = shutil.disk_usage(where).free
    if needed > 0.8 * free:
        raise PGLimitsError(f"a backup drill of {queue_messages:,} messages needs ~{needed / 2**30:.1f} GiB "
                            f"free under {where}; {free / 2**30:.1f} GiB are",
                            "lower queue.backup.queue_messages in the profile or free disk space")
    return {"disk_needed_estimate_bytes": needed, "disk_free_bytes": free}


def source_server(ctx: Context, servers: dict[str, Any], v: QueueVariant) -> Any:
    """Only a server this study started is backed up: the drill copies its files."""
    server = servers.get(v.server)
    if server is None or ctx.endpoints[v.server].external:
        raise RuntimeError(f"{v.server} is not a server this study started (attached or unavailable): "
                           "the drill backs up its files, so it needs the server it started")
    return server


# --- one drill ---------------------------------------------------------------------------------------
def backup_point(run: StudyRun, v: QueueVariant, queue_messages: int, rate: float, load_s: float,
                 drill: int = 0) -> RecordedRun:
    """One drill of one variant (``drill``: its index among the repetitions), one run record; a
    failure is a failed record with its reason."""
    ctx = run.ctx
    params = {"experiment": EXPERIMENT, "variant": v.label, "options": v.options, "drill": drill,
              "queue_messages": queue_messages, "rate": rate, "load_s": load_s}
    reused = ctx.reuse(STUDY, v.system, f"{EXPERIMENT}:{v.label}", params)
    if reused:  # drilled before an interruption
        return reused
    backed_up_server(v)
    with open_record(ctx, STUDY, v.system, v.server, f"{EXPERIMENT}:{v.label}", params, run.seed) as run_dir:
        outcome = backup_and_restore(ctx, run.servers, v, queue_messages, rate, load_s, run.seed)
        # the server as the variant ran it (Redis persistence is set per variant, at runtime)
        with_server_description(run_dir, v, ctx.describe_now(v.server))
        return finish_run(run_dir, v, outcome)


def backup_and_restore(ctx: Context, servers: dict[str, Any], v: QueueVariant, queue_messages: int,
                       rate: float, load_s: float, seed: int) -> dict[str, Any]:
    server = source_server(ctx, servers, v)
    url = ctx.endpoints[v.server].url
    work = Path(tempfile.mkdtemp(prefix="backup-drill-", dir=_scratch()))
    # beside the source's data dir (the fleet's data root): the server's OS user can reach it
    restore_dir = Path(server.data_dir).parent / f"backup-restore-{uuid.uuid4().hex[:8]}"
    backup_dir, ledger_dir = work / "backup", work / "ledger"
    try:
        backup_dir.mkdir()
        ledger_dir.mkdir()
        facts = {"disk": check_disk(queue_messages, restore_dir.parent),
                 "backup_dir": str(backup_dir), "restore_dir": str(restore_dir)}
        filled = fill_queue(ctx, v, server, url, queue_messages, seed)
        load = backup_load(v, url, ledger_dir, rate, seed, WORK_S, max_s=load_s + LOAD_LIMIT_S)
        taken = backup_under_load(server, load, filled["files"], backup_dir, ledger_dir, load_s)
        restored = restore_and_drain(server, v, backup_dir, restore_dir, queue_messages)
        accounting = account_backup(filled["ids"], taken["events"], taken["t0"], taken["t_end"],
                                    restored.pop("present"), adapter_class(v.system).delivery_guarantee == "at-most-once")
        return drill_outcome(v, server, queue_messages, rate, load_s, facts, filled, taken, restored, accounting)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(restore_dir, ignore_errors=True)


def fill_queue(ctx: Context, v: QueueVariant, server: Any, url: str, count: int,
               seed: int) -> dict[str, Any]:
    """An empty queue with the variant's settings, ``count`` messages in it, the server settled."""
    adapter = fresh_queue(ctx, v)
    try:
        started = time.monotonic()
        ids = prefill(adapter, count, seed)
        filled_s = time.monotonic() - started
        described, files = adapter.describe(), adapter.database_files()
    finally:
        adapter.close()
    prepared = server.prepare_hot_backup(files)  # Postgres: replication checked, CHECKPOINT
    return {"ids": ids, "prefill_s": round(filled_s, 3), "described": described, "prepared": prepared,
            "files": files, "queue_bytes": make_adapter(v.system, url, **v.options).queue_bytes()}


def backup_under_load(server: Any, load: Any, files: list[Path] | None, backup_dir: Path,
                      ledger_dir: Path, load_s: float) -> dict[str, Any]:
    """``load_s`` of producer+consumer load, then the backup with the load still running."""
    with load:
        time.sleep(load_s)
        t0 = time.monotonic_ns()
        facts = server.hot_backup(backup_dir, files)
        t_end = time.monotonic_ns()
    if load.result.status != "complete":
        raise RuntimeError(f"the load under the backup failed: {load.result.error}")
    events = read_events(ledger_dir)
    return {"t0": t0, "t_end": t_end, "backup_s": (t_end - t0) / 1e9, "events": events,
            "backup_bytes": directory_bytes(backup_dir), "backup": facts,
            "confirmed_per_s": _rate_before(events, "enq", t0, load_s),
            "acked_per_s": _rate_before(events, "ack", t0, load_s)}


def _rate_before(events: Events, kind: str, t0: int, load_s: float) -> float:
    return sum(len(ids) for k, t, ids in events if k == kind and t < t0) / load_s


def restore_and_drain(server: Any, v: QueueVariant, backup_dir: Path, restore_dir: Path,
                      queue_messages: int) -> dict[str, Any]:
    """Copy, start the second instance, time the first claim, release held claims, drain; the
    restored instance is stopped whatever happens."""
    started = time.monotonic()
    restored = server.restored_copy(backup_dir, restore_dir, RESTORE_LIMIT_S)
    copied_s = time.monotonic() - started
    try:
        endpoint = restored.start()
        started_s = time.monotonic() - started
        claimed = claim_restored(v, endpoint.url, started, queue_messages)
        log = recovery_log_lines(restored, restored.name, 0)
    finally:
        restored.stop()
    return {**claimed, "copy_s": copied_s, "start_s": started_s, "restored_server_log": log,
            "restored_server": {"name": restored.name, "port": endpoint.port, "url": endpoint.url}}


def claim_restored(v: QueueVariant, url: str, started: float, queue_messages: int) -> dict[str, Any]:
    """The first claim (timed from ``started``), the held claims released, the rest drained."""
    adapter = make_adapter(v.system, url, **v.options, worker_id="backup-restore")
    adapter.open()
    try:
        first, first_s = first_claim(adapter, started)
        # claims the snapshot holds belong to consumers that do not exist on the restored copy
        released = adapter.release_held_claims()
        drained, emptied = drain(adapter, max(60.0, DRAIN_S_PER_MESSAGE * 2 * queue_messages))
    finally:
        adapter.close()
    return {"present": first + drained, "restore_to_first_claim_s": first_s,
            "released_claims": released, "drain_complete": emptied}


def first_claim(adapter: Any, started: float) -> tuple[list[str], float | None]:
    """The first claim that returns a message (acknowledged at once); None when the restored
    queue answered empty (nothing to time a claim by)."""
    deadline = started + RESTORE_LIMIT_S
    while time.monotonic() < deadline:
        claimed = adapter.claim(1)
        if claimed:
            answered = time.monotonic() - started
            adapter.ack([m.id for m in claimed])
            return [decode(m.payload)[0] for m in claimed], answered
        if adapter.depth() == 0:
            return [], None
        time.sleep(POLL_S)
    raise RuntimeError(f"the restored queue served no claim within {RESTORE_LIMIT_S:.0f}s")


def drill_outcome(v: QueueVariant, server: Any, queue_messages: int, rate: float, load_s: float,
                  facts: dict[str, Any], filled: dict[str, Any], taken: dict[str, Any],
                  restored: dict[str, Any], accounting: dict[str, Any]) -> dict[str, Any]:
    described = filled["described"]
    return {"method": server.hot_backup_method, "queue_messages": queue_messages,
            "queue_bytes": filled["queue_bytes"], "prefill_s": filled["prefill_s"], "offered_rate": rate,
            "load_s": load_s, "confirmed_per_s": taken["confirmed_per_s"], "acked_per_s": taken["acked_per_s"],
            "backup_s": taken["backup_s"], "backup_bytes": taken["backup_bytes"], "backup": taken["backup"],
            **filled["prepared"], **restored, **accounting, "work_s": WORK_S,
            "delivery_guarantee": adapter_class(v.system).delivery_guarantee,
            **durability_facts(described), "drill_scope": SCOPE, "adapter": described, **facts}
