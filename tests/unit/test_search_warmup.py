"""The search warm-up's stopping rule on fake slices (no clock), its threaded load on fake
engines, the profile's knobs, and the warm-up once per server in a point's record."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
import yaml

from pglimits_core.config import profiles_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.profiles import load_profile
from pglimits_core.workloads.search import points
from pglimits_core.workloads.search.plan import warmup_rule
from pglimits_core.workloads.search.profile import SearchProfile
from pglimits_core.workloads.search.warmup import Slice, WarmupRule, warm_until_steady

FULL = WarmupRule(cap_s=60, min_s=20, slice_s=5, tolerance=0.10, clients=8)


def fake_slices(qps: list[float], seconds: float = 5.0):
    """``take_slice`` answering the next slice of ``qps``; ``taken`` counts the slices asked for."""
    taken: list[float] = []

    def take(asked_s: float) -> Slice:
        taken.append(asked_s)
        return Slice(seconds, round(qps[len(taken) - 1] * seconds))
    return take, taken


def test_a_steady_series_stops_at_the_second_agreeing_slice_once_the_minimum_is_run():
    take, taken = fake_slices([1000.0] * 30)
    record = FULL.run(take)
    assert len(taken) == 4 and taken == [5.0] * 4  # 20 s minimum: slices 3 and 4 agree
    assert record["steady"] is True and record["seconds"] == 20.0 and record["queries"] == 20_000
    assert record["slices_qps"] == [1000.0] * 4 and "within 10%" in record["stopped"]


def test_without_a_minimum_two_agreeing_slices_are_enough():
    rule = WarmupRule(cap_s=120, min_s=1, slice_s=5, tolerance=0.10)
    take, taken = fake_slices([500, 1000, 1050, 1060])  # 500 -> 1000 disagrees, 1000 -> 1050 agrees
    assert rule.run(take)["slices_qps"] == [500, 1000, 1050] and len(taken) == 3


def test_a_rising_series_runs_to_the_cap_and_says_it_was_not_steady():
    rising = [500 * 1.2 ** k for k in range(40)]  # +20 % a slice: never within 10 %
    take, taken = fake_slices(rising)
    record = FULL.run(take)
    assert len(taken) == 12 and record["seconds"] == 60.0  # the cap, in whole slices
    assert record["steady"] is False and record["stopped"] == "not steady after cap (60 s)"
    assert record["slices_qps"] == pytest.approx(rising[:12], abs=0.2)  # whole queries per slice


def test_agreement_is_relative_to_the_earlier_slice_and_a_silent_slice_never_agrees():
    rule = WarmupRule(tolerance=0.10)
    assert rule.agree(Slice(1, 1000), Slice(1, 1100)) and rule.agree(Slice(1, 1000), Slice(1, 900))
    assert not rule.agree(Slice(1, 1000), Slice(1, 1101))
    assert not rule.agree(Slice(1, 0), Slice(1, 0))
    assert WarmupRule(cap_s=7, slice_s=5, min_s=1).max_slices == 2  # a cap off the grid rounds up


class FakeEngine:
    """A connection that answers at once; ``opened`` and ``closed`` count across all of them."""

    opened = closed = 0
    lock = threading.Lock()

    def __init__(self, fail_after: int | None = None):
        self.fail_after, self.calls = fail_after, 0
        with FakeEngine.lock:
            FakeEngine.opened += 1

    def prepare_stream(self, pairs):
        self.pairs = pairs

    def stream_hits(self, i: int) -> int:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise ConnectionError("server went away")
        threading.Event().wait(0.0005)  # a query's round trip: the thread waits, as on a socket
        return 10

    def close(self):
        with FakeEngine.lock:
            FakeEngine.closed += 1


def test_the_warm_load_runs_every_client_on_its_own_connection_and_closes_them():
    FakeEngine.opened = FakeEngine.closed = 0
    rule = WarmupRule(cap_s=0.4, min_s=0.1, slice_s=0.05, tolerance=0.99, clients=3)
    record = warm_until_steady(rule, FakeEngine, [("a", "b"), ("c", "d")])
    assert record["queries"] > 0 and record["clients"] == 3 and len(record["slices_qps"]) >= 2
    assert FakeEngine.opened == FakeEngine.closed == 3


def test_a_failing_warm_up_query_stops_the_warm_up_with_its_error_and_closes_every_connection():
    FakeEngine.opened = FakeEngine.closed = 0
    rule = WarmupRule(cap_s=5, min_s=1, slice_s=1, clients=2)
    with pytest.raises(RuntimeError, match="warm-up query failed: server went away"):
        warm_until_steady(rule, lambda: FakeEngine(fail_after=3), [("a", "b")])
    assert FakeEngine.opened == FakeEngine.closed == 2


def search_section(profile: str) -> SearchProfile:
    """A profile's ``search:`` section alone (the whole full profile takes a minute to load)."""
    return SearchProfile.model_validate(yaml.safe_load((profiles_dir() / f"{profile}.yaml").read_text())["search"])


