"""The batch_claim mitigation: the churn moves ``batch`` jobs per pgbench transaction at the same
jobs/s, and every figure downstream counts jobs, not transactions."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from pglimits_core.workloads.interference import churn
from pglimits_core.workloads.interference.points import churn_load
from pglimits_core.workloads.interference.profile import Mitigation
from pglimits_core.workloads.interference.window import per_job

KNOBS = SimpleNamespace(payload_bytes=100, churn_clients=8)


def test_a_batched_churn_offers_the_same_jobs_per_second_in_fewer_transactions():
    plain = churn_load("churn", 1000.0, KNOBS)
    batched = churn_load("churn | batch_claim", 1000.0, KNOBS, {"mitigation": "batch_claim", "batch": 10})
    assert (plain.rate, plain.batch, plain.jobs_per_s) == (1000.0, 1, 1000.0)
    assert (batched.rate, batched.batch, batched.jobs_per_s) == (100.0, 10, 1000.0)
    assert "\\set batch 10" in batched.script and "generate_series(1, :batch)" in batched.script
    assert "\\set batch 1\n" in plain.script and "generate_series" not in plain.script
    assert plain.script == churn.churn_script(100)  # the unmitigated churn is unchanged


def test_each_job_of_a_transaction_is_counted_with_its_time_and_latency():
    samples = [(1_000, 5_000), (2_000, 7_000)]
    assert per_job(samples, 1) == samples
    assert per_job(samples, 3) == [(1_000, 5_000)] * 3 + [(2_000, 7_000)] * 3


def test_a_batch_of_one_is_no_mitigation():
    with pytest.raises(ValidationError, match="batch >= 2"):
        Mitigation(name="batch_claim", mechanism="churn", level=0.75, batch=1)
    assert Mitigation(name="batch_claim", mechanism="churn", level=0.75).batch == 10
