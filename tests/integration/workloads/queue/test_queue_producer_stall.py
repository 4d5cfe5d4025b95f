"""A producer that falls behind its schedule must fail the latency SLO (real SQLite WAL queue).

End-to-end latency runs from the *intended* send: a producer stalled for 400 ms sends the
messages it owed late, and each carries the time it should have been sent, so the consumers'
end-to-end p99 shows the stall. Stamped at the actual send (the old way), those messages
looked fresh and the SLO passed.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

from pglimits_core.load import ClosedLoop, OpenLoop, Phase, Role, RunSpec, Slo, run_load
from pglimits_core.record.summary import build_summary
from pglimits_core.workloads.queue.ops import ConsumeOp, EnqueueOp
from pglimits_core.workloads.queue.points import point_result
from pglimits_core.workloads.queue.systems.registry import make_adapter

RATE = 400
SLO = Slo(p99_bound_us=100_000, min_achieved_fraction=0.95, max_backlog_growth=0.05)


class StallingEnqueueOp(EnqueueOp):
    """Sleeps ``stall_s`` once, at its ``stall_at``-th call (a GC pause, a slow client)."""

    def __init__(self, *args, stall_at: int, stall_s: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.stall_at, self.stall_s, self.calls = stall_at, stall_s, 0

    def __call__(self) -> int:
        self.calls += 1
        if self.calls == self.stall_at:
            time.sleep(self.stall_s)
        return super().__call__()


def _measure(tmp_path, name: str, stall_s: float):
    url = str(tmp_path / f"{name}.db")
    with make_adapter("sqlite_wal", url) as adapter:
        adapter.setup()
        adapter.reset()
    ledger = tmp_path / f"ledger-{name}"
    ledger.mkdir()
    # the stall lands 1 s into the 2 s window (0.5 s warmup + 1 s at RATE/s)
    producer = StallingEnqueueOp("sqlite_wal", url, {}, 1, str(ledger), 1,
                                 stall_at=int(1.5 * RATE), stall_s=stall_s)
    consumer = ConsumeOp("sqlite_wal", url, {}, 1, str(ledger), 1)
    spec = RunSpec(phases=[Phase("warmup", 0.5, warmup=True), Phase("measure", 2.0)],
                   roles=[Role("producer", producer, workers=1, loop=OpenLoop(rate=RATE, drain_s=2.0)),
                          Role("consumer", consumer, workers=1, loop=ClosedLoop(idle_sleep_s=0.001))],
                   seed=1, start_method="fork")
    result = run_load(spec)
    assert result.status == "complete", result.error
    return point_result(SimpleNamespace(summary=build_summary(result, name)), RATE, 2.0)


def test_a_stalled_producer_fails_the_slo_that_an_unstalled_one_passes(tmp_path):
    steady = _measure(tmp_path, "steady", stall_s=0.0)
    assert SLO.failure(steady) is None, SLO.failure(steady)  # the test can fail: the SLO is reachable

    stalled = _measure(tmp_path, "stalled", stall_s=0.4)
    assert stalled.p99_us is not None and stalled.p99_us > 300_000  # the owed messages carry the stall
    assert "p99" in (SLO.failure(stalled) or "")
