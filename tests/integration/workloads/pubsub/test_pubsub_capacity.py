"""The core capacity experiment on real servers, for pg_notify and redis_publish at a fan-out of
two, at test size.

Under the split placement the ceiling is the fan-out point's publishers flat out (closed loop) and
capacity at a target is a search with open-loop probes and a steady confirmation, delivery p99
from the intended publish. Every step is a run record named by stage, and the table is derived
from the records alone: a ceiling with which side set it, and a confirmed rate whose confirmations
all held with every message delivered.
"""

from __future__ import annotations

import json

import pytest

from pglimits_core.experiments.capacity import (
    CEILING,
    CONFIRM,
    PROBE,
    CapacityPlan,
    measure_capacity,
)
from pglimits_core.placement import placed
from pglimits_core.record.records import load_records
from pglimits_core.workloads.pubsub.capacity import capacity_table_of, pubsub_designs
from pglimits_core.workloads.pubsub.points import variant
from pglimits_core.workloads.pubsub.profile import PubsubCapacity
from pglimits_core.workloads.pubsub.tables import pubsub_frame
from tests.conftest import placed_study

pytestmark = pytest.mark.integration

SPEC = PubsubCapacity(targets_ms=[50.0], subscribers=[2], ceiling_clients=[2], ceiling_s=2, warmup_s=1,
                      repetitions=1, probe_s=1, start_rate=100, max_probes=2, steady_s=2, confirmations=2,
                      max_steps_down=1, publishers=2)
PLAN: CapacityPlan = SPEC.plan()
LABELS = {"pg_notify batch=1 subscribers=2", "redis_publish batch=1 subscribers=2"}


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    with placed_study(["postgres", "redis"], tmp_path_factory.mktemp("runs"), "pubsub-capacity") as started:
        yield started


@pytest.fixture(scope="module")
def measured(study_run):
    run, split = study_run
    designs = pubsub_designs(SPEC, [variant("pg_notify"), variant("redis_publish")])
    with placed(split):
        records = {d.label: measure_capacity(run, d, PLAN) for d in designs}
    return records, load_records("pubsub", run.ctx.runs_root)


def manifest_of(recorded) -> dict:
    return json.loads((recorded.path / "manifest.json").read_text())


def test_every_step_is_a_record_named_by_stage_with_the_capacity_params(measured):
    records, _ = measured
    assert set(records) == LABELS
    for label, runs in records.items():
        params = [manifest_of(r)["params"] for r in runs]
        stages = [p["stage"] for p in params]
        assert stages[0] == CEILING and PROBE in stages and CONFIRM in stages, (label, stages)
        assert all(p["experiment"] == "capacity" and p["variant"] == label and p["subscribers"] == 2 for p in params)
        assert params[0]["loop"] == "closed" and params[0]["publishers"] == params[0]["clients"] == 2
        for p in params[1:]:
            assert p["loop"] == "open" and p["rate"] == p["offered_per_s"] and p["target_p99_ms"] == 50.0, p
            assert p["window_s"] == (PLAN.steady_s if p["stage"] == CONFIRM else PLAN.probe_s), p


def limit_told(limit: dict) -> bool:
    """Which side set the limit, or "cannot tell" with the reason: the box is shared, and a
    neighbour busy on the server's CPU set leaves no side to name (never a guess)."""
    told = limit.get("side") in ("server", "load", "neither")
    return bool(limit.get("reason")) and (told or (limit.get("side") is None and limit["reason"].startswith("cannot tell")))


def test_the_ceiling_record_says_which_side_set_the_limit(measured):
    records, _ = measured
    for label, runs in records.items():
        ceiling = manifest_of(runs[0])
        assert runs[0].status == "complete", (label, runs[0].error)
        assert limit_told(ceiling["limit"]), (label, ceiling["limit"])


def test_the_table_from_the_records_alone_has_a_ceiling_and_a_confirmed_rate(measured):
    _, records = measured
    table = capacity_table_of(pubsub_frame(records))
    print(table.drop(columns=["curve"]).to_string())
    assert set(table.variant) == LABELS and set(table.side) == {"postgres", "dedicated"}
    for row in table.itertuples():
        assert row.ceiling_per_s > 0 and row.ceiling_limit in ("server", "load", "neither", None), row
        assert row.ceiling_deliveries_per_s == row.ceiling_per_s * 2
        # 100 messages/s to two subscribers with 50 ms of room holds on any box this suite runs on
        assert row.capacity_per_s >= 100 and row.confirmations == "2 of 2 held", row
        assert row.capacity_deliveries_per_s == row.capacity_per_s * 2
        assert row.p99_ms <= 50 and row.server_cpu_us_per_item > 0, row
        assert all(offered > 0 for offered, _, _ in row.curve)


def test_the_confirmed_windows_delivered_every_message(measured):
    records, _ = measured
    for label, runs in records.items():
        for recorded in runs:
            params = manifest_of(recorded)["params"]
            if params["stage"] == CONFIRM:
                outcome = params["outcome"]
                assert outcome["lost"] == 0 and outcome["not_received_by_cutoff"] == 0, (label, outcome)
                assert outcome["delivered"] == outcome["expected"] > 0, (label, outcome)
