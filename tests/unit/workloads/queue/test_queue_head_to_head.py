"""The queue's head-to-head verdicts, server CPU per job, the C-tool scripts for every SQL design
and the derived README lines: the core rule (``analysis.verdict``) on queue rows, "not
comparable here" where a design cannot reach a rate on this box, k of n runs where some held it,
and "not measured in these records" where an experiment is missing."""

from __future__ import annotations

import pandas as pd
import pytest

from pglimits_core.analysis.verdict import INSIDE_BAND, LOAD_LIMITED, NOT_COMPARABLE, NOT_RECORDED
from pglimits_core.workloads.queue import ceiling_tools
from pglimits_core.workloads.queue.ceiling import CEILING_TOOLS, SessionPgbenchLoad
from pglimits_core.workloads.queue.head_to_head import (
    cannot_reach,
    latency_verdicts,
    reach,
    throughput_verdicts,
)
from pglimits_core.workloads.queue.points import variant
from pglimits_core.workloads.queue.readme import harness_bench_lines, headline_table, kept_up_lines
from pglimits_core.workloads.queue.seed import CLAIMS, comparison_table
from pglimits_core.workloads.queue.systems.pgmq import DELETE_SQL, READ_SQL
from pglimits_core.workloads.queue.tool_tables import (
    cpu_agreement,
    cpu_split_trusted,
    derivation,
    harness_bench_table,
    server_cpu_us_per_job,
)


def sweep_row(variant_: str, consumers: int, jobs: float, cpu: float | None, bound: bool | None = False,
              klass: str = "per_commit", lower: bool = False) -> dict:
    return {"variant": variant_, "durability_class": klass, "consumers": consumers, "jobs_per_s": jobs,
            "min_jobs_per_s": jobs * 0.95, "max_jobs_per_s": jobs * 1.05, "client_bound": bound,
            "lower_bound": lower, "lower_bound_why": "", "runs": 3, "runs_recorded": 3,
            "server_cpu_us_per_job": cpu, "min_server_cpu_us_per_job": cpu and cpu * 0.9,
            "max_server_cpu_us_per_job": cpu and cpu * 1.1}


def latency_run(variant_: str, rate: float, p99: float, sustained: bool, bound: bool | None = False,
                cpu: float | None = 100.0) -> dict:
    return {"variant": variant_, "durability_class": "per_commit", "offered_per_s": rate, "send_to_claim_p99_ms": p99,
            "sustained": sustained, "client_bound": bound, "server_cpu_us_per_job": cpu}


def test_pgmq_script_is_the_adapters_read_then_delete_with_variables():
    script = ceiling_tools.pgmq_script(10, queue="q'x", vt_s=5)
    assert script.startswith("\\set batch 10\n\\set vt 5\n") and "\\gset" in script
    assert ceiling_tools.fill(READ_SQL, "'q''x'", ":vt", ":batch") in script
    assert script.rstrip().endswith(ceiling_tools.fill(DELETE_SQL, "'q''x'", ":ids") + ";")
    assert "pgmq.archive('pglimits_jobs', :ids::bigint[])" in ceiling_tools.pgmq_script(1, mode="archive")
    with pytest.raises(ValueError):
        ceiling_tools.fill(READ_SQL, "'q'")


@pytest.mark.parametrize("system, batch", [("pg_delete", 50), ("pg_skiplocked", 10), ("pgmq", 50)])
def test_every_sql_design_has_a_script_that_takes_the_batch(system, batch):
    tool = CEILING_TOOLS[system]
    assert f"\\set batch {batch}\n" in tool.script(variant(system, batch=batch))


