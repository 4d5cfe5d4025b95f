"""Host facts say when they were measured, are measured again as a study ends, and the
results block's Hardware line names the time — and both figures when they disagree.

The fsync probe and the harness ceiling are faked (no disk flushes, no servers): what is tested
is the stamping, the start/end pair and the wording, not the measurements themselves.
"""

import json
from types import SimpleNamespace

import pytest
import yaml

from pglimits_core.analysis import readme_results
from pglimits_core.analysis.readme_results import closing_facts, fsync_words, hardware_line
from pglimits_core.config import profiles_dir
from pglimits_core.profiles import Profile
from pglimits_core.studies import calibration, runner
from pglimits_core.studies.study import Outcome, outcome_path

START, END = "2025-03-01T10:02:41.123+00:00", "2025-03-01T11:47:05.000+00:00"


@pytest.fixture
def fake_probes(monkeypatch):
    """fsync medians and ceilings in the order asked; a server named ``dead`` cannot be measured."""
    medians = iter([150.0, 900.0])
    stamps = iter([START, END, START, END, START, END])
    monkeypatch.setattr("pglimits_core.samplers.measure_fsync_latency",
                        lambda path, n: {"median_us": next(medians), "p99_us": 1.0, "n": n})
    monkeypatch.setattr(runner, "utc_now_iso", lambda: next(stamps))

    def ceiling(name, url, workers, duration_s):
        if name == "dead":
            raise ConnectionError("connection refused")
        return {"op": "noop", "ops_per_s": 5000.0}

    monkeypatch.setattr(calibration, "harness_ceiling", ceiling)


def endpoint(url="postgresql://127.0.0.1/x"):
    return SimpleNamespace(url=url, pids=[])


def test_each_host_fact_is_stamped_with_when_it_was_measured(fake_probes, tmp_path):
    fsync = runner.timed_fsync(tmp_path)
    assert fsync["median_us"] == 150.0 and fsync["n"] == 200 and fsync["measured_at"] == START
    ceilings = runner.measure_ceilings({"postgres": endpoint()})
    assert ceilings == {"postgres": {"op": "noop", "ops_per_s": 5000.0, "measured_at": END}}


def test_a_closing_ceiling_that_cannot_be_measured_is_an_error_entry_not_a_lost_study(fake_probes):
    found = runner.measure_ceilings({"dead": endpoint()}, tolerant=True)
    assert found["dead"]["error"] == "ConnectionError: connection refused" and found["dead"]["measured_at"]
    with pytest.raises(ConnectionError):
        runner.measure_ceilings({"dead": endpoint()})


def test_the_end_of_a_study_measures_again_beside_the_start(fake_probes, tmp_path):
    start_fsync = runner.timed_fsync(tmp_path)
    ctx = runner.Context({"postgres": endpoint(), "redis": endpoint()}, {}, {"fsync_8k": start_fsync},
                         ceilings={"postgres": {"ops_per_s": 4000.0, "measured_at": START}}, runs_root=tmp_path)
    facts = runner.closing_host_facts(ctx)
    assert facts["start"] == {"fsync_8k": start_fsync, "harness_ceiling": ctx.ceilings}
    assert facts["end"]["fsync_8k"]["median_us"] == 900.0 and facts["end"]["fsync_8k"]["measured_at"] == END
    # only the servers whose ceiling was measured at the start (redis's was not asked for)
    assert set(facts["end"]["harness_ceiling"]) == {"postgres"}


def test_the_study_outcome_file_carries_the_host_facts(tmp_path):
    outcome = Outcome(host_facts={"end": {"fsync_8k": {"median_us": 900.0, "measured_at": END}}})
    assert outcome.to_dict()["host_facts"]["end"]["fsync_8k"]["median_us"] == 900.0
    assert Outcome().to_dict()["host_facts"] == {}


def test_the_hardware_line_names_when_the_fsync_median_was_measured():
    assert fsync_words({"median_us": 150.4}) == "median 150 µs"  # an older record: as it always read
    assert fsync_words({"median_us": 150.4, "measured_at": START}) == "median 150 µs (measured at 10:02 UTC)"


