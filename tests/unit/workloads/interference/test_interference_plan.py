"""The interference plan from each profile: its levels, mechanisms and windows, within each
profile's time budget; the dedicated side (OpenSearch, Qdrant, Redis at the same rates, baseline
and churn levels only) planned after one set-up point per server; the backlog recorded; the
sides table's reading from both sides' inflation; the engines' samplers on canned answers; the
pgbench open-loop option leaves the closed-loop command as it was."""

from __future__ import annotations

import pytest

from pglimits_core.load.tools.pgbench import pgbench_argv
from pglimits_core.profiles import load_profile
from pglimits_core.registry import workload
from pglimits_core.workloads.interference import plan as interference_plan
from pglimits_core.workloads.interference.churn import churn_script, control_script
from pglimits_core.workloads.interference.mechanisms import is_act, split_mitigation
from pglimits_core.workloads.interference.tables import all_tables, interference_frame, sides_table

#: seconds each profile's study may take (the one-off data load apart); full: its sitting at 3e3639bd
#: took 77.5 min (estimated 77.1); the dedicated side's 25 % level adds ~2.5 min, the batch_claim and the
#: REPEATABLE READ timeout mitigations ~5.5 more (estimated 85.0)
BUDGET_S = {"test": 175, "quick": 200, "full": 88 * 60}  # test: +3 s of dedicated warm-up load
#: the mechanisms every profile plans (the holds' names carry their lengths)
MECHANISMS = {"baseline", "churn", "control", "autovacuum_off"}
DEDICATED_SERVERS = {"opensearch", "qdrant", "redis"}


def rate_of(p):
    """A planned window's offered churn, as its point will resolve it."""
    return p.params["rates"].at(p.params["level"])


def planned(profile_name: str):
    profile = load_profile(profile_name)
    section = profile.section("interference")
    return section, workload("interference").plan(section, profile)


@pytest.mark.parametrize("profile_name", sorted(BUDGET_S))
def test_every_profile_plans_every_mechanism_within_its_budget(profile_name):
    section, planned_points = planned(profile_name)
    points = [p for p in planned_points if p.label == "postgres" and "capacity" not in p.experiment]
    assert {p.experiment for p in points} >= MECHANISMS
    assert {p.server for p in points} == {"postgres"}
    assert {p.server for p in planned_points} == ({"postgres"} | (DEDICATED_SERVERS if section.dedicated else set())
                                                  | ({"postgres_queue"} if section.split else set()))
    split = [p for p in planned_points if p.label == "split"]
    assert {p.params["level"] for p in split} == set(section.split.levels if section.split else [])
    assert all(p.experiment in ("baseline", "churn") and p.params["act"] is None for p in split)
    assert 0 in section.levels and {p.params["level"] for p in points if p.experiment == "churn"} \
        == {lv for lv in section.levels if lv > 0}
    rates = points[0].params["rates"]
    if section.churn_capacity is not None:  # the capacity runs first; the windows share what it learns
        assert planned_points[0].experiment == "churn_capacity" and planned_points[0].params["rates"] is rates
        rates.measured = 1000.0
    for p in points:
        assert p.params["rates"] is rates
        assert rate_of(p) == pytest.approx(p.params["level"] * rates.base(), abs=0.1)
        # an act window carries its act; a mitigated plain window carries only its change
        mitigation = split_mitigation(p.experiment)[1]
        assert (p.params["act"] is not None) == (is_act(p.experiment) or mitigation is not None)
        if mitigation is not None:
            assert p.params["act"]["mitigation"] == mitigation
    assert interference_plan.estimate_s(section) <= BUDGET_S[profile_name]
    side = (f"dedicated side: {len(section.dedicated.levels)} windows" if section.dedicated
            else "dedicated side: not in this profile")
    assert "min" in interference_plan.describe(section) and side in interference_plan.describe(section)


def test_full_repeats_every_level_at_least_three_times():
    section, points = planned("full")
    assert section.repetitions >= 3
    for level in section.levels:
        assert sum(p.params.get("level") == level and p.experiment in ("baseline", "churn") and p.label == "postgres"
                   for p in points) >= 3
    windows = {p.params["window_s"] for p in points if p.experiment == "churn"}
    # at autovacuum_naptime = 10 s (configs/servers/postgres.conf) a 30 s window can hold 3 cycles and
    # must hold min_cycles (>= 2) to count as long enough: >= 6 cycles per level over the repetitions
    assert min(windows) >= 30 and section.min_cycles >= 2
    assert section.repetitions * section.min_cycles >= 3


