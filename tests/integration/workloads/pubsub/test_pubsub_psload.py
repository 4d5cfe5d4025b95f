"""psload, pub/sub's compiled open-loop load, on real servers under the split placement: LISTEN /
NOTIFY and SUBSCRIBE / PUBLISH at a rate any box offers, 10 subscribers. Each run is an ordinary
tool record whose outcome has the fan-out study's shape — every message meant for the window
delivered to every subscriber, counted message by message, delivery timed from the intended
publish — and whose summary's delivery histogram agrees with psload's own exact percentiles; the
capacity design drives its rate points with it when the profile says so; a batched variant is a
one-line error."""

from __future__ import annotations

import json

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.placement import placed
from pglimits_core.workloads.pubsub.capacity import PubsubDesign, reading
from pglimits_core.workloads.pubsub.points import variant
from pglimits_core.workloads.pubsub.profile import PubsubCapacity
from pglimits_core.workloads.pubsub.psload_points import psload_point, psload_system
from tests.conftest import placed_study

pytestmark = pytest.mark.integration

RATE, SUBSCRIBERS, WINDOW_S = 500.0, 10, 2.0
VARIANTS = [variant("pg_notify"), variant("redis_publish")]


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    with placed_study(["postgres", "redis"], tmp_path_factory.mktemp("runs"), "psload") as started:
        yield started


@pytest.fixture(scope="module")
def measured(study_run):
    run, split = study_run
    with placed(split):
        return {v.label: psload_point(run, v, SUBSCRIBERS, 2, RATE, WINDOW_S, 0.5, 64, "psload-test")
                for v in VARIANTS}


@pytest.mark.parametrize("label", [v.label for v in VARIANTS])
def test_every_message_reaches_every_subscriber_timed_from_its_intended_publish(measured, label):
    recorded = measured[label]
    assert recorded.status == "complete", recorded.error
    manifest = json.loads((recorded.path / "manifest.json").read_text())
    params, outcome = manifest["params"], manifest["params"]["outcome"]
    assert params["tool"] == "psload" and params["tool_commands"][0]["argv"][0].endswith("psload")
    in_window = outcome["published_in_window"]
    assert in_window == pytest.approx(RATE * WINDOW_S, abs=2)
    assert outcome["lost"] == outcome["not_received_by_cutoff"] == outcome["duplicates"] == 0, outcome
    assert outcome["delivered_ratio"] == 1.0 and outcome["expected"] == outcome["published"] * SUBSCRIBERS
    assert outcome["delivery"]["count"] == in_window * SUBSCRIBERS
    assert all(s["drain_complete"] and s["lost"] == 0 for s in outcome["per_subscriber"])
    entries = {e.role: e for e in recorded.summary.entries if e.phase == "measure"}
    publisher, subscriber = entries["publisher"], entries["subscriber"]
    assert publisher.loop == "open" and publisher.offered_rate == RATE and publisher.achieved_rate >= 0.95 * RATE
    # the record's histogram and psload's own exact percentile agree (HDR's 3 significant digits)
    delivery = subscriber.latencies["delivery"]
    assert delivery.count == outcome["delivery"]["count"]
    assert delivery.p99_us == pytest.approx(outcome["delivery"]["p99_ms"] * 1000, rel=0.01, abs=2)
    point = reading(recorded.summary, RATE, outcome)
    assert point.p99_us == pytest.approx(outcome["delivery"]["p99_ms"] * 1000) and point.backlog_growth == 0.0
    assert point.achieved == pytest.approx(RATE, rel=0.05)
    assert manifest["placement"]["held"] is True and "load_cores_used" in manifest["cpu"]["exact"]


def test_the_capacity_design_drives_its_rate_points_with_psload_when_the_profile_says_so(study_run):
    run, split = study_run
    design = PubsubDesign(variant("redis_publish"), 3, PubsubCapacity(publishers=2, load="psload"))
    with placed(split):
        recorded = design.rate_run(run, 200.0, 0.5, 1.0, {"stage": "probe", "target_p99_ms": 10.0})
    manifest = json.loads((recorded.path / "manifest.json").read_text())
    assert manifest["params"]["tool"] == "psload" and manifest["params"]["variant"] == "redis_publish batch=1 subscribers=3"
    assert manifest["params"]["outcome"]["subscribers"] == 3 and manifest["params"]["stage"] == "probe"


def test_a_batched_variant_is_refused_in_one_line():
    with pytest.raises(PGLimitsError, match="psload does not drive pg_notify batch=10"):
        psload_system(variant("pg_notify", batch=10))


def test_the_compiled_ceiling_is_psload_flat_out_and_the_harness_checks_it_on_its_terms(study_run):
    from pglimits_core.workloads.pubsub.capacity import items_per_s

    run, split = study_run
    design = PubsubDesign(variant("pg_notify"), 3, PubsubCapacity(publishers=2, load="psload"))
    params = {"stage": "ceiling", "clients": 2, "repetition": 0, "target_p99_ms": None, "window_s": 1.0}
    with placed(split):
        ceiling = design.ceiling_run(run, 2, 0.5, 1.0, params)
        check = design.check_run(run, 2, 0.5, 1.0, {**params, "stage": "check"})
    manifest = json.loads((ceiling.path / "manifest.json").read_text())
    assert manifest["params"]["tool"] == "psload" and manifest["params"]["loop"] == "closed"
    outcome = manifest["params"]["outcome"]
    assert outcome["lost"] == outcome["not_received_by_cutoff"] == 0, outcome
    publisher = next(e for e in ceiling.summary.entries if e.role == "publisher" and e.phase == "measure")
    assert publisher.loop == "closed" and items_per_s(ceiling.summary) > 0
    checked = json.loads((check.path / "manifest.json").read_text())["params"]
    assert checked.get("tool") is None and checked["stage"] == "check" and checked["subscribers"] == 3
