"""The search study's variant: one system with its options; ``label`` names it in every table,
chart and run record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pglimits_core.studies.variant import Variant
from pglimits_core.workloads.search.systems.base import SearchSystem
from pglimits_core.workloads.search.systems.registry import make_system, server_for


@dataclass(frozen=True)
class SearchVariant(Variant):
    """``options`` are the system's defaults overridden by the profile's (validated)."""

    @property
    def server(self) -> str:
        return server_for(self.system)

    def engine(self) -> SearchSystem:
        """The system with this variant's options, not yet connected."""
        return make_system(self.system, self.options)

    def query_template(self) -> str:
        """The measured query as its system receives it (terms as placeholders)."""
        return self.engine().query_template()


def variant(system: str, label: str | None = None, **options: Any) -> SearchVariant:
    """A validated variant; an unknown system or option is one line naming the fix."""
    engine = make_system(system, options)
    return SearchVariant(label or engine.default_label(), system, engine.options)


def load_variant(system: str) -> SearchVariant:
    """What a load point names: the system itself, with its default options (a load builds the
    index every variant of the system queries, whatever their options)."""
    return variant(system, label=system)
