"""Pub/sub accounting: message encoding, per-publisher counting, losses, duplicates, reordering,
what was published before a subscriber listened, and the tables on an empty frame."""

from __future__ import annotations

import pandas as pd
import pytest

from pglimits_core.load import ClosedLoop, Phase, Role, RunSpec, run_load
from pglimits_core.load.operation import run_start_ns
from pglimits_core.workloads.pubsub.ledger import (
    Tally,
    account,
    decode_message,
    delivery_latency,
    encode_message,
)
from pglimits_core.workloads.pubsub.tables import all_tables, queue_full_in_s

MS = 1_000_000


def publisher(name: str, published: int, first_start_ns: int = 1_000) -> dict:
    return {"publisher": name, "published": published, "published_in_window": published,
            "first_start_ns": first_start_ns}


def subscriber(name: str, received: list[tuple[str, int]], subscribed_ns: int = 0) -> dict:
    tally = Tally(name, subscribed_ns)
    tally.window = (0, 10**12)
    for pub, seq in received:
        tally.add(seq * MS + 2 * MS, encode_message(pub, seq, seq * MS, 64))
    return tally.to_json()


def test_messages_are_unique_padded_and_decode():
    a, b = encode_message("p0", 1, 123, 64), encode_message("p0", 2, 123, 64)
    assert a != b and len(a) == len(b) == 64
    assert decode_message(a) == ("p0", 1, 123) and decode_message(b.encode()) == ("p0", 2, 123)
    assert decode_message("not ours") is None


def test_everything_delivered_once_is_exact():
    subs = [subscriber(f"s{i}", [("p0", s) for s in range(10)] + [("p1", s) for s in range(5)]) for i in range(3)]
    result = account([publisher("p0", 10), publisher("p1", 5)], subs)
    assert result["expected"] == result["delivered"] == 45 and result["lost"] == 0
    assert result["delivered_ratio"] == 1.0 and result["duplicates"] == result["reordered"] == 0
    latency = delivery_latency(subs)
    assert latency["count"] == 45 and latency["p50_ms"] == 2.0


def test_a_deliberately_dropped_message_is_counted_lost():
    received = [("p0", s) for s in range(10) if s != 4]
    result = account([publisher("p0", 10)], [subscriber("s0", received), subscriber("s1", [("p0", s) for s in range(10)])])
    assert result["lost"] == 1 and result["delivered"] == 19 and result["expected"] == 20
    assert [s["lost"] for s in result["per_subscriber"]] == [1, 0]


def test_a_message_published_before_subscribe_is_not_counted_lost():
    # the subscriber listened after the publisher's first publish: seqs 0-2 went out before it
    late = subscriber("s0", [("p0", s) for s in range(3, 10)], subscribed_ns=5_000)
    result = account([publisher("p0", 10, first_start_ns=1_000)], [late])
    assert result["lost"] == 0 and result["before_subscribe"] == 3 and result["expected"] == 7
    # one that listened before the first publish is expected to see all ten
    early = subscriber("s0", [("p0", s) for s in range(3, 10)], subscribed_ns=500)
    assert account([publisher("p0", 10, first_start_ns=1_000)], [early])["lost"] == 3


def test_duplicates_reordering_and_unconfirmed_messages_are_counted_not_assumed():
    received = [("p0", 0), ("p0", 2), ("p0", 1), ("p0", 2), ("p0", 3), ("p9", 0)]
    result = account([publisher("p0", 3)], [subscriber("s0", received)])
    assert result["duplicates"] == 1 and result["reordered"] == 1
    assert result["delivered"] == 3 and result["lost"] == 0
    assert result["unexpected"] == 2  # seq 3 was never confirmed by p0; p9 is no publisher of the run