def test_a_stall_at_a_level_the_sweep_does_not_run_is_refused():
    from pglimits_core.workloads.interference.profile import InterferenceProfile

    raw = {"bystanders": {"fts_rate": 1, "vector_rate": 1, "vector_ef": 40}, "queue_rate": 10, "levels": [0, 1.0],
           "window_s": 1, "held_xmin": {"before_s": 1, "act_s": 1, "after_s": 1, "level": 0.5}}
    with pytest.raises(ValueError, match="held_xmin level 0.5"):
        InterferenceProfile.model_validate(raw)
    with pytest.raises(ValueError, match="levels must include 0"):
        InterferenceProfile.model_validate({**raw, "levels": [1.0], "held_xmin": None})


def test_without_records_the_sides_table_describes_every_side():
    sides = sides_table()
    assert set(sides.side) == {"postgres", "split", "dedicated"}
    status = sides.set_index("side").status
    assert status["dedicated"].startswith("built:") and "Postgres mechanisms" in status["dedicated"]


def test_no_records_give_empty_tables_not_a_crash():
    tables = all_tables(interference_frame([]))
    assert tables["inflation"].empty and tables["timeline"].empty and not tables["sides"].empty


def test_churn_and_control_scripts_run_the_queue_sql():
    churn = churn_script(845)
    assert "INSERT INTO jobs" in churn and "UPDATE jobs" in churn and "DELETE FROM jobs" in churn
    assert ":client_id" in churn and "\\gset" in churn
    control = control_script(845)
    statements = (lambda script: script.count(";\n") + script.count("\\gset"))  # noqa: E731
    assert "FOR UPDATE SKIP LOCKED" in control and statements(control) == 3 == statements(churn)
    # the control writes as often as the churn (three autocommitted INSERTs, the job's payload
    # twice) and never changes or removes a row: no dead tuple
    assert control.count("INSERT INTO interference_control_") == 3 and "repeat('78', :payload_bytes)" in control
    assert "substr(payload, 1, :copy_bytes) FROM interference_control WHERE" in control
    assert not any(verb in control for verb in ("UPDATE interference", "DELETE FROM", "INTO jobs", "FROM jobs"))


def test_pgbench_rate_is_optional_and_changes_nothing_without_it():
    closed = pgbench_argv("pgbench", ["db"], "s.sql", 4, 2, 10)
    assert closed == ["pgbench", "-n", "-M", "prepared", "-f", "s.sql", "-c", "4", "-j", "2", "-T", "10", "-l",
                      "--log-prefix=pgbench_log", "db"]
    opened = pgbench_argv("pgbench", ["db"], "s.sql", 4, 2, 10, rate=250.0)
    assert opened[opened.index("-R") + 1] == "250" and [a for a in opened if a not in ("-R", "250")] == closed


def with_dedicated(profile_name: str):
    """The profile's section and plan, with the integration test's dedicated side where it has none."""
    from pglimits_core.workloads.interference.profile import Dedicated

    profile = load_profile(profile_name)
    section = profile.section("interference")
    if section.dedicated is None:
        section = section.model_copy(update={"dedicated": Dedicated(levels=[0, 1.0], churn_workers=1, heap="512m")})
    return section, interference_plan.plan(section, profile)


@pytest.mark.parametrize("profile_name", sorted(BUDGET_S))
def test_the_dedicated_side_runs_its_levels_after_its_setup_points(profile_name):
    section, points = with_dedicated(profile_name)
    setup = [i for i, p in enumerate(points) if p.experiment == "dedicated_setup"]
    dedicated = [i for i, p in enumerate(points) if p.label == "dedicated"]
    assert {points[i].server for i in setup} == DEDICATED_SERVERS and max(setup) < min(dedicated)
    assert {points[i].params["warmup_queries"] for i in setup} == {section.dedicated.engine_warmup_queries}
    assert {points[i].experiment for i in dedicated} == {"baseline", "churn"}  # acts and control: Postgres-only
    assert {points[i].params["level"] for i in dedicated} == set(section.dedicated.levels)
    assert len(dedicated) == section.repetitions * len(section.dedicated.levels)
    points[0].params["rates"].measured = 1000.0  # a measured base, as the capacity point learns it
    postgres = {(p.params["level"], rate_of(p), p.params["window_s"]) for p in points
                if p.label == "postgres" and p.experiment in ("baseline", "churn")}
    for i in dedicated:  # the same rates and window as the Postgres side at the same level
        p = points[i]
        assert p.params["rates"] is points[0].params["rates"]
        assert (p.params["level"], rate_of(p), p.params["window_s"]) in postgres
        assert p.params["knobs"] == next(q.params["knobs"] for q in points if q.label == "postgres")
    assert interference_plan.server_options(section) == {"opensearch": {"heap": section.dedicated.heap}}


