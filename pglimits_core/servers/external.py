"""Servers the user already runs (a docker compose stack, a managed service), given as URLs.

They go through the same interface with no provisioning: ``start()`` only checks they answer,
``stop()`` leaves them alone. Health and description come from the system's own server class
(its static ``probe(url)`` and ``describe_url(url)``), so they are identical to ours.
"""

from __future__ import annotations

from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.base import Endpoint, Server
from pglimits_core.servers.registry import server_class


class ExternalServer(Server):
    def __init__(self, system: str, url: str, **options: Any):
        self.name = system
        super().__init__(None, None, **options)
        self.url = url
        self.system_class = server_class(system)

    def start(self) -> Endpoint:
        if not self.health():
            raise PGLimitsError(f"external {self.name} at {self.url} does not answer",
                                "check the URL/DSN and that the service is up")
        self.endpoint = Endpoint(self.name, self.url, host="", external=True)
        return self.endpoint

    def health(self) -> bool:
        return bool(self.system_class.probe(self.url))

    def describe(self) -> dict[str, Any]:
        description = self.system_class.describe_url(self.url)
        description.setdefault("settings", {})["external_url"] = self.url
        return description

    def storage_bytes(self) -> int:
        return -1  # not ours to measure on disk; studies report sizes from the server's own stats

    def stop(self) -> None:
        self.endpoint = None
