"""The search warm-up's stopping rule on fake slices (no clock), its slices run by the load
driver on a fake query, the profile's knobs, and the warm-up once per server in a point's record."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
import yaml

from pglimits_core.config import profiles_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.profiles import load_profile
from pglimits_core.workloads.search import points
from pglimits_core.workloads.search.plan import warmup_rule
from pglimits_core.workloads.search.profile import SearchProfile
from pglimits_core.workloads.search.warmup import (
    Slice,
    WarmupRule,
    driver_slices,
    warm_until_steady,
)

FULL = WarmupRule(cap_s=60, min_s=20, slice_s=5, tolerance=0.10, clients=16)


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


class CountingOp:
    """A query that takes ~1 ms, or (``fail``) raises as a server that went away."""

    name = "search"

    def __init__(self, fail: bool = False):
        self.fail = fail

    def open(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.fail:
            raise ConnectionError("server went away")
        time.sleep(0.001)

    def close(self):
        pass


def test_a_driver_slice_runs_the_clients_as_processes_and_counts_their_queries():
    take = driver_slices(CountingOp(), clients=2, seed=1)
    first, second = take(0.3), take(0.3)
    assert first.seconds == 0.3 and 100 < first.queries < 2 * 0.3 * 1000 + 1  # two clients at <= 1 per ms
    assert second.queries > 0


def test_a_failing_warm_up_query_stops_the_warm_up_with_its_error():
    rule = WarmupRule(cap_s=5, min_s=1, slice_s=0.5, clients=2)
    with pytest.raises(RuntimeError, match="warm-up query failed"):
        warm_until_steady(rule, driver_slices(CountingOp(fail=True), clients=2, seed=1))


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
    assert (quick.cap_s, quick.min_s) == (8, 4)


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

    def fake_warm(rule, take_slice):
        ran.append("warm")
        return {"seconds": 20.0, "queries": 100, "slices_qps": [1.0] * 4, "steady": True, "stopped": "steady"}
    monkeypatch.setattr(points, "warm_until_steady", fake_warm)
    monkeypatch.setattr(points, "stream_params", lambda setup, v, stream: ([], {}))
    monkeypatch.setattr(points, "stream_operation", lambda ctx, v, queries: None)
    monkeypatch.setattr(points, "_WARM", {})
    ctx = SimpleNamespace(endpoints={"postgres": SimpleNamespace(url="postgresql://x"),
                                     "elasticsearch": SimpleNamespace(url="http://y")})
    setup = SimpleNamespace(warmup=WarmupRule(), dataset="d", seed=1)
    pg = [SimpleNamespace(server="postgres", label=label) for label in ("pg_gin ranked", "pg_gin unranked")]
    es = SimpleNamespace(server="elasticsearch", label="elasticsearch")
    records = [points.warm_up(ctx, setup, v) for v in (*pg, es, pg[0], es)]
    assert ran == ["warm", "warm"]  # postgres once (both variants), elasticsearch once
    assert [r["ran_before_this_point"] for r in records] == [True, False, True, False, False]
    assert records[1]["variant"] == "pg_gin ranked" and records[1]["steady"] is True
    off = SimpleNamespace(warmup=WarmupRule(cap_s=0), dataset="d")
    assert points.warm_up(ctx, off, es) == {}
