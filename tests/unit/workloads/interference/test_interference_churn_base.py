"""The interference study's churn levels as shares of a capacity measured in the same run, the
horizon holds as mechanisms with their lengths, and autovacuum off until a dead-tuple count:
how the plan, the profile and the tables carry them (the acts themselves run against a real
server in tests/integration/workloads/interference/test_interference_acts.py and test_horizons.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.profiles import load_profile
from pglimits_core.workloads.interference import mechanisms
from pglimits_core.workloads.interference import plan as interference_plan
from pglimits_core.workloads.interference.churn_capacity import (
    ChurnRate,
    capacity_row,
    capacity_table,
)
from pglimits_core.workloads.interference.profile import InterferenceProfile
from pglimits_core.workloads.interference.tables import interference_frame

RAW = {"bystanders": {"fts_rate": 1, "vector_rate": 1, "vector_ef": 40}, "levels": [0, 0.5], "window_s": 1}


def test_a_hold_is_named_by_its_kind_and_length_and_read_back():
    assert mechanisms.hold_mechanism("idle_xid", 60) == "idle_xid_60s"
    assert mechanisms.hold_mechanism("rr_query", 1.2) == "rr_query_1.2s"
    assert mechanisms.kind_of("rr_query_300s") == "rr_query" and mechanisms.hold_seconds("rr_query_300s") == 300
    assert mechanisms.kind_of("churn") == "churn" and mechanisms.hold_seconds("held_xmin") is None
    assert mechanisms.kind_of("idle_xid") == "idle_xid"  # an older record's hold without its length
    with pytest.raises(ValueError, match="unknown hold kind"):
        mechanisms.hold_mechanism("vacuum_full", 60)


def test_acts_and_reading_order_know_the_holds():
    names = ["rr_query_300s", "churn", "idle_xid_300s", "baseline", "idle_xid_60s", "autovacuum_off", "control"]
    assert [mechanisms.is_act(n) for n in names] == [True, False, True, False, True, True, False]
    assert sorted(names, key=mechanisms.order_key) == ["baseline", "churn", "control", "autovacuum_off",
                                                       "idle_xid_60s", "idle_xid_300s", "rr_query_300s"]
    assert mechanisms.acts_mask(pd.Series(["churn", "rr_query_60s", None])).tolist() == [False, True, False]


def test_the_churn_base_is_stated_or_measured_never_both_nor_neither():
    assert InterferenceProfile.model_validate({**RAW, "queue_rate": 300}).churn_capacity is None
    measured = InterferenceProfile.model_validate({**RAW, "churn_capacity": {"clients": 4}})
    assert measured.queue_rate is None and measured.churn_capacity.duration_s == 30
    for raw in (RAW, {**RAW, "queue_rate": 300, "churn_capacity": {}}):
        with pytest.raises(ValueError, match="either queue_rate .* or churn_capacity"):
            InterferenceProfile.model_validate(raw)


def test_a_level_is_a_share_of_the_measured_capacity_and_an_unmeasured_one_fails_by_name():
    rates = ChurnRate()
    with pytest.raises(PGLimitsError, match="capacity was not measured .*its point has not run"):
        rates.at(0.5)
    assert rates.at(0) == 0.0  # the baseline needs no capacity
    summary = SimpleNamespace(entries=[SimpleNamespace(items_per_s=1234.56)])
    rates.learn(SimpleNamespace(status="complete", summary=summary, error=None))
    assert rates.at(0.25) == 308.6 and rates.describe() == {"source": "measured", "jobs_per_s": 1234.6}
    failed = ChurnRate()
    failed.learn(SimpleNamespace(status="failed", summary=summary, error="pgbench: 3 failed transactions"))
    with pytest.raises(PGLimitsError, match="pgbench: 3 failed transactions"):
        failed.at(0.5)
    assert ChurnRate(stated=300).at(0.5) == 150.0 and ChurnRate(stated=300).describe()["source"] == "stated"


def test_full_measures_the_capacity_first_then_holds_each_kind_and_length_once():
    profile = load_profile("full")
    section = profile.section("interference")
    points = interference_plan.plan(section, profile)
    assert points[0].experiment == "churn_capacity" and section.churn_capacity.duration_s >= 30
    holds = [p for p in points if mechanisms.is_hold(p.experiment) and not mechanisms.split_mitigation(p.experiment)[1]]
    assert sorted(p.experiment for p in holds) == ["idle_xid_300s", "idle_xid_60s", "rr_query_300s", "rr_query_60s"]
    assert {p.params["repetition"] for p in holds} == {0} and {p.params["level"] for p in holds} == {0.5}
    for p in holds:
        assert p.params["act"]["act_s"] == mechanisms.hold_seconds(p.experiment)
        assert p.params["window_s"] == section.holds.before_s + p.params["act"]["act_s"] + section.holds.after_s
    off = [p for p in points if p.experiment == "autovacuum_off"]
    assert len(off) == 1 and off[0].params["act"]["until_dead"] >= 300_000
    assert max(section.levels) >= 0.5 and section.holds.level >= 0.5  # the regime: >= half the capacity


def capacity_record(rate, status="complete"):
    return {"path": None, "summary": {"entries": [{"items_per_s": rate, "phase": "load"}]},
            "manifest": {"run_id": "cap", "status": status, "error": None,
                         "limit": {"side": "server", "reason": "server set saturated"},
                         "cpu": {"exact": {"server_cores_used": 0.97, "load_cores_used": 0.4,
                                           "server_set_busy": 0.98, "load_set_busy": 0.45}},
                         "params": {"experiment": "churn_capacity", "clients": 8, "duration_s": 30}}}


def test_the_capacity_run_is_a_table_of_its_own_and_no_window():
    assert capacity_row({"manifest": {"run_id": "w", "params": {"experiment": "churn"}}}) is None
    frame = interference_frame([capacity_record(1500.04)])
    table = capacity_table(frame)
    assert table.capacity_per_s.tolist() == [1500.0] and table.limit.tolist() == ["server"]
    assert table.capacity_of.tolist() == ["churn"] and table.unit.tolist() == ["jobs/s"]
    assert table.server_cores_used.tolist() == [0.97] and table.clients.tolist() == [8]
    from pglimits_core.workloads.interference.tables import inflation_table, stalls_table

    assert inflation_table(frame).empty and stalls_table(frame).empty
    assert capacity_table(pd.DataFrame()).empty


def test_a_mitigation_re_measures_a_planned_window_with_its_one_change():
    raw = {**RAW, "queue_rate": 100, "holds": {"kinds": ["idle_xid"], "seconds": [60], "level": 0.5,
                                                "before_s": 5, "after_s": 5}}
    section = InterferenceProfile.model_validate({**raw, "mitigations": [
        {"name": "tuned_autovacuum", "mechanism": "churn", "level": 0.5, "vacuum_threshold": 500},
        {"name": "holder_timeout", "mechanism": "idle_xid_60s", "level": 0.5, "timeout_s": 10}]})
    found = {m: (level, seconds, act) for m, level, seconds, act in interference_plan.windows(section, 0)}
    tuned, timed = found["churn | tuned_autovacuum"], found["idle_xid_60s | holder_timeout"]
    assert tuned[2]["settings"] == {"autovacuum_vacuum_scale_factor": 0, "autovacuum_vacuum_threshold": 500,
                                    "autovacuum_vacuum_cost_delay": 0}
    assert timed[1] == found["idle_xid_60s"][1] and timed[2] == {**found["idle_xid_60s"][2],
                                                                 "mitigation": "holder_timeout", "timeout_s": 10}
    assert mechanisms.kind_of("idle_xid_60s | holder_timeout") == "idle_xid" and not mechanisms.is_act(
        "churn | tuned_autovacuum")
    with pytest.raises(ValueError, match="holder_timeout needs timeout_s and a hold"):
        InterferenceProfile.model_validate({**raw, "mitigations": [
            {"name": "holder_timeout", "mechanism": "churn", "level": 0.5, "timeout_s": 10}]})
    unplanned = InterferenceProfile.model_validate({**raw, "mitigations": [
        {"name": "tuned_autovacuum", "mechanism": "churn", "level": 0.25}]})
    with pytest.raises(PGLimitsError, match="names churn at level 0.25, which this repetition does not plan"):
        interference_plan.windows(unplanned, 0)


def test_a_shared_bystander_is_offered_its_share_of_the_capacity_measured_first():
    from pglimits_core.workloads.interference.bystander_capacity import BystanderRates
    from pglimits_core.workloads.interference.plan import knobs_of

    profile = load_profile("full")
    section = profile.section("interference")
    shared = BystanderRates(dict(section.bystanders.shares))
    knobs = knobs_of(section, profile)
    assert knobs.fts_rate is None and knobs.data.oltp_rows == section.bystanders.oltp_rows
    with pytest.raises(PGLimitsError, match="the fts bystander's capacity was not measured"):
        shared.resolve(knobs)
    for tenant, rate in (("fts", 500.0), ("vector", 600.0), ("oltp", 7000.0)):
        summary = SimpleNamespace(entries=[SimpleNamespace(phase="warmup", ops_per_s=9e9),
                                           SimpleNamespace(phase="load", ops_per_s=rate)])
        shared.learn(tenant, SimpleNamespace(status="complete", summary=summary, error=None))
    resolved, shares = shared.resolve(knobs), section.bystanders.shares
    assert (resolved.fts_rate, resolved.vector_rate, resolved.oltp_rate) == (
        round(shares["fts"] * 500, 1), round(shares["vector"] * 600, 1), round(shares["oltp"] * 7000, 1))
    assert shared.describe()["oltp"] == {"share": shares["oltp"], "capacity_per_s": 7000.0}
    points = interference_plan.plan(section, profile)
    measured_first = [p.params["tenant"] for p in points if p.experiment == "bystander_capacity"]
    assert measured_first == ["fts", "vector", "oltp"]
    windows = [p for p in points if "bystanders" in p.params]
    assert windows and all(p.params["bystanders"] is windows[0].params["bystanders"] for p in windows)


def test_a_tenant_needs_a_rate_or_a_share_and_a_share_needs_its_capacity_run():
    base = {"vector_ef": 40, "vector_rate": 1}
    for raw, message in (({**base}, "give fts_rate or a share for fts"),
                         ({**base, "shares": {"fts": 0.1}}, "shares needs bystanders.capacity"),
                         ({**base, "shares": {"fts": 1.5}, "capacity": {}}, "a share is in \\(0, 1\\]")):
        with pytest.raises(ValueError, match=message):
            InterferenceProfile.model_validate({**RAW, "queue_rate": 10, "bystanders": raw})
