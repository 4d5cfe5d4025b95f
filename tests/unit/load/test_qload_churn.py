"""qload's churn mode as the co-location study drives it: its command line (whole jobs on the
workers, no producers, no warm-up of its own: the window's is the bystanders') and its jobs put
on the monotonic clock by the start instant qload reports."""

from __future__ import annotations

import numpy as np
import pytest

from pglimits_core.load.tools.qload import QueueVerbs
from pglimits_core.load.tools.qload_churn import QloadChurn, job_samples, read_jobs


def flag(argv, name):
    return argv[argv.index(name) + 1]


def test_the_churn_runs_whole_jobs_on_its_workers_at_the_rate():
    load = QloadChurn(QueueVerbs("redis", key="q"), "127.0.0.1:6390", 1534.5, 8, 46, seed=5, binary="/bin/qload")
    (command,) = load.commands()
    argv = command.argv
    assert "-churn" in argv and flag(argv, "-producers") == "0" and flag(argv, "-consumers") == "8"
    assert flag(argv, "-rate") == "1534.5" and flag(argv, "-duration") == "46s" and flag(argv, "-warmup") == "0s"
    assert flag(argv, "-system") == "redis" and flag(argv, "-key") == "q" and flag(argv, "-batch") == "1"
    assert command.timeout_s > 46
    assert flag(argv, "-payload-bytes") == "0"


def test_the_churn_can_size_every_job_as_the_postgres_side_does():
    load = QloadChurn(QueueVerbs("redis", key="q"), "127.0.0.1:6390", 100, 2, 10, binary="/bin/qload",
                      payload_bytes=845)
    (command,) = load.commands()
    assert flag(command.argv, "-payload-bytes") == "845"
    assert load.describe()["payload_bytes"] == 845


def test_jobs_are_put_on_the_monotonic_clock_and_timed_from_their_intended_start():
    start_ns = 5_000_000_000
    jobs = np.array([[2_000_000, 2_100_000, 3_500_000],   # intended 2 ms, acked at 3.5 ms
                     [1_000_000, 1_000_000, 1_250_000]], dtype=np.int64)
    assert job_samples(jobs, start_ns) == [(pytest.approx(5.00125), 250), (pytest.approx(5.0035), 1500)]


def test_only_the_job_rows_of_the_samples_are_the_churns(tmp_path):
    path = tmp_path / "samples.csv"
    path.write_text("send,1,2,3\njob,10,11,15\nclaim,4,5,6\njob,20,20,29\n")
    assert read_jobs(path).tolist() == [[10, 11, 15], [20, 20, 29]]
    assert read_jobs(tmp_path / "absent.csv").shape == (0, 3)