def test_only_messages_meant_for_the_window_are_timed():
    tally = Tally("s0", 0)
    tally.window = (10 * MS, 20 * MS)
    for intended in (5 * MS, 15 * MS, 25 * MS):
        tally.add(intended + MS, encode_message("p0", intended // MS, intended, 32))
    assert tally.in_window == 1 and tally.to_json()["publishers"]["p0"]["distinct"] == 3


def test_tables_of_an_empty_frame_are_empty():
    tables = all_tables(pd.DataFrame())
    assert set(tables) >= {"fanout", "commit_serialization", "stuck_subscriber", "payload_limit"}
    assert all(table.empty for table in tables.values())


class StartStamp:
    """Writes what ``run_start_ns()`` says inside the worker."""

    name = "stamp"

    def __init__(self, path: str):
        self.path = path

    def open(self) -> None:
        self.before = run_start_ns()

    def __call__(self) -> int:
        with open(self.path, "w") as out:
            out.write(f"{self.before} {run_start_ns()}")
        return 0

    def close(self) -> None:
        pass


def test_a_worker_knows_the_common_start(tmp_path):
    path = tmp_path / "stamp"
    spec = RunSpec(phases=[Phase("measure", 0.2)], roles=[Role("r", StartStamp(str(path)), loop=ClosedLoop(0.01))],
                   start_method="fork")
    result = run_load(spec)
    before, during = path.read_text().split()
    assert before == "None" and int(during) > 0
    assert result.status == "complete", result.error


def test_the_queue_would_fill_at_the_growth_measured_while_stuck():
    samples = [{"t_s": 0.0, "queue_usage": 0.0}, {"t_s": 1.0, "queue_usage": 0.01}, {"t_s": 2.0, "queue_usage": 0.02},
               {"t_s": 3.0, "queue_usage": 0.0}]  # the stuck subscriber resumed: the queue emptied
    assert queue_full_in_s(samples) == pytest.approx(100.0)
    assert queue_full_in_s([{"t_s": 0.0, "queue_usage": 0.0}, {"t_s": 1.0, "queue_usage": 0.0}]) is None


def test_a_subscriber_cut_off_while_still_receiving_is_not_counted_as_losing():
    behind = {**subscriber("s0", [("p0", s) for s in range(6)]), "drain_complete": False}
    result = account([publisher("p0", 10)], [behind, subscriber("s1", [("p0", s) for s in range(9)])])
    assert result["not_received_by_cutoff"] == 4 and result["lost"] == 1


def test_bad_variants_and_filter_typos_are_one_line_errors():
    from types import SimpleNamespace

    from pglimits_core.errors import PGLimitsError
    from pglimits_core.profiles import load_profile
    from pglimits_core.workloads.pubsub.plan import plan
    from pglimits_core.workloads.pubsub.points import variant

    with pytest.raises(PGLimitsError, match="unknown pub/sub system"):
        variant("kafka")
    with pytest.raises(PGLimitsError, match="batch"):
        variant("pg_notify", batch=0)
    section = load_profile("test").section("pubsub")
    typo = section.model_copy(update={"stuck_subscriber": section.stuck_subscriber.model_copy(
        update={"variants": ["pg_notfy batch=1"]})})
    with pytest.raises(PGLimitsError, match="pg_notfy"):
        plan(typo, SimpleNamespace())


def test_every_profile_plans_its_pubsub_section():
    from pglimits_core.profiles import load_profile
    from pglimits_core.workloads.pubsub.plan import plan

    for name in ("test", "quick", "full"):
        profile = load_profile(name)
        section = profile.section("pubsub")
        points = plan(section, profile)
        # the capacity experiment where the profile asks for it
        asked = {"capacity"} if section.capacity is not None else set()
        assert {p.experiment for p in points} == {"fanout", "commit_serialization", "idle_listeners",
                                                  "stuck_subscriber", "payload_limit", *asked}, name
        assert {p.server for p in points} == {"postgres", "redis"}


def test_a_stall_longer_than_the_window_is_refused():
    from pydantic import ValidationError

    from pglimits_core.workloads.pubsub.profile import StuckSubscriber

    with pytest.raises(ValidationError, match="stall_s"):
        StuckSubscriber(stall_s=5, duration_s=5)


def test_a_postgres_point_past_max_connections_is_refused_with_its_reason():
    from pglimits_core.errors import PGLimitsError
    from pglimits_core.workloads.pubsub.points import check_room, variant

    with pytest.raises(PGLimitsError, match="max_connections=200"):
        check_room(variant("pg_notify"), {"max_connections": "200"}, 1002)
    check_room(variant("pg_notify"), {"max_connections": "200"}, 152)
    check_room(variant("redis_publish"), {"maxclients": "10000"}, 1002)  # Redis: its own limit, not this one


def test_idle_listeners_may_be_set_per_group_of_variants():
    from types import SimpleNamespace

    from pglimits_core.profiles import load_profile
    from pglimits_core.workloads.pubsub.plan import plan
    from pglimits_core.workloads.pubsub.profile import IdleListeners

    section = load_profile("test").section("pubsub")
    groups = [IdleListeners(variants=["pg_notify batch=1"], idle=[0, 100]),
              IdleListeners(variants=["redis_publish batch=1"], idle=[0, 1000])]
    points = [p for p in plan(section.model_copy(update={"idle_listeners": groups}), SimpleNamespace())
              if p.experiment == "idle_listeners"]
    assert [(p.label, p.params["idle"]) for p in points] == [
        ("pg_notify batch=1", 0), ("pg_notify batch=1", 100), ("redis_publish batch=1", 0), ("redis_publish batch=1", 1000)]


def _publisher_row(run_id, rate, p99, lag_p99, status="complete", **extra):
    return {"run_id": run_id, "status": status, "experiment": "fanout", "variant": "pg_notify batch=1",
            "subscribers": 10, "publishers": 4, "loop": "open", "rate": rate, "role": "publisher",
            "published_per_s": 1000.0, "deliveries_per_s": 10000.0, "delivery_p50": 1.0, "delivery_p99": p99,
            "delivery_p999": p99, "schedule_lag_p99_ms": lag_p99, "delivered": 10, "expected": 10, "lost": 0,
            "delivered_ratio": 1.0, "achieved_rate": rate, "published_in_window": 10, "after_run": 0,
            "duplicates": 0, "reordered": 0, "sustained": True, "client_bound": False, "other_cpu_pct": 0.0,
            **extra}


def test_a_tail_made_in_the_publisher_is_flagged_lag_dominated_and_failed_runs_are_counted():
    frame = pd.DataFrame([_publisher_row("a", 1000.0, 10.0, 8.0), _publisher_row("b", 1000.0, 12.0, 9.0),
                          _publisher_row("c", 1000.0, None, None, status="failed"),
                          _publisher_row("d", 2000.0, 10.0, 0.2, other_cpu_pct=60.0)])
    table = all_tables(frame)["fanout"].set_index("rate")
    assert table.loc[1000.0, "lag_dominated"] and table.loc[1000.0, "runs"] == 2
    assert table.loc[1000.0, "failed_runs"] == 1  # left out of the medians, not silently
    assert not table.loc[2000.0, "lag_dominated"] and table.loc[2000.0, "busy_neighbour_runs"] == 1


def test_a_payload_limit_with_nothing_refused_is_only_a_lower_bound():
    from pglimits_core.workloads.pubsub.tables import payload_limit_text

    assert payload_limit_text(1_048_576, None).startswith("≥ 1,048,576")
    assert payload_limit_text(7999, 8000) == "7,999 ≤ limit < 8,000"


def test_notify_in_a_transaction_is_compared_with_its_round_trip_control():
    rows = [{"run_id": mode, "status": "complete", "experiment": "commit_serialization", "role": "writer",
             "variant": "pg_notify batch=1", "mode": mode, "workers": 4, "ops_per_s": tps,
             "service_time_p50_ms": 1.0, "service_time_p99_ms": 2.0, "published": 0, "lost": 0,
             "client_bound": False}
            for mode, tps in (("notify_in_txn", 500.0), ("alone", 2000.0), ("txn_without_notify", 1000.0))]
    table = all_tables(pd.DataFrame(rows))["commit_serialization"].set_index("mode")
    assert list(table.index) == ["alone", "txn_without_notify", "notify_in_txn"]
    assert table.loc["notify_in_txn", "tps_vs_txn_without_notify"] == pytest.approx(0.5)
    assert table.loc["notify_in_txn", "tps_vs_alone"] == pytest.approx(0.25)


def test_open_loop_rows_count_what_the_publishers_achieved_and_empty_windows_are_no_measurement():
    late = _publisher_row("a", 4000.0, 10.0, 1.0, achieved_rate=1500.0, published_per_s=2000.0,
                          after_run=5, expected=100)
    empty = _publisher_row("b", 4000.0, None, None, published_in_window=0, published_per_s=0.0)
    table = all_tables(pd.DataFrame([late, empty]))["fanout"].iloc[0]
    assert table.published_per_s == 1500.0  # sent late, in the drain, is not throughput
    assert table.deliveries_per_s == 1500.0 * 10
    assert table.runs == 1 and table.failed_runs == 1  # the empty window counts as no measurement
    assert table.behind_at_end_pct == 5.0


def test_an_open_loop_publisher_that_sent_nothing_on_time_is_no_measurement():
    stalled = _publisher_row("s", 1000.0, 4900.0, 4900.0, achieved_rate=0.0, published_in_window=100)
    kept = _publisher_row("k", 1000.0, 10.0, 1.0)
    row = all_tables(pd.DataFrame([stalled, kept]))["fanout"].iloc[0]
    assert row.runs == 1 and row.failed_runs == 1 and row.published_per_s == 1000.0


def test_every_pubsub_system_is_one_class_behind_the_base_with_its_server():
    from pglimits_core.studies.variant import Variant
    from pglimits_core.workloads.pubsub.points import variant
    from pglimits_core.workloads.pubsub.systems.base import PubsubSystem
    from pglimits_core.workloads.pubsub.systems.registry import (
        PUBSUB_SYSTEMS,
        SERVER_FOR,
        system_class,
    )

    assert set(PUBSUB_SYSTEMS) == set(SERVER_FOR)
    for name in PUBSUB_SYSTEMS:
        cls = system_class(name)
        assert issubclass(cls, PubsubSystem) and cls.system == name
        v = variant(name, batch=10)
        assert isinstance(v, Variant) and v.batch == 10 and v.server == SERVER_FOR[name]
        assert v.label == f"{name} batch=10" and v.options == {"batch": 10}
    assert variant("pg_notify").transactional and not variant("redis_publish").transactional


def test_the_seed_verdict_keeps_its_words_under_the_shared_agreement_rule():
    from pglimits_core.workloads.pubsub.report import verdict

    assert verdict(0.82, 0.9, False) == "agree"
    assert verdict(0.82, 0.5, False) == "same direction, different size"
    assert verdict(0.82, 1.5, False) == "differ"
    assert verdict(1.18, 0.5, False) == "differ"
    assert verdict(0.82, None, False) == "not measured on both sides"
    assert verdict(0.82, 0.9, True).startswith("inconclusive: client-bound")
    assert verdict(0.82, 0.9, False, busy_runs=2).startswith("inconclusive: CPU outside")


def test_every_profile_starts_postgres_with_room_for_its_largest_idle_listener_point():
    """A profile whose idle-listener counts outgrow its Postgres's connections would report the
    point as not run: each profile raises ``postgres_max_connections`` far enough, and the study
    starts its Postgres with it."""
    from pglimits_core.profiles import load_profile
    from pglimits_core.servers.postgres import SETTINGS_FILE
    from pglimits_core.servers.settings_file import as_dict, parse_settings
    from pglimits_core.workloads.pubsub.profile import IdleListeners
    from pglimits_core.workloads.pubsub.systems.postgres import SPARE_CONNECTIONS
    from pglimits_core.workloads.pubsub.workload import server_options

    committed = int(as_dict(parse_settings(SETTINGS_FILE))["max_connections"])
    for name in ("test", "quick", "full"):
        section = load_profile(name).section("pubsub")
        groups = section.idle_listeners if isinstance(section.idle_listeners, list) else [section.idle_listeners]
        needed = max(max(g.idle) + g.subscribers + 1 + SPARE_CONNECTIONS for g in groups
                     if isinstance(g, IdleListeners) and (not g.variants or any("pg_notify" in v for v in g.variants)))
        options = server_options(section)
        allowed = int(options["postgres"]["settings"]["max_connections"]) if options else committed
        assert needed <= allowed, (name, needed, allowed)
    assert server_options(load_profile("test").section("pubsub").model_copy(
        update={"postgres_max_connections": None})) == {}


def test_each_listener_costs_the_pss_it_adds_over_none():
    from pglimits_core.workloads.pubsub.tables import per_listener_kib

    table = pd.DataFrame({"variant": ["pg_notify batch=1"] * 3 + ["redis_publish batch=1"] * 2,
                          "idle_listeners": [0, 100, 1000, 0, 1000],
                          "server_pss_mib": [500.0, 600.0, 1500.0, 10.0, float("nan")]})
    assert per_listener_kib(table) == [None, 1024.0, 1024.0, None, None]
