"""The search workload's capacity designs, without servers: which load drives each step (the
system's own tool for a ceiling where it has one, else the harness; the harness's open loop at
the absolute rate for a target), the capacity params reaching every point, how a record is read
(p99 from the intended start, achieved rate), and the profile section planned after the sweeps."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pglimits_core.errors import PGLimitsError
from pglimits_core.experiments.capacity import EXPERIMENT
from pglimits_core.profiles import load_profile
from pglimits_core.record.summary import LatencyStats, OpSummary, Summary
from pglimits_core.workloads.search import capacity
from pglimits_core.workloads.search.capacity import (
    SearchDesign,
    items_per_s,
    reading,
    search_designs,
)
from pglimits_core.workloads.search.plan import plan
from pglimits_core.workloads.search.profile import SearchCapacity
from pglimits_core.workloads.search.variant import variant

SPEC = SearchCapacity(stream="frequent", workers=3)
PARAMS = {"stage": "ceiling", "clients": 4, "repetition": 0, "target_p99_ms": None, "window_s": 2.5}


def stats(p50_us: int, p99_us: int) -> LatencyStats:
    return LatencyStats(count=500, mean_us=p50_us, max_us=p99_us, p50_us=p50_us, p95_us=p99_us, p99_us=p99_us,
                        p999_us=None)


def entry(role: str, loop: str, items_per_s: float, phase: str = "measure", **fields) -> OpSummary:
    return OpSummary(role=role, op="search", phase=phase, loop=loop, workers=2, duration_s=2, ops=1, items=1,
                     idle_polls=0, errors=0, missed=0, ops_per_s=items_per_s, items_per_s=items_per_s, **fields)


def summary(*entries: OpSummary) -> Summary:
    return Summary(run_id="r", status="complete", entries=list(entries))


@pytest.fixture
def calls(monkeypatch):
    """The point functions a design calls, recorded instead of run."""
    made: list[tuple[str, tuple, dict]] = []
    for name in ("ceiling_point", "throughput_point", "rate_point"):
        monkeypatch.setattr(capacity, name, lambda *a, _name=name, **k: made.append((_name, a, k)) or _name)
    return made


def test_a_ceiling_runs_the_systems_own_tool_in_whole_seconds(calls):
    design = SearchDesign(variant("pg_gin"), SPEC, setup="setup")
    assert design.ceiling_run("run", 4, 0.5, 2.5, PARAMS) == "ceiling_point"
    _, args, kwargs = calls[0]
    assert args == ("run", design.variant, "setup", "frequent", 4, 3, 1)  # pgbench's -T: rounded up
    assert kwargs == {"experiment": EXPERIMENT, "extra_params": PARAMS}


def test_a_system_without_a_tool_is_driven_to_its_ceiling_by_the_harness(calls):
    design = SearchDesign(variant("pg_search"), SPEC, setup="setup")
    assert design.ceiling_run("run", 4, 0.5, 2.5, PARAMS) == "throughput_point"
    _, args, kwargs = calls[0]
    assert args == ("run", design.variant, "setup", "frequent", 4, 2.5, 0.5)
    assert kwargs == {"experiment": EXPERIMENT, "extra_params": PARAMS}


def test_a_rate_point_is_the_harness_open_loop_at_the_absolute_rate(calls):
    design = SearchDesign(variant("opensearch"), SPEC, setup="setup")
    params = {**PARAMS, "stage": "probe", "offered_per_s": 750.0}
    assert design.rate_run("run", 750.0, 1, 5, params) == "rate_point"
    _, args, kwargs = calls[0]
    assert args == ("run", design.variant, "setup", "frequent", 750.0, 3, 5, 1)
    assert kwargs == {"experiment": EXPERIMENT, "extra_params": params}


def test_a_rate_point_reads_the_latency_from_the_intended_start_not_the_service_time():
    client = entry("client", "open", 480.0, offered_rate=500.0, achieved_rate=470.0,
                   latencies={"latency": stats(900, 12_000), "service_time": stats(800, 3_000)})
    warm = entry("client", "open", 480.0, phase="warmup", achieved_rate=10.0, latencies={"latency": stats(1, 1)})
    point = reading(summary(warm, client), 500.0)
    assert (point.offered, point.achieved, point.p50_us, point.p99_us, point.backlog_growth) == \
        (500.0, 470.0, 900, 12_000, 0.0)
    empty = reading(summary(), 500.0)
    assert empty.achieved == 0.0 and empty.p99_us is None  # holds no target


def test_a_ceiling_counts_the_tools_queries_or_the_harness_clients():
    assert items_per_s(summary(entry("tool", "closed", 1234.0), entry("tool", "closed", 9.0, phase="warmup"))) == 1234.0
    assert items_per_s(summary(entry("client", "closed", 321.0))) == 321.0
    assert items_per_s(summary()) == 0.0


def test_the_designs_are_the_profiles_variants():
    variants = [variant("pg_gin"), variant("pg_gin", ranked=False), variant("opensearch")]
    chosen = search_designs(SearchCapacity(variants=["pg_gin ranked", "opensearch"]), "setup", variants)
    assert [d.label for d in chosen] == ["pg_gin ranked", "opensearch"]
    assert [d.server for d in chosen] == ["postgres", "opensearch"]
    assert len(search_designs(SearchCapacity(), "setup", variants)) == 3 and search_designs(None, "s", variants) == []


def test_the_section_names_a_known_stream_and_targets_10_and_100_ms_by_default():
    assert SearchCapacity().targets_ms == [10.0, 100.0] and SearchCapacity().stream == "mixed"
    with pytest.raises(ValidationError, match="unknown stream 'sometimes'"):
        SearchCapacity(stream="sometimes")


@pytest.mark.parametrize("name", ["quick", "full"])
def test_the_profiles_plan_capacity_after_every_sweep(name):
    profile = load_profile(name)
    section = profile.section("search")
    points = plan(section, profile)
    planned = [p for p in points if p.experiment == EXPERIMENT]
    spec = section.capacity
    assert [p.label for p in planned] == spec.variants * (1 + len(spec.ceiling_streams))
    assert [p.params["stream"] for p in planned] == [s for s in [spec.stream, *spec.ceiling_streams] for _ in spec.variants]
    assert all(p.params["targets_ms"] == ([] if p.params["stream"] != spec.stream else spec.targets_ms) for p in planned)
    writes = [p for p in points if p.experiment == "writes"]  # writes while querying changes the index: last
    assert points[len(points) - len(writes) - len(planned):len(points) - len(writes)] == planned
    assert points[len(points) - len(writes):] == writes
    assert section.capacity.start_rate * section.capacity.probe_s >= 400  # a p99 even two steps down


def test_a_capacity_naming_no_variant_of_the_profile_is_a_plan_error():
    profile = load_profile("test")
    section = profile.section("search").model_copy(update={"capacity": SearchCapacity(variants=["pg_gin rankd"])})
    with pytest.raises(PGLimitsError, match="search.capacity.variants names 'pg_gin rankd'"):
        plan(section, profile)


def test_a_ceiling_stream_is_a_design_of_its_own_with_no_target_and_no_check(calls):
    spec = SearchCapacity(stream="mixed", ceiling_streams=["rare", "frequent"], workers=3)
    designs = search_designs(spec, "setup", [variant("pg_gin"), variant("opensearch")])
    assert [(d.label, d.params["stream"], d.targets_ms) for d in designs] == [
        ("pg_gin ranked", "mixed", None), ("opensearch", "mixed", None),  # None: the plan's targets
        ("pg_gin ranked", "rare", ()), ("opensearch", "rare", ()),
        ("pg_gin ranked", "frequent", ()), ("opensearch", "frequent", ())]
    rare = designs[2]
    rare.ceiling_run("run", 4, 0.5, 2.5, PARAMS)
    assert calls[0][1][3] == "rare"  # the ceiling runs on its own stream
    assert rare.check_run("run", 4, 0.5, 2.5, PARAMS) is None and designs[0].check_run("run", 4, 1, 2, PARAMS)


@pytest.mark.parametrize("streams", [["mixed"], ["rare", "rare"], ["sometimes"]])
def test_ceiling_streams_are_known_distinct_and_not_the_targets_stream(streams):
    with pytest.raises(ValidationError):
        SearchCapacity(stream="mixed", ceiling_streams=streams)