def test_dedicated_levels_must_be_the_studys_and_hold_a_baseline():
    from pglimits_core.workloads.interference.profile import InterferenceProfile

    raw = {"bystanders": {"fts_rate": 1, "vector_rate": 1, "vector_ef": 40}, "queue_rate": 10, "levels": [0, 1.0],
           "window_s": 1}
    assert InterferenceProfile.model_validate({**raw, "dedicated": {"levels": [0, 1.0]}}).dedicated.levels == [0, 1.0]
    with pytest.raises(ValueError, match="dedicated levels \\[0.5\\]"):
        InterferenceProfile.model_validate({**raw, "dedicated": {"levels": [0, 0.5]}})
    with pytest.raises(ValueError, match="dedicated levels must include 0"):
        InterferenceProfile.model_validate({**raw, "dedicated": {"levels": [1.0]}})
    assert InterferenceProfile.model_validate(raw).dedicated is None
    assert interference_plan.dedicated_windows(InterferenceProfile.model_validate(raw)) == []


def test_the_backlog_is_planned_recorded_and_costed():
    sizes = {}
    for name in BUDGET_S:
        section, points = planned(name)
        sizes[name] = section.backlog
        knobs = points[-1].params["knobs"].params()
        assert knobs["backlog"] == section.backlog and knobs["queue_rate"] == section.queue_rate
        assert f"backlog {section.backlog:,} jobs" in interference_plan.describe(section)
    assert sizes["full"] >= sizes["quick"] >= 10_000  # vacuum needs pages to scan
    section, _ = planned("full")
    more = section.model_copy(update={"backlog": section.backlog * 2})
    assert interference_plan.estimate_s(more) > interference_plan.estimate_s(section)


def test_every_window_says_whether_it_sustained_its_offered_rate():
    from pglimits_core.workloads.interference.points import SUSTAINED_SHARE, churn_rates

    assert churn_rates(300, 299.0)["sustained"] is True
    assert churn_rates(300, 300 * SUSTAINED_SHARE - 1)["sustained"] is False
    assert churn_rates(0, 0.0)["sustained"] is None and churn_rates(10, 9.99, failed=0)["failed"] == 0


def record(side, mechanism, level, p99, jobs=None, rate=0.0):
    tenants = {t: {"count": 100, "p50_ms": p99 / 2, "p99_ms": p99, "max_ms": p99 * 2} for t in ("fts", "vector")}
    return {"manifest": {"run_id": f"{side}-{mechanism}-{level}", "status": "complete", "cpu": {},
                         "params": {"side": side, "mechanism": mechanism, "level": level, "churn_rate": rate,
                                    "repetition": 0, "window_s": 10, "min_cycles": 1, "backlog": 1000,
                                    "outcome": {"tenants": tenants, "churn": {"jobs_per_s": jobs},
                                                "vacuum": {"cycles": 1}}}}}


def test_the_sides_table_reads_removed_moved_and_neither():
    from pglimits_core.workloads.interference.sides import BAND

    records = [record("postgres", "baseline", 0, 2.0), record("postgres", "churn", 1.0, 2.0 * BAND * 2, 300, 300),
               record("dedicated", "baseline", 0, 3.0), record("dedicated", "churn", 1.0, 3.0, 299, 300),
               record("postgres", "churn", 0.5, 2.0 * BAND * 2, 150, 150),
               record("dedicated", "churn", 0.5, 3.0 * BAND * 2, 150, 150)]
    tables = all_tables(interference_frame(records))
    sides = tables["sides"].set_index(["level", "tenant"])
    assert sides.loc[(1.0, "fts"), "reading"].startswith("removed")
    assert sides.loc[(0.5, "vector"), "reading"].startswith("moved")
    assert sides.loc[(1.0, "fts"), "dedicated_ratio"] == 1.0
    inflation = tables["inflation"]
    assert set(inflation.side) == {"postgres", "dedicated"}  # each side against its own baseline
    assert inflation[(inflation.side == "dedicated") & (inflation.mechanism == "baseline")].ratio.eq(1.0).all()
    assert tables["alignment"].empty or set(tables["alignment"].mechanism) <= MECHANISMS
    unsustained = all_tables(interference_frame(records[:2] + [record("dedicated", "baseline", 0, 3.0),
                                                               record("dedicated", "churn", 1.0, 9.0, 100, 300)]))
    assert "not sustained" in unsustained["sides"].set_index(["level", "tenant"]).loc[(1.0, "fts"), "reading"]
    only_postgres = all_tables(interference_frame(records[:2]))["sides"]
    assert only_postgres.reading.str.contains("dedicated not measured").all()


