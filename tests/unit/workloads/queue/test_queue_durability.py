"""Every queue variant the registry accepts lands in a durability class (no server needed: the
tables the adapters classify their read-back settings with are checked here; the read-back
itself is checked against real servers in tests/integration/workloads/queue/test_queue_contract.py)."""

from __future__ import annotations

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.queue.systems.durability import CLASSES, promise_for
from pglimits_core.workloads.queue.systems.registry import (
    QUEUE_SYSTEMS,
    VARIANT_OPTIONS,
    adapter_class,
    make_adapter,
)


def durability_values(system: str) -> list[str]:
    """Every value a variant may give the system's durability option, plus the one it runs with
    when it gives none."""
    cls = adapter_class(system)
    check = VARIANT_OPTIONS[system][cls.durability_option]
    return [*check.allowed, cls.durability_default]


@pytest.mark.parametrize("system", QUEUE_SYSTEMS)
def test_every_registered_option_value_maps_to_a_class(system):
    cls = adapter_class(system)
    assert cls.durability_option in VARIANT_OPTIONS[system], "the option must be one a variant can set"
    for value in durability_values(system):
        promise = promise_for(system, cls.promises, value)
        assert CLASSES[promise.durability_class.key] is promise.durability_class
        assert promise.how
        described = promise.describe(f"{cls.durability_option}={value}")
        assert described["durability_class"] in {"per_commit", "periodic", "none"}
        assert isinstance(described["survives_process_kill"], bool)


def test_the_classes_of_the_variants_the_study_compares():
    expected = {("pg_delete", "on"): "per_commit", ("pg_delete", "off"): "periodic",
                ("pgmq", "on"): "per_commit", ("pgmq", "off"): "periodic",
                ("pg_skiplocked", "off"): "periodic",
                ("sqlite_wal", "full"): "per_commit", ("sqlite_wal", "normal"): "periodic",
                ("sqlite_wal", "off"): "none",
                ("redis_reliable", "none"): "none", ("redis_reliable", "everysec"): "periodic",
                ("redis_reliable", "always"): "per_commit"}
    for (system, setting), key in expected.items():
        assert adapter_class(system).promises[setting].durability_class.key == key, (system, setting)


def test_what_a_process_kill_can_lose():
    """Only writes that never reached the kernel before the acknowledgement."""
    assert not adapter_class("redis_reliable").promises["none"].survives_process_kill
    assert not adapter_class("pg_delete").promises["off"].survives_process_kill
    assert adapter_class("sqlite_wal").promises["off"].survives_process_kill
    assert adapter_class("redis_reliable").promises["everysec"].survives_process_kill


def test_an_unknown_read_back_setting_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="no durability class"):
        promise_for("redis_reliable", adapter_class("redis_reliable").promises, "sometimes")


def test_redis_appendfsync_is_validated():
    assert make_adapter("redis_reliable", "unused", appendfsync="ALWAYS").appendfsync == "always"
    assert make_adapter("redis_reliable", "unused").appendfsync == "none"
    with pytest.raises(PGLimitsError, match="appendfsync"):
        make_adapter("redis_reliable", "unused", appendfsync="no")  # Redis' "no" is not "none"

