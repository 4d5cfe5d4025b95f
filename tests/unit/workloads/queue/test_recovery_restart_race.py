"""The crash drill's wait for the restarted server must not depend on thread timing.

SQLite "restarts" in about 2 ms, so the restart thread can finish before the poll reads the
endpoint. The poll once compared against an endpoint read *after* the thread started, saw no
change and waited out its whole limit (a CI failure). Here the thread always wins the race.
"""

from __future__ import annotations

from pglimits_core.servers.sqlite import SQLiteServer
from pglimits_core.workloads.queue.drills import recovery as queue_recovery
from pglimits_core.workloads.queue.points import variant


def test_a_restart_that_finishes_before_the_poll_starts_is_still_seen(tmp_path, monkeypatch):
    server = SQLiteServer(data_dir=tmp_path / "sqlite")
    server.start()
    v = variant("sqlite_wal", synchronous="normal")
    queue = queue_recovery.opened(v, server.endpoint.url)
    queue.setup()  # the queue table exists, empty
    queue.close()

    real_restart = queue_recovery.restart_in_background

    def restart_that_wins_the_race(srv):
        thread, state = real_restart(srv)
        thread.join()  # the restart is over before recover() polls for the new endpoint
        return thread, state

    monkeypatch.setattr(queue_recovery, "restart_in_background", restart_that_wins_the_race)
    monkeypatch.setattr(queue_recovery, "RECOVERY_LIMIT_S", 3.0)  # fail fast if the wait is blind

    recovered = queue_recovery.recover(server, v)

    assert recovered["present"] == [] and recovered["drain_complete"]
    assert recovered["recovery_s"] < 3.0
    server.stop()