def test_the_profiles_give_the_rule_and_clients_default_to_the_largest_sweep():
    assert warmup_rule(search_section("full")) == FULL
    test = load_profile("test")
    section = test.section("search")
    rule = warmup_rule(section)
    assert rule.cap_s <= 5 and rule.clients == max(c for s in section.throughput for c in s.clients)
    quick = warmup_rule(search_section("quick"))
    assert (quick.cap_s, quick.min_s) == (20, 5)


@pytest.mark.parametrize(("knobs", "problem"), [
    ("warmup_s: 10\n  warmup_min_s: 20\n", "must not exceed the cap warmup_s"),
    ("warmup_slice_s: 0\n", "warmup_slice_s"),
    ("warmup_tolerance: 0\n", "warmup_tolerance"),
    ("warmup_clients: 0\n", "warmup_clients"),
    ("warmup_s: -1\n", "warmup_s"),
])
def test_bad_warm_up_knobs_are_one_line_errors(tmp_path, monkeypatch, knobs, problem):
    (tmp_path / "bad.yaml").write_text(
        "search:\n  variants: [{system: elasticsearch}]\n  " + knobs
        + "  throughput: [{clients: [1], streams: [rare], duration_s: 0.5}]\n"
        "datasets:\n  corpus: {documents: 2000, vocabulary: 2000, words_per_doc: 30, queries_per_class: 10}\n")
    monkeypatch.setenv("PGLIMITS_PROFILES_DIR", str(tmp_path))
    with pytest.raises(PGLimitsError, match=problem) as caught:
        load_profile("bad")
    assert "\n" not in str(caught.value)


def test_the_warm_up_runs_once_per_server_and_every_point_records_it(monkeypatch):
    ran: list[str] = []

    def fake_warm(rule, open_engine, pairs):
        ran.append("warm")
        return {"seconds": 20.0, "queries": 100, "slices_qps": [1.0] * 4, "steady": True, "stopped": "steady"}
    monkeypatch.setattr(points, "warm_until_steady", fake_warm)
    monkeypatch.setattr(points, "prepared", lambda setup: SimpleNamespace(queries=SimpleNamespace(queries=[])))
    monkeypatch.setattr(points, "_WARM", {})
    ctx = SimpleNamespace(endpoints={"postgres": SimpleNamespace(url="postgresql://x"),
                                     "elasticsearch": SimpleNamespace(url="http://y")})
    setup = SimpleNamespace(warmup=WarmupRule(), dataset="d")
    pg = [SimpleNamespace(server="postgres", label=label) for label in ("pg_gin ranked", "pg_gin unranked")]
    es = SimpleNamespace(server="elasticsearch", label="elasticsearch")
    records = [points.warm_up(ctx, setup, v) for v in (*pg, es, pg[0], es)]
    assert ran == ["warm", "warm"]  # postgres once (both variants), elasticsearch once
    assert [r["ran_before_this_point"] for r in records] == [True, False, True, False, False]
    assert records[1]["variant"] == "pg_gin ranked" and records[1]["steady"] is True
    off = SimpleNamespace(warmup=WarmupRule(cap_s=0), dataset="d")
    assert points.warm_up(ctx, off, es) == {}
