"""The drills' background load (``load.BackgroundLoad``) and the backup drill's load on a real
SQLite file: runs until stopped, reports every worker, a worker killed on purpose is "died", a
worker that cannot open stops the start; every ledger event of the backup load is accounted for.

No timing targets (the machine is shared): only counts, statuses and reasons.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from pglimits_core.load import BackgroundLoad, ClosedLoop, OpenLoop, Role
from pglimits_core.servers.sqlite import SQLiteServer
from pglimits_core.workloads.queue.drills.backup import account_backup
from pglimits_core.workloads.queue.drills.backup_load import backup_load, read_events
from pglimits_core.workloads.queue.points import prefill, variant
from pglimits_core.workloads.queue.systems.registry import make_adapter


class Tick:
    """One item per call; cannot open when asked not to."""

    name = "tick"

    def __init__(self, fail_open: bool = False):
        self.fail_open = fail_open

    def open(self):
        if self.fail_open:
            raise ConnectionRefusedError("no server here")

    def __call__(self):
        return 1

    def close(self):
        pass


def test_it_runs_until_stopped_and_reports_every_worker():
    load = BackgroundLoad([Role("paced", Tick(), loop=OpenLoop(rate=200)),
                           Role("busy", Tick(), workers=2, loop=ClosedLoop(idle_sleep_s=0.0))], seed=1)
    with load:
        assert len(load.pids()) == 3 and len(load.pids("busy")) == 2
        time.sleep(0.5)
    assert load.result.status == "complete", load.result.error
    assert {(w.role, w.status, w.ended_by) for w in load.result.workers} == {
        ("paced", "ok", "stop"), ("busy", "ok", "stop")}
    assert load.result.counts[("paced", "tick", "load")]["ops"] > 0
    assert load.stop() is load.result  # stopping twice is the same stop


def test_a_worker_killed_on_purpose_is_reported_died_not_failed():
    load = BackgroundLoad([Role("victim", Tick(), loop=OpenLoop(rate=100), may_die=True)])
    with load:
        os.kill(load.pids("victim")[0], signal.SIGKILL)
    assert [w.status for w in load.result.workers] == ["died"] and "SIGKILL" in load.result.workers[0].error
    assert load.result.status == "complete"


def test_a_worker_that_cannot_open_stops_the_start_with_its_reason():
    load = BackgroundLoad([Role("ok", Tick()), Role("broken", Tick(fail_open=True))])
    with pytest.raises(RuntimeError, match="no server here"):
        load.start()
    assert not [pid for pid in load.pids() if _alive(pid)]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_backup_load_ledgers_every_event_of_a_real_queue(tmp_path: Path):
    url = SQLiteServer(data_dir=tmp_path / "sqlite").start().url
    v = variant("sqlite_wal")
    with make_adapter(v.system, url, **v.options) as admin:
        admin.setup()
        admin.reset()
        prefilled = prefill(admin, 200, seed=2)
        ledger = tmp_path / "ledger"
        ledger.mkdir()
        load = backup_load(v, url, ledger, rate=200, seed=2, work_s=0.001, max_s=30)
        with load:
            time.sleep(0.5)
        assert load.result.status == "complete", load.result.error
        events = read_events(ledger)
        enqueued = [i for kind, _, ids in events if kind == "enq" for i in ids]
        claimed = [i for kind, _, ids in events if kind == "claim" for i in ids]
        acked = [i for kind, _, ids in events if kind == "ack" for i in ids]
        assert enqueued and claimed and set(acked) <= set(claimed)
        assert len(set(claimed)) == len(claimed)  # nothing handed out twice
        # the queue holds exactly what was confirmed and not acknowledged
        assert admin.depth() == len(prefilled) + len(enqueued) - len(acked)
        # a "backup" after the load, holding everything left: nothing confirmed is lost
        end = time.monotonic_ns()
        left = sorted(set(prefilled + enqueued) - set(acked))
        counted = account_backup(prefilled, events, end, end, left, at_most_once=False)
        assert counted["lost"] == 0 and counted["acked_reappeared"] == 0 and counted["unknown_ids"] == 0


def test_sqlite_hot_backup_and_restore_are_the_servers_verbs(tmp_path: Path):
    server = SQLiteServer(data_dir=tmp_path / "source")
    url = server.start().url
    v = variant("sqlite_wal", shards=2)
    with make_adapter(v.system, url, **v.options) as queue:
        queue.setup()
        queue.reset()
        ids = prefill(queue, 50, seed=3)
        files = queue.database_files()
    assert len(files) == 2 and make_adapter(v.system, url, **v.options).queue_bytes() > 0
    assert server.prepare_hot_backup(files)["files"] == [str(p) for p in files]
    (tmp_path / "backup").mkdir()
    assert server.hot_backup(tmp_path / "backup", files) == {"shards_backed_up": 2}
    restored = server.restored_copy(tmp_path / "backup", tmp_path / "restore")
    with make_adapter(v.system, restored.start().url, **v.options) as copy:
        assert copy.depth() == len(ids)
        assert copy.release_held_claims() == 0  # nothing was claimed


def test_the_summary_divides_by_how_long_the_load_ran_not_by_its_bound():
    with BackgroundLoad([Role("client", Tick(), workers=1, loop=ClosedLoop(idle_sleep_s=0.001))],
                        max_s=600.0) as load:
        time.sleep(1.0)
    phases = load.result.phases
    assert len(phases) == 1 and 0.9 <= phases[0].duration_s < 5.0, phases
