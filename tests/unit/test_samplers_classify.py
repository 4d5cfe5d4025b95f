"""The client-bound verdict on synthetic per-second CPU series (% of one core)."""

import math

import pytest

from pglimits_core.samplers.classify import classify_client_bound, steady_median


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


def test_no_samples_cannot_tell():
    bound, reason = classify_client_bound([None, math.nan], [10.0], cores=2)
    assert not bound and "cannot tell" in reason


def test_one_spike_does_not_flip_the_verdict():
    client = [20.0] * 9 + [199.0]
    assert not classify_client_bound(client, [10.0] * 10, cores=2)[0]


def test_steady_median_drops_none_and_nan():
    assert steady_median([None, 1.0, math.nan, 3.0]) == pytest.approx(2.0)
    assert steady_median([]) is None
