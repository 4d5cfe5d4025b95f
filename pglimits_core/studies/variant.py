"""One shape for "a system with its options" in every workload.

A workload's variant names one of its systems (``system``), the options that system takes and
the ``label`` every table, chart and run record shows. The server a variant needs is the
workload's business (its systems registry knows it), so each workload's subclass supplies
``server``; the study loop and the points only ever read these four names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Variant:
    """``label`` (e.g. "pg_delete batch=10"), ``system`` (a key of the workload's systems
    registry) and ``options`` (already validated by the workload)."""

    label: str
    system: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def server(self) -> str:
        """The server this variant runs on (``servers.registry`` name)."""
        raise NotImplementedError(f"{type(self).__name__} must say which server {self.system} needs")
