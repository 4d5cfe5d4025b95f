"""What qload is told to run for each queue design (``queue.qload_points.qload_verbs``): the
adapter's own statements, parameters in the adapter's order, and for SQLite its PRAGMAs with the
busy wait left to qload's retry loop, one file per shard."""

from __future__ import annotations

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.profiles import load_profile
from pglimits_core.workloads.queue.plan import plan
from pglimits_core.workloads.queue.points import variant
from pglimits_core.workloads.queue.systems import sqlite_wal
from pglimits_core.workloads.queue.systems.qload_verbs import qload_target, qload_verbs


def flag(argv, name):
    return argv[argv.index(name) + 1]


def test_sqlites_verbs_are_the_adapters_statements_with_its_pragmas():
    argv = qload_verbs(variant("sqlite_wal", synchronous="full")).argv()
    assert flag(argv, "-system") == "sqlite"
    assert flag(argv, "-enqueue-sql") == sqlite_wal.ENQUEUE_SQL and flag(argv, "-enqueue-params") == "payload,now,now"
    assert flag(argv, "-claim-sql") == sqlite_wal.CLAIM_SQL and flag(argv, "-claim-params") == "consumer,now,now"
    assert flag(argv, "-ack-sql") == sqlite_wal.ACK_SQL and flag(argv, "-ack-params") == "id,consumer"
    pragmas = dict(item.split("=", 1) for item in flag(argv, "-settings").split(","))
    assert pragmas["synchronous"] == "FULL" and pragmas["busy_timeout"] == "0" and pragmas["journal_mode"] == "WAL"


def test_a_batched_sqlite_claim_takes_its_limit_last_and_the_default_is_the_seeds_normal():
    argv = qload_verbs(variant("sqlite_wal", batch=50)).argv()
    assert flag(argv, "-claim-sql") == sqlite_wal.CLAIM_BATCH_SQL and flag(argv, "-claim-params") == "consumer,now,now,batch"
    assert "synchronous=NORMAL" in flag(argv, "-settings")


def test_the_sqlite_target_is_every_shard_file_as_the_adapter_names_them(tmp_path):
    url = str(tmp_path / "queue.db")
    assert qload_target(url, variant("sqlite_wal")) == url
    assert qload_target(url, variant("sqlite_wal", shards=4)).split(",") == [
        str(p) for p in sqlite_wal.shard_paths(url, 4)]
    assert qload_target("redis://127.0.0.1:6390/0", variant("redis_reliable")) == "127.0.0.1:6390"


def test_a_postgres_designs_verbs_do_not_carry_sqlites_parameters():
    argv = qload_verbs(variant("pg_skiplocked", batch=10)).argv()
    assert flag(argv, "-system") == "postgres" and "-enqueue-params" not in argv


def test_a_capacity_label_that_names_no_variant_is_a_one_line_error():
    profile = load_profile("full")
    section = profile.section("queue")
    broken = section.model_copy(update={"capacity": section.capacity.model_copy(
        update={"ceilings_only": ["sqlite_wal batch=5"]})})
    with pytest.raises(PGLimitsError, match="capacity.ceilings_only"):
        plan(broken, profile)
