"""Servers for a notebook or ``run_all.py``: attach to a detached fleet, or start our own.

Under JupyterLab (``make lab``) the servers are already up and recorded by
``pglimits servers up --detach``; a notebook attaches to them. Under papermill each notebook
starts the servers it needs and stops them when its study call returns, even on error.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pglimits_core.config import state_dir
from pglimits_core.placement import pin_tree, server_cpus_now
from pglimits_core.servers.fleet import Fleet, running_endpoints
from pglimits_core.servers.registry import server_class
from pglimits_core.studies.study_lock import one_study_at_a_time


class AttachedFleet:
    """The same face as ``Fleet`` (endpoints, describe) over servers someone else runs."""

    def __init__(self, endpoints: dict[str, Any]):
        self.endpoints = endpoints
        self.unavailable: dict[str, str] = {}

    def describe(self) -> dict[str, dict[str, Any]]:
        return {name: server_class(name).describe_url(ep.url) for name, ep in self.endpoints.items()}


@contextlib.contextmanager
def study_servers(names: list[str], fresh_data: bool = True, external: dict[str, str] | None = None,
                  options: dict[str, dict[str, Any]] | None = None) -> Iterator[Fleet | AttachedFleet]:
    """Attach if every server in ``names`` is recorded and answering; else start them (lenient:
    a server that cannot start is reported in ``unavailable``, the rest run). ``external``
    (from the profile) names servers to attach by URL instead of starting them; ``options``
    (server -> start options, e.g. a JVM heap) apply to the servers started here."""
    external = {name: url for name, url in (external or {}).items() if name in names}
    running = running_endpoints()
    if all(name in running for name in names):
        attached = {name: running[name] for name in names}
        if (cpus := server_cpus_now()) is not None:  # started without our placement: move them onto it
            pin_tree([pid for endpoint in attached.values() for pid in endpoint.pids], cpus)
        yield AttachedFleet(attached)
        return
    root = state_dir() / "study"
    with one_study_at_a_time():  # another study's servers may be running on ``root``
        if fresh_data:  # a study never inherits queue tables or dead tuples from an earlier run
            shutil.rmtree(root, ignore_errors=True)
        with Fleet(names, strict=False, data_root=Path(root), external=external, options=options) as fleet:
            yield fleet
