"""``--resume`` continues a run only on the machine that started it."""

from __future__ import annotations

import run_all
from pglimits_core.studies.status import other_machine, this_machine


def test_entries_from_this_machine_resume():
    status = {"10-queue.ipynb": {"status": "complete", "host": this_machine()}, "20-search.ipynb": {"status": "pending"}}
    assert other_machine(status) is None
    assert run_all.started_elsewhere(status) is False


def test_entries_from_another_machine_start_over_and_say_why(capsys):
    status = {"10-queue.ipynb": {"status": "complete", "host": "some-other-cpu-2vcpu-24gib"}}
    assert other_machine(status) == "some-other-cpu-2vcpu-24gib"
    assert run_all.started_elsewhere(status) is True
    said = capsys.readouterr().out
    assert "some-other-cpu-2vcpu-24gib" in said and this_machine() in said and "starting over" in said


def test_entries_written_before_hosts_were_recorded_do_not_block_a_resume():
    assert other_machine({"10-queue.ipynb": {"status": "complete"}}) is None


def test_the_closing_summary_names_every_server_death_and_whether_it_was_restarted(tmp_path, monkeypatch, capsys):
    """A Qdrant SIGKILLed mid-study and restarted leaves a complete notebook: the summary still
    says it died."""
    import json

    monkeypatch.setattr(run_all, "profile_runs_dir", lambda profile: tmp_path)
    deaths = [{"server": "qdrant", "how": "SIGKILL", "at": "12:03:41", "log_tail": "", "restarted": True,
               "restart_error": ""},
              {"server": "redis", "how": "exit status 1", "at": "12:09:02", "log_tail": "", "restarted": False,
               "restart_error": "port 6390 in use"}]
    (tmp_path / "vectors.outcome.json").write_text(json.dumps({"failures": [], "deaths": deaths}))
    run_all.print_server_deaths("quick", ["30-vectors", "10-queue"])
    said = capsys.readouterr().err.splitlines()
    assert said == ["run_all: vectors: qdrant died (SIGKILL) at 12:03:41; restarted, its points measured again",
                    "run_all: vectors: redis died (exit status 1) at 12:09:02; not restarted: port 6390 in use"]