def test_the_engines_samplers_read_their_counters_per_second():
    from pglimits_core.workloads.interference.engines import (
        OpenSearchSampler,
        QdrantSampler,
        background_summary,
    )

    def node(merges, gc_ms):
        return {"nodes": {"n1": {"indices": {"merges": {"current": 0, "total": merges, "total_time_in_millis": 5},
                                             "refresh": {"total": 3, "total_time_in_millis": 1},
                                             "flush": {"total": 1}},
                                 "jvm": {"gc": {"collectors": {"young": {"collection_count": 1,
                                                                         "collection_time_in_millis": gc_ms}}}}}}}
    answers = iter([node(1, 10), node(3, 25)])
    sampler = OpenSearchSampler("http://127.0.0.1:1", get=lambda url, timeout_s: next(answers))
    first, second = sampler.sample(0.0), sampler.sample(1.0)
    assert first["os_merges_delta"] is None and second["os_merges_delta"] == 2 and second["os_gc_young_ms_delta"] == 15
    qdrant = QdrantSampler("http://127.0.0.1:1", "c", get=lambda url, timeout_s: {"result": {
        "status": "green", "optimizer_status": "ok", "segments_count": 2, "indexed_vectors_count": 9}})
    assert qdrant.sample(0.0) == {"qdrant_status": "green", "qdrant_optimizer_ok": True, "qdrant_optimizer_status": "ok",
                                  "qdrant_segments": 2, "qdrant_indexed_vectors": 9}
    import pandas as pd

    frame = pd.DataFrame([{"sampler": "opensearch", **first}, {"sampler": "opensearch", **second},
                          {"sampler": "qdrant", **qdrant.sample(1.0)}])
    summary = background_summary(frame)
    assert summary["opensearch_merges"] == 2 and summary["opensearch_gc_ms"] == 15
    assert summary["qdrant_segment_counts"] == [2] and summary["qdrant_optimizer_busy_seconds"] == 0
    assert background_summary(pd.DataFrame())["opensearch_merges"] is None


def test_a_churn_job_carries_its_id_at_the_profiles_size():
    from pglimits_core.datasets.messages import message_id
    from pglimits_core.workloads.interference.ops import job_payload

    job = job_payload("w1-7", 845)
    assert len(job) == 845 and message_id(job) == "w1-7"


def test_quick_and_full_run_the_dedicated_side_at_every_churn_level_or_a_subset():
    for name in ("quick", "full"):
        section, _ = planned(name)
        assert section.dedicated is not None and 0 in section.dedicated.levels
        assert any(level > 0 for level in section.dedicated.levels)


def test_levels_alternate_their_order_by_repetition_on_both_sides():
    section, points = planned("full")
    for r in range(section.repetitions):
        rep = [p for p in points if p.params.get("repetition") == r and p.recorded]
        for label in ("postgres", "dedicated"):
            levels = [p.params["level"] for p in rep if p.label == label and p.experiment in ("baseline", "churn")]
            assert levels == sorted(levels, reverse=r % 2 == 1), (r, label, levels)
        assert [p.params["run_order"] for p in rep] == list(range(len(rep)))
        assert {p.params["level_order"] for p in rep} == {interference_plan.level_order(r)}
        # the control rotates with the levels: after the churn in even repetitions, before it in odd
        postgres = [p.experiment for p in rep if p.label == "postgres"]
        assert (postgres.index("control") > postgres.index("churn")) == (r % 2 == 0), (r, postgres)
        # the acts and the mitigations stay after every plain window
        plain = [i for i, m in enumerate(postgres) if not is_act(m) and split_mitigation(m)[1] is None]
        assert max(plain) < min((i for i, m in enumerate(postgres) if i not in plain), default=len(postgres)), postgres
    assert interference_plan.plan(section, load_profile("full")) == points  # deterministic


def test_the_dedicated_side_warms_under_load_before_each_repetitions_first_window():
    section, points = planned("full")
    assert section.dedicated.warmup_window_s > 0
    for r in range(section.repetitions):
        rep = [p for p in points if p.params.get("repetition") == r and p.label.startswith("dedicated")]
        assert rep[0].experiment == "dedicated_warmup" and not rep[0].recorded
        assert rep[0].params["seconds"] == section.dedicated.warmup_window_s
        assert all(p.recorded for p in rep[1:])


def test_autovacuum_off_is_read_in_every_spelling_the_server_keeps():
    from pglimits_core.workloads.interference.acts import autovacuum_off_option

    assert all(autovacuum_off_option(f"autovacuum_enabled={v}") for v in ("off", "false", "OFF", "f", "0"))
    assert not any(autovacuum_off_option(o) for o in ("autovacuum_enabled=on", "autovacuum_enabled=true",
                                                     "autovacuum_vacuum_insert_threshold=-1"))
