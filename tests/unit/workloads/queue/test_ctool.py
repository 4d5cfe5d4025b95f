"""C load tools as loads (``load.tools``): their command lines, their output parsed from captured
text into the same summary a harness run has, a missing tool's one-line error, and the queue's
``ceiling`` scripts and plan."""

from __future__ import annotations

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools import pgbench, redis_benchmark
from pglimits_core.load.tools.process import require_binary
from pglimits_core.load.tools.result import aggregate_step, sampled_step, tool_run_result
from pglimits_core.record.summary import build_summary
from pglimits_core.workloads.queue import ceiling_tools
from pglimits_core.workloads.queue.systems.postgres_skiplocked import ACK_SQL, DELETE_CLAIM_SQL

PGBENCH_OUT = """pgbench (16.2)
transaction type: pg_delete.sql
scaling factor: 1
query mode: prepared
number of clients: 2
number of threads: 2
maximum number of tries: 1
duration: 3 s
number of transactions actually processed: 15234
number of failed transactions: 0 (0.000%)
latency average = 0.393 ms
latency stddev = 0.201 ms
initial connection time = 6.512 ms
tps = 5079.214901 (without initial connection time)
"""
PGBENCH_LOG = """0 0 412 0 1764624000 000100
1 0 398 0 1764624000 000150
0 1 failed 0 1764624001 500000
1 1 350 0 1764624001 900000
"""
REDIS_CSV = ('"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",'
             '"p99_latency_ms","max_latency_ms"\n"LMOVE q q:p RIGHT LEFT","21276.60","0.068","0.032",'
             '"0.063","0.127","0.151","4.111"\n')


def test_pgbench_summary_is_parsed_from_its_closing_lines():
    parsed = pgbench.parse_summary(PGBENCH_OUT)
    assert parsed == {"tps": 5079.214901, "latency_average_ms": 0.393, "latency_stddev_ms": 0.201,
                      "transactions": 15234, "failed_transactions": 0, "initial_connection_ms": 6.512}


def test_pgbench_log_lines_give_completion_and_latency_and_count_failures(tmp_path):
    (tmp_path / "pgbench_log.123").write_text(PGBENCH_LOG)
    (tmp_path / "pgbench_log.123.1").write_text("")
    samples, failed = pgbench.read_logs(tmp_path)
    assert failed == 1 and samples[0] == (1764624000_000100, 412)
    relative = pgbench.relative_samples(samples)
    assert relative[0][0] == pytest.approx(412 / 1e6)  # start = the earliest transaction start (100 - 412)
    assert relative[1][0] == pytest.approx((150 - (100 - 412)) / 1e6)
    assert pgbench.parse_log_line("garbage") is None


def test_pgbench_command_line_carries_the_dsn_but_never_a_password():
    args, env = pgbench.connection_args("postgresql://app:secret@127.0.0.1:5555/pglimits")
    assert args == ["-h", "127.0.0.1", "-p", "5555", "-U", "app", "pglimits"] and env == {"PGPASSWORD": "secret"}
    argv = pgbench.pgbench_argv("/x/pgbench", args, "s.sql", clients=4, threads=2, seconds=6)
    assert argv[:12] == ["/x/pgbench", "-n", "-M", "prepared", "-f", "s.sql", "-c", "4", "-j", "2", "-T", "6"]
    assert "-l" in argv and "secret" not in " ".join(argv)


def test_redis_benchmark_csv_and_command_line():
    row = redis_benchmark.parse_csv(REDIS_CSV)
    assert row["test"] == "LMOVE q q:p RIGHT LEFT" and row["rps"] == 21276.60 and row["p99_latency_ms"] == 0.151
    assert redis_benchmark.parse_csv("") == {}
    target = redis_benchmark.redis_target("redis://127.0.0.1:6390/0")
    argv = redis_benchmark.redis_benchmark_argv("rb", target, 8, 1000, 16, ["LPUSH", "k", "v"])
    assert argv == ["rb", "-h", "127.0.0.1", "-p", "6390", "-c", "8", "-n", "1000", "-P", "16", "--csv",
                    "LPUSH", "k", "v"]


def test_a_missing_tool_is_a_one_line_error_naming_where_it_looked(tmp_path):
    with pytest.raises(PGLimitsError, match=r"pgbench not found at .*nothing.*fix: make setup"):
        require_binary("pgbench", str(tmp_path / "nothing"), "make setup")
    with pytest.raises(PGLimitsError, match="redis-benchmark not found at PATH"):
        require_binary("redis-benchmark", None, redis_benchmark.FIX)


