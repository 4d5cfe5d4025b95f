"""The client-bound verdict on synthetic per-second CPU series (% of one core)."""

import math
import os

import pytest

from pglimits_core.samplers.classify import (
    classify_client_bound,
    cpu_sum_error,
    host_frame_verdict,
    steady_median,
)


def series(level, seconds=10, ramp=True):
    """A steady level with a None first second and a low ramp-down last second."""
    return [None, *([level] * (seconds - 2)), 5.0 if ramp else level]


def test_workers_saturated_while_server_idles_is_client_bound():
    bound, reason = classify_client_bound(series(180.0), series(15.0), cores=2)
    assert bound and reason.startswith("client-bound")


def test_few_single_threaded_workers_saturated_on_a_quiet_box():
    # one Python worker pegged at one core while Postgres uses 20%: the harness is the limit
    bound, _ = classify_client_bound(series(97.0), series(20.0), cores=2, client_cores=1)
    assert bound


def test_single_threaded_server_saturated_is_not_client_bound():
    bound, reason = classify_client_bound(series(95.0), series(99.0), cores=2, server_cores=1)
    assert not bound and reason.startswith("server-bound")


def test_server_using_most_of_a_saturated_box_is_not_client_bound():
    bound, reason = classify_client_bound(series(60.0), series(135.0), cores=2)
    assert not bound and "mostly by the server" in reason


def test_saturated_shared_box_with_client_majority_is_client_bound():
    bound, reason = classify_client_bound(series(110.0), series(80.0), cores=2)
    assert bound and "holds most" in reason


def test_idle_box_is_not_client_bound():
    bound, reason = classify_client_bound(series(40.0), series(30.0), cores=2)
    assert not bound and "idle CPU" in reason


def test_box_saturated_by_a_busy_neighbour_is_not_called_idle():
    # client + server use 70 % of one core, the machine is busy at 190 %: someone else took 120
    bound, reason = classify_client_bound(series(40.0), series(30.0), cores=2, machine_cpu_pct_series=series(190.0))
    assert bound is None and "busy neighbour" in reason and "idle CPU" not in reason


def test_a_quiet_machine_keeps_the_idle_verdict():
    bound, reason = classify_client_bound(series(40.0), series(30.0), cores=2, machine_cpu_pct_series=series(75.0))
    assert bound is False and "idle CPU" in reason


def test_no_samples_cannot_tell():
    bound, reason = classify_client_bound([None, math.nan], [10.0], cores=2)
    assert not bound and "cannot tell" in reason


def test_one_spike_does_not_flip_the_verdict():
    client = [20.0] * 9 + [199.0]
    assert not classify_client_bound(client, [10.0] * 10, cores=2)[0]


def test_steady_median_drops_none_and_nan():
    assert steady_median([None, 1.0, math.nan, 3.0]) == pytest.approx(2.0)
    assert steady_median([]) is None


def host_frame(client, server, extra_rows=0):
    """Host-sampler rows as ``SamplerSet.dataframe`` gives them, plus other samplers' rows."""
    import pandas as pd

    rows = [{"sampler": "host", "client_cpu_pct": c, "server_cpu_pct": s}
            for c, s in zip(client, server, strict=True)]
    rows += [{"sampler": "postgres", "wal_bytes_per_s": 1.0}] * extra_rows
    return pd.DataFrame(rows)


