"""The crash drill's bookkeeping without servers: which variant a drill label means, the offered
against the confirmed rate, and the durability facts every drill record carries."""

from __future__ import annotations

from pglimits_core.workloads.queue.drills.recovery import drilled_variant
from pglimits_core.workloads.queue.drills.recovery_record import (
    DRILL_SCOPE,
    durability_facts,
    offered_and_confirmed,
)
from pglimits_core.workloads.queue.points import variant
from pglimits_core.workloads.queue.systems.registry import adapter_class


def test_a_drill_label_finds_the_study_variant_whatever_its_option_order():
    study = [variant("redis_reliable", label="redis aof", appendfsync="always"), variant("pg_delete")]
    assert drilled_variant("redis_reliable appendfsync=always batch=1", study).label == "redis aof"
    assert drilled_variant("redis_reliable batch=1 appendfsync=always", study).label == "redis aof"
    assert drilled_variant("pg_delete batch=1", study) is study[1]
    assert drilled_variant("sqlite_wal synchronous=full", study).options == {"synchronous": "full"}


def test_a_system_that_cannot_take_the_offered_rate_says_what_it_confirmed():
    assert offered_and_confirmed(1000, 980) == {"offered_rate": 1000, "confirmed_per_s": 980, "rate_reached": True}
    assert offered_and_confirmed(1000, 600)["rate_reached"] is False
    assert offered_and_confirmed(None, 600)["rate_reached"] is None  # flat out: nothing was offered


def test_a_record_names_the_class_and_what_a_process_kill_can_lose():
    described = adapter_class("sqlite_wal").promises["off"].describe("synchronous=off")
    facts = durability_facts(described)
    # class none, yet a process kill loses nothing: the reason the drill is no durability result
    assert facts["durability_class"] == "none" and facts["durable_config"] is True
    assert "page cache" in DRILL_SCOPE and "OS crash" in DRILL_SCOPE
