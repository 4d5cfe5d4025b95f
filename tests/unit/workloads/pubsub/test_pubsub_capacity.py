"""Pub/sub's capacity designs without servers: a rate point read from its outcome (an undelivered
message never holds), the ceiling's rate from the summary (what every subscriber kept up with),
the designs a profile section plans, and the table read back from hand-made records."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.experiments.capacity import slo_for
from pglimits_core.record.summary import OpSummary, Summary
from pglimits_core.workloads.pubsub.capacity import (
    capacity_table_of,
    items_per_s,
    pubsub_designs,
    reading,
)
from pglimits_core.workloads.pubsub.points import variant
from pglimits_core.workloads.pubsub.profile import PubsubCapacity


def outcome(p99_ms: float = 3.0, lost: int = 0, cut_off: int = 0, per_subscriber_per_s: float = 1000,
            subscribers: int = 10) -> dict:
    expected = 10_000 * subscribers
    delivered = expected - lost - cut_off
    return {"subscribers": subscribers, "lost": lost, "not_received_by_cutoff": cut_off, "expected": expected,
            "delivered": delivered, "delivered_ratio": delivered / expected,
            "deliveries_per_s": per_subscriber_per_s * subscribers,
            "delivery": {"count": 1000, "p50_ms": 1.0, "p99_ms": p99_ms}}


def test_a_point_holds_on_delivery_p99_from_the_intended_publish_with_every_message_delivered():
    slo = slo_for(10.0)
    held = reading(None, 1000, outcome())
    assert held.achieved == 1000 and held.p99_us == 3000 and slo.failure(held) is None
    assert slo.failure(reading(None, 1000, outcome(p99_ms=12.0))) is not None


@pytest.mark.parametrize(("lost", "cut_off"), [(1, 0), (0, 1)])
def test_one_undelivered_message_in_a_hundred_thousand_fails_the_point(lost, cut_off):
    point = reading(None, 1000, outcome(lost=lost, cut_off=cut_off))
    assert "backlog" in slo_for(10.0).failure(point) and point.extra["undelivered"] == 1


def test_a_point_without_an_outcome_never_holds():
    assert slo_for(10.0).failure(reading(None, 1000, None)) is not None


def entry(role: str, items_per_s: float, workers: int) -> OpSummary:
    return OpSummary(role=role, op=role, phase="measure", loop="closed", workers=workers, duration_s=30, ops=1,
                     items=int(items_per_s * 30), idle_polls=0, errors=0, missed=0, ops_per_s=1,
                     items_per_s=items_per_s)


def summary(run_id: str, published_per_s: float, received_per_s: float, subscribers: int = 10) -> Summary:
    return Summary(run_id=run_id, status="complete", entries=[entry("publisher", published_per_s, 4),
                                                              entry("subscriber", received_per_s, subscribers)])


def test_the_ceiling_is_what_every_subscriber_kept_up_with():
    assert items_per_s(summary("a", 5000, 10 * 3000)) == 3000  # publishers ran ahead of their subscribers
    assert items_per_s(summary("b", 2000, 10 * 2000)) == 2000
    assert items_per_s(Summary(run_id="c", status="complete", entries=[])) == 0.0


def test_a_design_per_chosen_variant_and_fan_out_and_a_typo_in_the_filter_is_an_error():
    from pglimits_core.profiles import load_profile
    from pglimits_core.workloads.pubsub.plan import plan

    spec = PubsubCapacity(variants=["pg_notify batch=1", "redis_publish batch=1"], subscribers=[1, 50])
    variants = [variant("pg_notify"), variant("pg_notify", batch=10), variant("redis_publish")]
    assert [d.label for d in pubsub_designs(spec, variants)] == [
        "pg_notify batch=1 subscribers=1", "redis_publish batch=1 subscribers=1",
        "pg_notify batch=1 subscribers=50", "redis_publish batch=1 subscribers=50"]
    profile = load_profile("quick")
    section = profile.section("pubsub")
    typo = section.model_copy(update={"capacity": PubsubCapacity(variants=["pg_notify batch=2"])})
    with pytest.raises(PGLimitsError, match="pg_notify batch=2"):
        plan(typo, profile)


def write_record(root, run_id: str, params: dict, run_summary: Summary, server: str) -> str:
    path = root / run_id
    path.mkdir()
    manifest = {"run_id": run_id, "status": "complete", "system": params["variant"].split()[0],
                "servers": {server: {}}, "params": {"experiment": "capacity", **params},
                "limit": {"side": "load"}, "cpu": {"exact": {"server_cores_used": 0.2}}}
    (path / "manifest.json").write_text(json.dumps(manifest))
    (path / "summary.json").write_text(run_summary.model_dump_json())
    return str(path)


def test_the_table_reads_each_points_outcome_from_its_own_record(tmp_path):
    label = "pg_notify batch=1 subscribers=10"
    base = {"variant": label, "subscribers": 10}
    ceiling = {**base, "stage": "ceiling", "clients": 4, "target_p99_ms": None, "window_s": 30}
    paths = [write_record(tmp_path, "c", ceiling, summary("c", 5000, 30_000), "postgres")]
    for run_id, rate, lost in (("p1", 1000, 0), ("p2", 2000, 3), ("k1", 1000, 0)):
        stage = "confirm" if run_id.startswith("k") else "probe"
        params = {**base, "stage": stage, "target_p99_ms": 10.0, "offered_per_s": rate, "window_s": 30,
                  "outcome": outcome(lost=lost, per_subscriber_per_s=rate)}
        paths.append(write_record(tmp_path, run_id, params, summary(run_id, rate, rate * 10), "postgres"))
    table = capacity_table_of(pd.DataFrame({"experiment": "capacity", "path": paths}))
    row = table.iloc[0]
    assert (row.ceiling_per_s, row.ceiling_deliveries_per_s, row.ceiling_limit) == (3000, 30_000, "load")
    assert (row.capacity_per_s, row.capacity_deliveries_per_s, row.probe_miss_per_s) == (1000, 10_000, 2000)
    assert pd.isna(row.capacity_miss_per_s)  # a probe's miss bounds nothing
    assert row.subscribers == 10 and row.confirmations == "1 of 1 held"


def test_no_capacity_runs_is_an_empty_table():
    frame = pd.DataFrame({"experiment": ["fanout"], "path": ["/nowhere"]})
    assert capacity_table_of(frame).empty and capacity_table_of(pd.DataFrame()).empty
