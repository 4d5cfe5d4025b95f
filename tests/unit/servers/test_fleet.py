"""Fleet ordering and cleanup, with fake in-memory servers (no processes)."""

from typing import Any

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.servers import fleet as fleet_mod
from pglimits_core.servers.base import Endpoint, Server

EVENTS: list[str] = []


class FakeServer(Server):
    fail = False

    def start(self) -> Endpoint:
        if self.fail:
            raise PGLimitsError(f"{self.name} cannot start", "nothing")
        EVENTS.append(f"start {self.name}")
        self.endpoint = Endpoint(self.name, f"fake://{self.name}")
        return self.endpoint

    def health(self) -> bool:
        return True

    def describe(self) -> dict[str, Any]:
        return {"version": "0", "settings": {}}

    def storage_bytes(self) -> int:
        return 0

    def stop(self) -> None:
        EVENTS.append(f"stop {self.name}")


class Alpha(FakeServer):
    name = "alpha"


class Beta(FakeServer):
    name = "beta"


class Broken(FakeServer):
    name = "broken"
    fail = True


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch):
    classes = {"alpha": Alpha, "beta": Beta, "broken": Broken}
    monkeypatch.setattr(fleet_mod, "server_class", classes.__getitem__)
    monkeypatch.setattr(fleet_mod, "validate_names", lambda names: names)
    EVENTS.clear()


def test_servers_stop_in_reverse_order_even_when_the_body_raises():
    with pytest.raises(RuntimeError), fleet_mod.Fleet(["alpha", "beta"]):
        raise RuntimeError("study crashed")
    assert EVENTS == ["start alpha", "start beta", "stop beta", "stop alpha"]


def test_strict_fleet_stops_what_it_started_when_one_server_fails():
    with pytest.raises(PGLimitsError, match="broken cannot start"):
        fleet_mod.Fleet(["alpha", "broken", "beta"]).start()
    assert EVENTS == ["start alpha", "stop alpha"]


def test_lenient_fleet_reports_the_unavailable_server_and_runs_the_rest():
    with fleet_mod.Fleet(["alpha", "broken", "beta"], strict=False) as fleet:
        assert set(fleet.endpoints) == {"alpha", "beta"}
        assert "broken cannot start" in fleet.unavailable["broken"]


def test_sigterm_becomes_system_exit_so_servers_stop():
    import os
    import signal

    with pytest.raises(SystemExit), fleet_mod.Fleet(["alpha"]):
        os.kill(os.getpid(), signal.SIGTERM)
        signal.pause()
    assert EVENTS == ["start alpha", "stop alpha"]