def test_pgbench_sessions_get_the_variants_synchronous_commit_through_pgoptions(tmp_path):
    fake = tmp_path / "pgbench"
    fake.write_text("#!/bin/sh\necho 'pgbench (PostgreSQL) 16.2'\n")
    fake.chmod(0o755)
    load = SessionPgbenchLoad("postgresql://u@127.0.0.1:5/db", "SELECT 1;", 2, 1, binary=str(fake),
                              settings={"synchronous_commit": "off"})
    command, = load.commands()
    assert command.env["PGOPTIONS"] == "-c synchronous_commit=off" and "PGOPTIONS" not in " ".join(command.argv)
    assert load.describe()["tool_session_settings"] == {"synchronous_commit": "off"}
    plain = SessionPgbenchLoad("postgresql://u@127.0.0.1:5/db", "SELECT 1;", 2, 1, binary=str(fake), settings={})
    assert "PGOPTIONS" not in plain.commands()[0].env


def test_server_cpu_per_job_is_from_the_cpu_share_and_zero_is_no_measurement():
    got = server_cpu_us_per_job(pd.Series([50.0, 0.0, None]), pd.Series([1000.0, 1000.0, 1000.0]))
    assert got.iloc[0] == 500.0 and got.iloc[1:].isna().all()  # 50 % of a core at 1,000 jobs/s = 500 µs


def test_harness_and_tool_server_cpu_agree_within_the_stated_tolerance():
    assert cpu_agreement(110.0, 100.0).startswith("yes; harness 1.10× tool")
    assert cpu_agreement(130.0, 100.0).startswith("NO (beyond 25%")
    assert cpu_agreement(75.0, 100.0).startswith("NO") and cpu_agreement(None, 100.0) == "—"


def test_an_untrusted_cpu_split_cannot_tell_whether_harness_and_tool_agree():
    """A busy neighbour or an unseen client (client-bound verdict "cannot tell") makes either
    side's server CPU a figure of the busy machine: never a NO (nor a yes) about the sampler."""
    assert cpu_agreement(5.0, 120.0, trusted=False).startswith("cannot tell")
    assert cpu_agreement(110.0, 100.0, trusted=False).startswith("cannot tell")
    assert cpu_agreement(None, 100.0, trusted=False) == "—"
    assert cpu_split_trusted(False) and cpu_split_trusted(True)
    assert not cpu_split_trusted(None) and not cpu_split_trusted(float("nan"))


def test_the_redis_per_job_ceiling_is_written_out_from_the_records_rates():
    rates = {"LPUSH": 30_000.0, "LMOVE": 30_000.0, "LREM": 30_000.0}
    assert derivation(rates, 10_000.0) == ("derived 1/(1/30,000 + 1/30,000 + 1/30,000) = 10,000 jobs/s "
                                           "(LPUSH, LMOVE, LREM back to back)")
    assert "missing" in derivation({"LPUSH": 1.0}, None)


def test_throughput_rows_are_judged_by_the_core_rule_against_the_other_side():
    """Like-for-like designs (at-least-once, batch 1; see test_queue_like_for_like for unlike ones)."""
    table = throughput_verdicts(pd.DataFrame([
        sweep_row("pg_skiplocked batch=1", 4, 2000, 500.0), sweep_row("redis_reliable batch=1", 4, 2500, 150.0),
        sweep_row("pgmq batch=1", 4, 900, 900.0, bound=True), sweep_row("pg_skiplocked batch=1", 8, 2100, 480.0),
        sweep_row("sqlite_wal batch=1", 8, 4000, None, bound=None)]))
    by = {(r.variant, r.consumers): r for r in table.itertuples()}
    # 1,900-2,100 against 2,375-2,625 jobs/s: Redis ahead in every run, by less than the band
    assert by[("pg_skiplocked batch=1", 4)].verdict_class == INSIDE_BAND
    assert by[("pg_skiplocked batch=1", 4)].verdict_why == ("redis_reliable batch=1 ahead in every run, but inside the "
                                                            "tie band (runs 1,900–2,100 vs 2,375–2,625)")
    assert by[("pg_skiplocked batch=1", 4)].versus == "redis_reliable batch=1"
    assert by[("redis_reliable batch=1", 4)].versus == "pg_skiplocked batch=1"  # the best Postgres row
    # client-bound: a floor below Redis's rate decides nothing, whatever the server CPU per job
    assert by[("pgmq batch=1", 4)].verdict_class == LOAD_LIMITED
    assert by[("pg_skiplocked batch=1", 8)].verdict_class == NOT_RECORDED  # SQLite: which side set the limit unknown
    assert by[("sqlite_wal batch=1", 8)].versus == "pg_skiplocked batch=1"