def test_frame_verdict_judges_a_single_threaded_server_against_one_core(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    frame = host_frame(series(70.0), series(92.0))
    all_cores = host_frame_verdict(frame, client_workers=1)
    one_core = host_frame_verdict(frame, client_workers=1, server_cores=1)
    assert not all_cores["client_bound"] and "idle CPU" in all_cores["client_bound_reason"]
    assert one_core["client_bound_reason"].startswith("server-bound")
    assert one_core["cpu"]["server_cores"] == 1


def test_frame_verdict_does_not_apply_when_the_engine_runs_in_the_client(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    verdict = host_frame_verdict(host_frame(series(190.0), series(0.0)), client_workers=4,
                                 engine_in_client=True)
    assert verdict["client_bound"] is None
    reason = "not applicable: the engine runs inside the client processes"
    assert verdict["client_bound_reason"] == reason
    assert verdict["cpu"]["client_cpu_pct_median"] == pytest.approx(190.0)


def test_frame_verdict_sums_client_and_server_per_second_ignoring_other_samplers(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    frame = host_frame([None, 50.0, 60.0, 70.0], [None, 100.0, 90.0, 80.0], extra_rows=3)
    cpu = host_frame_verdict(frame, client_workers=1)["cpu"]
    assert cpu["client_plus_server_cpu_pct_median"] == pytest.approx(150.0)
    assert cpu["cores"] == 2


def cpu_figures(client, server, total=None, cores=2):
    return {"client_cpu_pct_median": client, "server_cpu_pct_median": server,
            "client_plus_server_cpu_pct_median": client + server if total is None else total,
            "cores": cores}


def test_cpu_within_the_box_passes_the_sampler_check():
    assert cpu_sum_error(cpu_figures(60.0, 130.0)) is None
    assert cpu_sum_error(cpu_figures(90.0, 118.0)) is None  # 208 %: within the jitter allowance


def test_cpu_beyond_the_box_fails_the_sampler_check_naming_the_figures():
    # the counting error this check exists for: the servers counted as client too
    problem = cpu_sum_error(cpu_figures(196.0, 130.0))
    assert problem is not None
    assert "326%" in problem and "200%" in problem and "2 cores" in problem
    assert "client median 196%" in problem and "server median 130%" in problem


def test_cpu_check_tolerance_is_adjustable_and_missing_figures_pass():
    assert cpu_sum_error(cpu_figures(100.0, 101.0), tolerance_pct=0.0) is not None
    assert cpu_sum_error({}) is None
    assert cpu_sum_error({"client_plus_server_cpu_pct_median": None, "cores": 2}) is None


def test_client_plus_server_above_the_machines_busy_cpu_fails_the_run(monkeypatch):
    """The old bug: servers counted as client too gave client + server ~83 points above what the
    machine was busy with, while staying under the box's 200 %."""
    import pandas as pd

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    from pglimits_core.samplers.classify import cpu_sum_error, host_frame_verdict

    rows = pd.DataFrame({"client_cpu_pct": [90.0] * 5, "server_cpu_pct": [80.0] * 5, "system_cpu_pct": [45.0] * 5})
    verdict = host_frame_verdict(rows, client_workers=2)
    assert verdict["cpu"]["client_plus_server_over_busy_pct_median"] > 70
    assert "busy CPU" in cpu_sum_error(verdict["cpu"])
    honest = rows.assign(system_cpu_pct=[86.0] * 5)  # 172 % of one core busy on 2 cores
    assert cpu_sum_error(host_frame_verdict(honest, client_workers=2)["cpu"]) is None


def split_sets(monkeypatch, server=(0,), load=(1,)):
    """The placement in force: the servers on ``server``, this process (the load) on ``load``."""
    from pglimits_core import placement

    monkeypatch.setenv(placement.SERVER_CPUS_ENV, placement.cpu_list(server))
    monkeypatch.setattr(placement.os, "sched_getaffinity", lambda pid: set(load))


def test_under_split_sets_a_load_set_the_clients_fill_is_client_bound(monkeypatch):
    """Four bystander workers at 90 % of the one load core with the server at 60 % of its own:
    on the two cores together neither side saturates (the shared-box rules said "idle CPU"), but
    the load's set is full, so the clients' own wait is in every latency."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    split_sets(monkeypatch)
    verdict = host_frame_verdict(host_frame(series(90.0), series(60.0)), client_workers=4)
    assert verdict["client_bound"] is True and "workers saturated" in verdict["client_bound_reason"]
    assert "of 100%" in verdict["client_bound_reason"] and verdict["cpu"]["client_and_server_share_cores"] is False


def test_under_split_sets_the_harness_counts_with_the_workers_on_the_load_set():
    from pglimits_core.samplers.classify import classify_sets

    bound, reason = classify_sets(series(70.0), series(40.0), (1, 1), client_workers=4,
                                  harness_cpu_pct_series=series(20.0))
    assert bound and "the load's set saturated (workers and harness)" in reason
    quiet, reason = classify_sets(series(50.0), series(40.0), (1, 1), client_workers=4,
                                  harness_cpu_pct_series=series(20.0))
    assert quiet is False and reason.startswith("not CPU-bound: both sets have idle CPU")


def test_under_split_sets_the_server_is_judged_against_its_own_set():
    from pglimits_core.samplers.classify import classify_sets

    bound, reason = classify_sets(series(95.0), series(90.0), (1, 1), client_workers=4)
    assert bound is False and reason.startswith("server-bound")  # the server's set full first
    redis, reason = classify_sets(series(30.0), series(88.0), (1, 2), client_workers=2, server_cores=1)
    assert redis is False and reason.startswith("server-bound") and "of 100%" in reason


def test_on_shared_cores_the_shared_box_rules_still_judge(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    split_sets(monkeypatch, server=(0, 1), load=(0, 1))
    verdict = host_frame_verdict(host_frame(series(90.0), series(60.0)), client_workers=4)
    assert verdict["client_bound"] is False and "idle CPU" in verdict["client_bound_reason"]
