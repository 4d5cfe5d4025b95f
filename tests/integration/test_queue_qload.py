"""qload, the queue's compiled open-loop load, on real servers: every design with a server, at a
rate any box offers, under the split placement. Each run is an ordinary tool record whose summary
has the harness's shape (producer: open loop at the offered rate; consumer: send → claim from the
intended send over every message of the window), every message sent in the window is claimed and
acknowledged (nothing left in the queue), and the capacity design drives its rate points with it
when the profile says so. SQLite has no server to drive: asking for it is a one-line error.
"""

from __future__ import annotations

import json

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.placement import placed
from pglimits_core.workloads.queue.capacity import QueueDesign
from pglimits_core.workloads.queue.points import reading, variant
from pglimits_core.workloads.queue.prefill_size import PrefillSizer
from pglimits_core.workloads.queue.profile import QueueCapacity
from pglimits_core.workloads.queue.qload_points import qload_point, qload_verbs
from tests.conftest import placed_study

pytestmark = pytest.mark.integration

RATE = 400.0
VARIANTS = [variant("pg_skiplocked", batch=1), variant("pg_delete", batch=10, synchronous_commit="off"),
            variant("pgmq", batch=1), variant("redis_reliable"), variant("redis_reliable", pipeline=10, batch=10)]


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    with placed_study(["postgres", "redis"], tmp_path_factory.mktemp("runs"), "qload") as started:
        yield started


@pytest.fixture(scope="module")
def measured(study_run):
    run, split = study_run
    with placed(split):
        return {v.label: qload_point(run, v, RATE, producers=2, consumers=2, duration_s=2, warmup_s=0.5,
                                     experiment="qload-test") for v in VARIANTS}


def manifest_of(recorded) -> dict:
    return json.loads((recorded.path / "manifest.json").read_text())


@pytest.mark.parametrize("label", [v.label for v in VARIANTS])
def test_every_message_of_the_window_is_claimed_and_timed_from_its_intended_send(measured, label):
    recorded = measured[label]
    assert recorded.status == "complete", recorded.error
    manifest = manifest_of(recorded)
    params = manifest["params"]
    assert params["tool"] == "qload" and params["tool_commands"][0]["argv"][0].endswith("qload")
    reported = params["outcome"]["tool_reported"]
    assert reported["errors"] == 0 and reported["not_claimed_by_cutoff"] == 0, reported
    assert reported["sent_in_window"] == reported["claimed_of_window"] == pytest.approx(RATE * 2, abs=2)
    assert params["outcome"]["left_after_run"] == 0  # every claim acknowledged, nothing left behind
    entries = {e.role: e for e in recorded.summary.entries if e.phase == "measure"}
    producer, consumer = entries["producer"], entries["consumer"]
    assert producer.loop == "open" and producer.offered_rate == RATE and producer.achieved_rate >= 0.95 * RATE
    send_to_claim = consumer.latencies["end_to_end"]
    assert send_to_claim.count == reported["claimed_of_window"] and consumer.missed == 0
    # the summary's histogram and qload's own exact percentile agree (HDR's 3 significant digits)
    assert send_to_claim.p99_us == pytest.approx(reported["send_to_claim"]["p99_us"], rel=0.01, abs=2)
    point = reading(recorded.summary, RATE)
    assert point.p99_us == send_to_claim.p99_us and point.achieved >= 0.95 * RATE and point.backlog_growth < 0.05
    assert manifest["placement"]["held"] is True and "load_cores_used" in manifest["cpu"]["exact"]


def test_the_session_settings_of_the_variant_reach_qloads_sessions(measured):
    argv = manifest_of(measured["pg_delete batch=10 synchronous_commit=off"])["params"]["tool_commands"][0]["argv"]
    assert argv[argv.index("-settings") + 1] == "synchronous_commit=off"


def test_the_capacity_design_drives_its_rate_points_with_qload_when_the_profile_says_so(study_run):
    run, split = study_run
    spec = QueueCapacity(producers=2, consumers=2, prefill=10_000, load="qload")
    design = QueueDesign(variant("pg_delete", batch=1), spec, PrefillSizer())
    with placed(split):
        recorded = design.rate_run(run, RATE, 0.5, 1.5, {"stage": "probe", "target_p99_ms": 100.0})
    assert recorded.status == "complete", recorded.error
    params = manifest_of(recorded)["params"]
    assert params["tool"] == "qload" and params["experiment"] == "capacity" and params["stage"] == "probe"


def test_an_embedded_queue_has_no_server_to_drive():
    with pytest.raises(PGLimitsError, match="qload does not drive sqlite_wal"):
        qload_verbs(variant("sqlite_wal"))