def test_a_rate_out_of_a_designs_reach_is_not_comparable_never_differ():
    reaches = reach(pd.DataFrame([sweep_row("pg_skiplocked batch=1", 4, 1316, 600.0),
                                  sweep_row("redis_reliable batch=1", 4, 6000, 70.0),
                                  sweep_row("sqlite_wal batch=50", 4, 3000, None, lower=True)]))
    assert "burn-down peak 1,316/s, best run 1,382/s" in cannot_reach(reaches, "pg_skiplocked batch=1", 5000)
    assert cannot_reach(reaches, "sqlite_wal batch=50", 5000) == ""  # a floor: its reach is unknown
    assert cannot_reach(reaches, "unmeasured", 5000) == ""
    runs = pd.DataFrame([latency_run("pg_skiplocked batch=1", 5000, 6000, False),
                         latency_run("redis_reliable batch=1", 5000, 300, False)])
    judged = latency_verdicts(runs, reaches)
    assert set(judged.verdict_class) == {NOT_COMPARABLE} and "pg_skiplocked" in judged.verdict_why.iloc[0]


def test_the_headline_and_who_kept_up_say_k_of_n_runs():
    latency = pd.DataFrame([latency_run("redis_reliable batch=10 pipeline=10", 5000, p99, ok)
                            for p99, ok in ((40.0, True), (400.0, True), (2000.0, False))]
                           + [latency_run("pg_delete batch=1", 5000, 5000.0, False)] * 3)
    sweep = pd.DataFrame([sweep_row(name, 1, 1000, None) for name in latency.variant.unique()])
    cells = headline_table({"throughput": sweep,
                            "steady": pd.DataFrame(), "latency": latency})
    shown = cells.set_index("variant")["send → claim p99 ms at 5,000/s"]
    assert shown["redis_reliable batch=10 pipeline=10"] == "220.00 (40.00–400.00) (sustained in 2 of 3 runs)"
    assert shown["pg_delete batch=1"] == "not sustained (0 of 3 runs)"
    line, = [text for text in kept_up_lines(latency) if text]
    assert "at 5,000/s no design in every run, redis_reliable batch=10 pipeline=10 in 2 of 3, the other 1 in none" in line


def test_records_without_the_new_experiments_say_so_and_never_crash():
    assert harness_bench_table(pd.DataFrame({"experiment": ["throughput"], "run_id": ["a"]})).empty
    assert harness_bench_table(pd.DataFrame()).empty
    assert "not measured in these records" in harness_bench_lines(None)[0]
    assert "not measured in these records" in harness_bench_lines(pd.DataFrame())[0]


def test_seed_rows_at_an_unreachable_rate_are_not_comparable_here():
    claim = next(c for c in CLAIMS if c.rate == 5_000 and "SQLite" in c.a_label)
    sweep = pd.DataFrame([sweep_row("sqlite_wal batch=1 synchronous=full", 1, 1798, None, bound=None),
                          sweep_row("pgmq batch=1", 8, 1058, 900.0)])
    latency = pd.DataFrame([latency_run("sqlite_wal batch=1 synchronous=full", 5000, 5900, False, bound=None),
                            latency_run("pgmq batch=1", 5000, 6100, False)])
    rows = comparison_table({"throughput": sweep, "latency": latency})
    row = rows[(rows.figure == claim.what)].iloc[0]
    assert row.verdict.startswith(NOT_COMPARABLE) and "differ" not in row.verdict
    assert "sqlite_wal batch=1 synchronous=full cannot reach 5,000/s" in row.verdict
    assert row["verdict class"] == NOT_COMPARABLE