def test_sampled_tool_steps_make_the_summary_a_harness_run_has():
    samples = [(0.5, 300), *[(1.0 + i / 1000, 400) for i in range(1000)], (9.0, 100)]  # last: after the window
    step = sampled_step("claim_delete", 2, samples, warmup_s=1, duration_s=2, items_per_op=10)
    result = tool_run_result("tool", [step], params={"tool_reported": {}})
    entry, = build_summary(result, "r").entries  # the warm-up is left out
    assert (entry.phase, entry.loop, entry.ops, entry.items) == ("measure", "closed", 1000, 10_000)
    assert entry.items_per_s == 5000 and entry.latencies["service_time"].p50_us == 400
    assert set(result.timeseries.phase) == {"warmup", "measure"} and result.status == "complete"


def test_aggregate_steps_are_one_phase_per_command_and_a_failure_fails_the_run():
    steps = [aggregate_step(c, c, 4, ops=1000, duration_s=0.05) for c in ("LPUSH", "LMOVE")]
    summary = build_summary(tool_run_result("tool", steps), "r")
    assert [(e.phase, e.ops_per_s) for e in summary.entries] == [("LPUSH", 20000), ("LMOVE", 20000)]
    failed = tool_run_result("tool", [], error="redis-benchmark exited 1: refused")
    assert failed.status == "failed" and failed.workers[0].error.startswith("redis-benchmark")


def test_pgbench_scripts_are_the_adapters_statements_with_variables():
    delete = ceiling_tools.delete_mode_script(10)
    assert delete.startswith("\\set batch 10\n") and ceiling_tools.pgbench_sql(DELETE_CLAIM_SQL, "batch") in delete
    two_phase = ceiling_tools.two_phase_script(1)
    assert "claimed_by = :client_id" in two_phase and "LIMIT :batch" in two_phase and "\\gset" in two_phase
    assert two_phase.rstrip().endswith(ACK_SQL.replace("%s", ":ids") + ";")
    with pytest.raises(ValueError):
        ceiling_tools.pgbench_sql(ACK_SQL)


def test_redis_steps_and_the_derived_per_job_rate():
    steps = ceiling_tools.reliable_queue_steps("q", payload_bytes=3)
    assert steps == [("LPUSH", ["LPUSH", "q", "xxx"]), ("LMOVE", ["LMOVE", "q", "q:processing:bench", "RIGHT", "LEFT"]),
                     ("LREM", ["LREM", "q:processing:bench", "1", "xxx"])]
    assert ceiling_tools.per_job_rate([30000, 30000, 30000]) == pytest.approx(10000)
    assert ceiling_tools.per_job_rate([30000, None]) is None
    assert ceiling_tools.MEAN_PAYLOAD_BYTES == 845


def test_the_harness_bench_plans_tool_points_only_for_systems_with_a_tool():
    from pglimits_core.workloads.queue.plan import plan
    from pglimits_core.workloads.queue.profile import QueueProfile

    base = {"variants": [{"system": "pg_delete", "batch": 10}, {"system": "redis_reliable"}, {"system": "sqlite_wal"}],
            "throughput": {"consumers": [1], "prefill": 10, "duration_s": 1},
            "latency": {"rates": [10], "duration_s": 1}}
    assert not [p for p in plan(QueueProfile.model_validate(base), None) if p.experiment == "harness_bench"]
    section = QueueProfile.model_validate({**base, "harness_bench": {"clients": [1, 4]}})
    points = [p for p in plan(section, None) if p.experiment == "harness_bench"]
    # the harness's burn-down, then the tool, per (variant, clients)
    assert [(p.label, p.params["clients"] if "clients" in p.params else p.params["consumers"]) for p in points] == [
        ("pg_delete batch=10", 1), ("pg_delete batch=10", 1), ("pg_delete batch=10", 4), ("pg_delete batch=10", 4),
        ("redis_reliable batch=1", 1), ("redis_reliable batch=1", 1), ("redis_reliable batch=1", 4),
        ("redis_reliable batch=1", 4)]
    explicit = QueueProfile.model_validate({**base, "harness_bench": {"clients": [1], "variants": ["sqlite_wal batch=1"]}})
    with pytest.raises(PGLimitsError, match="sqlite_wal has no C load tool"):
        plan(explicit, None)
