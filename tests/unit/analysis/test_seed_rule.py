"""The seed agreement rule exists once (``analysis.seed``) and every workload judges its claims
by it: the same ratio against the same seed reads the same in the queue, search, pub/sub and
vector comparisons, and moving the band moves all of them."""

from __future__ import annotations

import pandas as pd
import pytest

from pglimits_core.analysis import seed
from pglimits_core.workloads.pubsub import report as pubsub_report
from pglimits_core.workloads.queue.seed import Measured as QueueMeasured
from pglimits_core.workloads.queue.seed import SeedClaim, judge
from pglimits_core.workloads.search import report as search_report
from pglimits_core.workloads.vectors import report as vectors_report

SEED_RATIO = 2.0
CASES = [(2.0, "agree"), (2.4, "agree"), (1.65, "agree"), (3.0, "same direction, different size"),
         (1.2, "same direction, different size"), (0.5, "differ")]


def queue_verdict(ours: float) -> str:
    claim = SeedClaim("s", "w", "throughput", "A", "B", ("a",), ("b",), (SEED_RATIO, SEED_RATIO), (1.0, 1.0), "d")
    return judge(claim, QueueMeasured("a", ours), QueueMeasured("b", 1.0))[1]


def search_verdict(ours: float) -> str:
    side = lambda qps: pd.Series({"clients": 32, "qps": qps, "client_bound": False})  # noqa: E731
    return search_report._judge("qps", (SEED_RATIO, 1.0), side(ours), side(1.0))[1]


def pubsub_verdict(ours: float) -> str:
    return pubsub_report.verdict(SEED_RATIO, ours, client_bound=False)


def vectors_verdict(ours: float) -> str:
    return vectors_report._verdict(SEED_RATIO, ours, client_bound=False)


JUDGES = {"queue": queue_verdict, "search": search_verdict, "pubsub": pubsub_verdict, "vectors": vectors_verdict}


@pytest.mark.parametrize("workload", JUDGES)
@pytest.mark.parametrize(("ours", "expected"), CASES)
def test_every_workload_judges_a_ratio_by_the_one_rule(workload, ours, expected):
    assert JUDGES[workload](ours).startswith(expected)


@pytest.mark.parametrize("workload", JUDGES)
def test_the_band_is_the_rules_own(workload, monkeypatch):
    assert JUDGES[workload](2.4).startswith("agree")
    monkeypatch.setattr(seed, "AGREEMENT_SLACK", 1.1)  # one constant, read by every workload
    assert JUDGES[workload](2.4).startswith("same direction")


def test_the_rule_itself():
    assert seed.verdict(None, 1, 2) == "not measured here"
    assert seed.verdict(0.4, 1.5, 2.0) == "differ (opposite direction)"
    assert seed.verdict_short(0.4, 2.0) == "differ"
    assert seed.floor_could_move_it(1.0, 2.0, 2.0, a_floor=True, b_floor=False)
    assert not seed.floor_could_move_it(3.0, 2.0, 2.0, a_floor=True, b_floor=False)
