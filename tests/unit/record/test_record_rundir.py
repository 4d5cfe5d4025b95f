"""Run directory: schema round trip, atomic writes, the .partial protocol, the validator."""

import json

import pandas as pd
import pytest

from pglimits_core.record import rundir
from pglimits_core.record.manifest import Manifest, new_manifest
from pglimits_core.record.recorder import Recorder
from pglimits_core.record.results import PhaseInfo, RoleInfo, WorkerStatus, merge_worker_results
from pglimits_core.record.summary import Summary
from pglimits_core.record.validate import main as validate_main
from pglimits_core.record.validate import validate_tree


def small_run():
    recorder = Recorder("c", 0, "claim", 0)
    for k in range(120):
        recorder.record_op("measure", k * 10_000_000, 1, {"service_time": 40_000})
    return merge_worker_results([recorder.result()], [PhaseInfo("measure", 1.0)],
                                [RoleInfo("c", "claim", "closed", 1)],
                                [WorkerStatus("c", 0, "ok", None, "duration")], {"seed": 3})


def manifest(run_id="r1"):
    return new_manifest(run_id, "queue", "postgres", "skiplocked", seed=3,
                        servers={"postgres": {"version": "16.2", "settings": {"fsync": "on"}}})


def test_run_record_round_trips_through_the_schema(tmp_path):
    path = rundir.record_run(small_run(), manifest(), tmp_path)
    assert path == tmp_path / "r1" and not (tmp_path / "r1.partial").exists()
    loaded = Manifest.model_validate_json((path / "manifest.json").read_text())
    assert loaded.status == "complete" and loaded.finished_utc and loaded.seed == 3
    assert loaded.params["load"] == {"seed": 3} and loaded.workers[0]["ended_by"] == "duration"
    assert loaded.client_versions["python"] and "psycopg" in loaded.client_versions
    assert loaded == Manifest.model_validate_json(loaded.model_dump_json())
    summary = Summary.model_validate_json((path / "summary.json").read_text())
    assert summary.entries[0].ops == 120 and summary.entries[0].latencies["service_time"].p99_us
    assert len(pd.read_parquet(path / "timeseries.parquet")) > 1
    histograms = json.loads((path / rundir.HISTOGRAMS_FILE).read_text())
    assert histograms[0]["kind"] == "service_time" and histograms[0]["unit"] == "us"
    assert validate_tree(tmp_path) == ([], [])
    assert validate_main([str(tmp_path)]) == 0


def test_a_run_is_partial_until_finished_and_never_listed_as_done(tmp_path):
    run_dir = rundir.RunDirectory.create(manifest(), tmp_path)
    assert run_dir.path.name == "r1.partial" and rundir.finished_runs(tmp_path) == []
    on_disk = Manifest.model_validate_json((run_dir.path / "manifest.json").read_text())
    assert on_disk.status == "running"
    run_dir.write_result(small_run())
    assert rundir.finished_runs(tmp_path) == []  # data written, still not done
    problems, partial = validate_tree(tmp_path)
    assert problems == [] and partial == [tmp_path / "r1.partial"]
    run_dir.finish()
    assert rundir.finished_runs(tmp_path) == [tmp_path / "r1"]


def test_an_exception_finishes_the_run_as_failed_with_the_reason(tmp_path):
    with pytest.raises(RuntimeError), rundir.RunDirectory.create(manifest(), tmp_path):
        raise RuntimeError("server crashed")
    loaded = Manifest.model_validate_json((tmp_path / "r1" / "manifest.json").read_text())
    assert loaded.status == "failed" and "server crashed" in loaded.error
    assert validate_tree(tmp_path)[0] == []  # a failed run is valid: it says it failed


def test_atomic_write_leaves_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"
    rundir.atomic_write_bytes(target, b"old")

    def disk_full(fd):
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(rundir.os, "fsync", disk_full)
        with pytest.raises(OSError, match="disk full"):
            rundir.atomic_write_bytes(target, b"new")
    with pytest.raises(TypeError):
        rundir.atomic_write_bytes(target, "not bytes")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temp files left


def test_the_same_run_id_cannot_be_written_twice(tmp_path):
    rundir.record_run(small_run(), manifest(), tmp_path)
    with pytest.raises(Exception, match="already exists"):
        rundir.RunDirectory.create(manifest(), tmp_path)


@pytest.mark.parametrize("breakage", ["bad_status", "missing_field", "running_but_final",
                                      "no_summary", "bad_summary", "not_json", "bad_parquet"])
def test_the_validator_rejects_a_broken_record(tmp_path, breakage, capsys):
    path = rundir.record_run(small_run(), manifest(), tmp_path)
    data = json.loads((path / "manifest.json").read_text())
    if breakage == "bad_status":
        data["status"] = "done-ish"
    elif breakage == "missing_field":
        del data["study"]
    elif breakage == "running_but_final":
        data["status"] = "running"
    (path / "manifest.json").write_text(json.dumps(data))
    if breakage == "no_summary":
        (path / "summary.json").unlink()
    elif breakage == "bad_summary":
        summary = json.loads((path / "summary.json").read_text())
        summary["entries"][0]["ops"] = -1
        (path / "summary.json").write_text(json.dumps(summary))
    elif breakage == "not_json":
        (path / "summary.json").write_text("{")
    elif breakage == "bad_parquet":
        (path / "timeseries.parquet").write_bytes(b"nope")
    problems, _ = validate_tree(tmp_path)
    assert problems, breakage
    assert validate_main([str(tmp_path)]) == 1
    assert "problem" in capsys.readouterr().out


def test_new_run_ids_are_unique_and_path_safe():
    ids = {rundir.new_run_id("queue", "postgres", "skip locked/v2") for _ in range(20)}
    assert len(ids) == 20 and all("/" not in i and " " not in i for i in ids)
