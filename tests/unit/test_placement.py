"""Placement: the CPU sets are checked before anything runs, and a bad one is one line naming the fix."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from pglimits_core import placement
from pglimits_core.errors import PGLimitsError
from pglimits_core.placement import SERVER_CPUS_ENV, held, in_force, placed, resolve, server_argv
from pglimits_core.profiles import PlacementSpec


def test_split_by_default_gives_the_servers_the_first_half_and_the_load_the_second():
    assert resolve("split", allowed=[0, 1]).server_cpus == (0,)
    assert resolve("split", allowed=[0, 1]).load_cpus == (1,)
    four = resolve("split", allowed=[0, 1, 2, 3])
    assert (four.server_cpus, four.load_cpus) == ((0, 1), (2, 3))
    assert four.describe()["client_and_server_share_cores"] is False


def test_shared_puts_both_sides_on_every_allowed_cpu():
    shared = resolve("shared", allowed=[0, 1])
    assert shared.server_cpus == shared.load_cpus == (0, 1)
    assert shared.describe()["client_and_server_share_cores"] is True


@pytest.mark.parametrize("kwargs, words", [
    ({"mode": "split", "allowed": [0]}, "needs 2 CPUs"),
    ({"mode": "split", "server_cpus": [0], "load_cpus": [0], "allowed": [0, 1]}, "overlap"),
    ({"mode": "split", "server_cpus": [0], "load_cpus": [5], "allowed": [0, 1]}, "may not use"),
    ({"mode": "split", "server_cpus": [], "load_cpus": [1], "allowed": [0, 1]}, "needs a server CPU set"),
    ({"mode": "sideways", "allowed": [0, 1]}, "not known"),
])
def test_a_bad_placement_is_one_line_naming_the_fix(kwargs, words):
    with pytest.raises(PGLimitsError) as caught:
        resolve(**kwargs)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_the_profile_key_resolves_to_a_placement():
    assert PlacementSpec().mode == "split"
    assert PlacementSpec(mode="shared").resolve().mode == "shared"


def test_servers_start_through_taskset_only_under_a_placement(monkeypatch):
    monkeypatch.delenv(SERVER_CPUS_ENV, raising=False)
    assert server_argv(["redis-server"]) == ["redis-server"]
    monkeypatch.setenv(SERVER_CPUS_ENV, "0")
    assert server_argv(["redis-server", "--port", "1"]) == ["taskset", "-c", "0", "redis-server", "--port", "1"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_placed_pins_this_process_to_the_load_set_and_restores_it_even_on_error(monkeypatch):
    monkeypatch.delenv(SERVER_CPUS_ENV, raising=False)
    before = os.sched_getaffinity(0)
    split = resolve("split")
    with pytest.raises(RuntimeError), placed(split):
        assert os.sched_getaffinity(0) == set(split.load_cpus)
        assert in_force().mode == "split" and in_force().server_cpus == split.server_cpus
        raise RuntimeError("a study that fails")
    assert os.sched_getaffinity(0) == before
    assert SERVER_CPUS_ENV not in os.environ


def test_held_says_whether_every_observed_process_stayed_in_its_set():
    config = {"server_cpus": [0], "load_cpus": [1]}
    assert held(config, {"server_affinity": [[0]], "load_affinity": [[1]]}) is True
    assert held(config, {"server_affinity": [[0, 1]], "load_affinity": [[1]]}) is False
    assert held(config, {}) is None


def test_the_cpu_facts_say_whether_server_and_load_share_cores_under_the_placement_in_force(monkeypatch):
    from pglimits_core.samplers.classify import host_frame_verdict
    from pglimits_core.samplers.host_facts import cpu_facts

    monkeypatch.setattr(placement.os, "sched_getaffinity", lambda pid: {1})
    monkeypatch.setenv(placement.SERVER_CPUS_ENV, "0")
    assert cpu_facts()["client_server_share_cores"] is False
    frame = pd.DataFrame({"client_cpu_pct": [50.0, 60.0], "server_cpu_pct": [90.0, 95.0]})
    assert host_frame_verdict(frame, 4)["cpu"]["client_and_server_share_cores"] is False
    monkeypatch.setenv(placement.SERVER_CPUS_ENV, "0,1")
    assert cpu_facts()["client_server_share_cores"] is True
    monkeypatch.delenv(placement.SERVER_CPUS_ENV)
    assert host_frame_verdict(frame, 4)["cpu"]["client_and_server_share_cores"] is True