def test_two_measurements_within_twice_each_other_show_the_first_only():
    first, again = {"median_us": 150.0, "measured_at": START}, {"median_us": 290.0, "measured_at": END}
    assert fsync_words(first, again) == "median 150 µs (measured at 10:02 UTC)"
    assert fsync_words(first, {"median_us": 80.0, "measured_at": END}) == "median 150 µs (measured at 10:02 UTC)"


def test_two_measurements_more_than_twice_apart_are_both_shown():
    first, again = {"median_us": 150.0, "measured_at": START}, {"median_us": 900.0, "measured_at": END}
    words = fsync_words(first, again)
    assert words.startswith("median 150 µs (measured at 10:02 UTC), 900 µs (measured at 11:47 UTC)")
    assert "2×" in words
    assert "(measured at 10:02 UTC), 50 µs" in fsync_words(first, {"median_us": 50.0, "measured_at": END})


def record(fsync, run_id="20250301T100241-queue-x"):
    return {"manifest": {"run_id": run_id, "git": {"sha": "abcdef1234567", "dirty": False},
                         "host": {"cpu_model": "CPU", "logical_cores": 2, "ram_total_bytes": 8 * 2**30,
                                  "fsync_8k": fsync}}}


def test_hardware_line_reads_the_newest_record_and_the_studys_closing_figure():
    records = [record({"median_us": 150.0, "measured_at": START})]
    assert hardware_line(records) == ("CPU, 2 vCPU shared by clients and servers, 8 GiB RAM, fsync of 8 kB median "
                                      "150 µs (measured at 10:02 UTC); git abcdef1234")
    closing = {"fsync_8k": {"median_us": 900.0, "measured_at": END}}
    split = {"mode": "split", "server_cpus": [0], "load_cpus": [1], "client_and_server_share_cores": False}
    placed = [record({"median_us": 150.0, "measured_at": START}) for _ in range(3)]
    placed[0]["manifest"]["placement"] = placed[2]["manifest"]["placement"] = split
    assert "2 vCPU split: servers on CPU 0, load on CPU 1, 8 GiB" in hardware_line(placed)
    placed[1]["manifest"]["placement"] = {**split, "server_cpus": [0, 1], "client_and_server_share_cores": True}
    assert ("vCPU split: servers on CPU 0, load on CPU 1 (2 records); shared by clients and servers (1 record),"
            in hardware_line(placed))
    assert "900 µs (measured at 11:47 UTC)" in hardware_line(records, closing)


def test_closing_facts_come_from_the_outcome_file_and_are_none_without_it(tmp_path):
    assert closing_facts(tmp_path, "queue") is None
    outcome_path(tmp_path, "queue").write_text(json.dumps({"failures": []}))  # written before host facts
    assert closing_facts(tmp_path, "queue") is None
    end = {"fsync_8k": {"median_us": 900.0, "measured_at": END}}
    outcome_path(tmp_path, "queue").write_text(json.dumps({"host_facts": {"start": {}, "end": end}}))
    assert readme_results.closing_facts(tmp_path, "queue") == end


def test_the_ceilings_run_as_long_as_the_profile_says_at_the_start_and_at_the_end(monkeypatch, tmp_path):
    asked: list[float] = []

    def ceiling(name, url, workers, duration_s):
        asked.append(duration_s)
        return {"op": "noop", "ops_per_s": 5000.0}

    monkeypatch.setattr(calibration, "harness_ceiling", ceiling)
    monkeypatch.setattr(runner, "timed_fsync", lambda path: {"median_us": 150.0})
    started = runner.measure_ceilings({"postgres": endpoint()}, duration_s=0.5)
    ctx = runner.Context({"postgres": endpoint()}, {}, {}, ceilings=started, runs_root=tmp_path, ceiling_s=0.5)
    runner.closing_host_facts(ctx)
    assert asked == [0.5, 0.5]
    quick, full = (yaml.safe_load((profiles_dir() / f"{name}.yaml").read_text()) for name in ("quick", "full"))
    assert quick["harness_ceiling_s"] == 0.5 and "harness_ceiling_s" not in full  # full: the default 1.5 s
    assert Profile(name="x").harness_ceiling_s == 1.5
