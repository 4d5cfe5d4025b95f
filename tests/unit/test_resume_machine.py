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
