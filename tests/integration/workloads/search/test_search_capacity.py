"""The core capacity experiment on real servers, for three search designs, at test size.

Under the split placement, Postgres GIN's ceiling is pgbench running the adapter's ranked
statement, OpenSearch's is vegeta sending the adapter's request bodies, and pg_search's (no load
tool here) the harness's closed loop; capacity at a target is a search with the harness's
open-loop probes and a steady confirmation, query latency from the intended start. Every step is
a run record named by stage, and the table is derived from the records alone: a ceiling with
which side set it, and a confirmed rate whose confirmations all held.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pglimits_core.experiments.capacity import CONFIRM, PROBE, CapacityPlan, measure_capacity
from pglimits_core.experiments.capacity_table import capacity_table
from pglimits_core.placement import placed
from pglimits_core.profiles import load_profile
from pglimits_core.record.records import load_records
from pglimits_core.servers.postgres_ext import PostgresExtServer
from pglimits_core.workloads.search.capacity import SearchDesign, items_per_s, reading
from pglimits_core.workloads.search.correctness import correctness_point
from pglimits_core.workloads.search.plan import setup_of
from pglimits_core.workloads.search.profile import SearchCapacity
from pglimits_core.workloads.search.variant import variant
from tests.conftest import placed_study

pytestmark = pytest.mark.integration

# probes at 100 and 200 queries/s (x 2 s: a p99 needs >= 100 queries), the rate found confirmed
# twice, stepping down at most twice; 4 open-loop workers, so a slow answer (OpenSearch on one
# core of a busy box: 2 closed-loop clients reached 256/s once) does not cap the offered rate
PLAN = CapacityPlan(targets_ms=(100.0,), ceiling_clients=(2,), ceiling_s=2, warmup_s=1, repetitions=1,
                    probe_s=2, start_rate=100, max_probes=2, steady_s=2, confirmations=2, max_steps_down=2)
SPEC = SearchCapacity(stream="mixed", workers=4)
#: which side set a ceiling; None when it cannot be told, e.g. the server's CPU set was busy with
#: a neighbour's work (other suites' servers share the box's server set), never a guess
LIMIT_SIDES = ("server", "load", "neither", None)
VARIANTS = {"pg_gin ranked": variant("pg_gin"), "opensearch": variant("opensearch"),
            "pg_search": variant("pg_search")}


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    PostgresExtServer.install()
    profile = load_profile("test")
    with placed_study(["postgres", "postgres_ext", "opensearch"], tmp_path_factory.mktemp("runs"), "search-capacity",
                      options={"opensearch": {"heap": "512m"}}) as (run, split):
        yield run, setup_of(profile.section("search"), profile), split


@pytest.fixture(scope="module")
def measured(study_run):
    run, setup, split = study_run
    records = {}
    with placed(split):
        for label, v in VARIANTS.items():  # a design is measured only after its answers are checked
            assert correctness_point(run, v, setup).status == "complete", label
            records[label] = measure_capacity(run, SearchDesign(v, SPEC, setup), PLAN)
    return records, load_records("search", run.ctx.runs_root)


def manifest_of(recorded) -> dict:
    return json.loads((recorded.path / "manifest.json").read_text())


def params_of(recorded) -> dict:
    return manifest_of(recorded)["params"]


def test_every_step_is_a_record_named_by_stage(measured):
    records, _ = measured
    for label, runs in records.items():
        stages = [params_of(r)["stage"] for r in runs]
        assert stages[0] == "ceiling" and PROBE in stages and CONFIRM in stages, (label, stages)
        assert all(params_of(r)["experiment"] == "capacity" and params_of(r)["stream"] == "mixed" for r in runs)
        steps = [params_of(r) for r in runs if params_of(r)["stage"] in (PROBE, CONFIRM)]
        checks = [params_of(r) for r in runs if params_of(r)["stage"] == "check"]
        # the agreement check: the harness on the tool's ceiling; pg_search's ceiling is the harness's own
        assert len(checks) == (0 if label == "pg_search" else 1) and all(c["clients"] == 2 for c in checks), label
        assert all(p["target_p99_ms"] == 100.0 and p["offered_per_s"] > 0 and p["workers"] == SPEC.workers
                   for p in steps), label
        assert all(p["window_s"] == PLAN.steady_s for p in steps if p["stage"] == CONFIRM), label
        assert all(p["window_s"] == PLAN.probe_s for p in steps if p["stage"] == PROBE), label


def test_the_ceiling_is_the_systems_own_tool_where_it_has_one(measured):
    records, _ = measured
    tools = {label: params_of(runs[0]).get("tool") for label, runs in records.items()}
    assert tools == {"pg_gin ranked": "pgbench", "opensearch": "vegeta", "pg_search": None}  # None: the harness
    script = params_of(records["pg_gin ranked"][0])["tool_scripts"]["pg_gin.sql"]
    assert "ORDER BY ts_rank(tsv, q) DESC, id LIMIT 10" in script
    for label, runs in records.items():
        ceiling = manifest_of(runs[0])
        print(f"{label}: ceiling limit {ceiling['limit']['side']}: {ceiling['limit']['reason']}")
        assert ceiling["limit"]["side"] in LIMIT_SIDES and ceiling["limit"]["reason"], (label, ceiling["limit"])
        if ceiling["limit"]["side"] is None:  # a neighbour on the server's set (other tests on this box)
            assert ceiling["limit"]["reason"].startswith("cannot tell"), ceiling["limit"]
        assert ceiling["params"]["clients"] == 2 and ceiling["params"]["repetition"] == 0


def test_the_rate_points_time_queries_from_the_intended_start(measured):
    records, _ = measured
    for label, runs in records.items():
        for recorded in (r for r in runs if params_of(r)["stage"] in (PROBE, CONFIRM)):
            entry = next(e for e in recorded.summary.entries if e.phase == "measure")
            assert entry.loop == "open" and entry.errors == 0, label
            assert entry.offered_rate == pytest.approx(params_of(recorded)["offered_per_s"], abs=0.1)
            assert entry.latencies["latency"].count > 0 and "schedule_lag" in entry.latencies, label


def test_the_table_gives_the_ceiling_its_limit_and_a_confirmed_rate(measured):
    _, records = measured
    table = capacity_table(records, reading, items_per_s)
    print(table.drop(columns=["curve"]).to_string())
    assert set(table.variant) == set(VARIANTS)
    assert set(table.side) == {"postgres", "dedicated"}
    for row in table.itertuples():
        assert row.ceiling_per_s > 0 and row.ceiling_limit in LIMIT_SIDES, row
        # 100 queries/s of the tiny corpus with 100 ms of room holds on any box this suite runs on
        assert row.capacity_per_s >= 100 and row.confirmations == "2 of 2 held", row
        assert row.p99_ms <= 100 and row.server_cpu_us_per_item > 0, row
        assert all(offered > 0 for offered, _, _ in row.curve)
        if row.variant == "pg_search":
            assert row.ceiling_by is None and row.agrees is None, row  # nothing to check the harness against
        else:
            assert row.ceiling_by in ("pgbench", "vegeta") and row.check_per_s > 0 and row.agrees in (True, False), row


def test_a_ceiling_stream_records_its_ceiling_alone_on_its_stream(study_run):
    """A match-set class measured by its ceiling alone: the tool's closed loop on that stream, no
    target search, no check, and the table keeps it apart from the same variant's mixed stream."""
    run, setup, split = study_run
    design = SearchDesign(VARIANTS["pg_gin ranked"], SPEC, setup, stream="frequent", ceiling_only=True)
    with placed(split):
        runs = measure_capacity(run, design, PLAN)
    assert [params_of(r)["stage"] for r in runs] == ["ceiling"] * PLAN.repetitions
    assert params_of(runs[0])["stream"] == "frequent" and params_of(runs[0])["tool"] == "pgbench"
    table = capacity_table(load_records("search", run.ctx.runs_root), reading, items_per_s, split_by="stream")
    frequent = table[(table.variant == "pg_gin ranked") & (table.stream == "frequent")]
    assert len(frequent) == 1 and frequent.iloc[0].ceiling_per_s > 0 and pd.isna(frequent.iloc[0].target_p99_ms)
    assert frequent.iloc[0].ceiling_by_clients[0]["p99_ms"] > 0  # pgbench's closed-loop p99 at those clients
