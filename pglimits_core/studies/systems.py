"""One registry shape for every workload's systems: ``name -> "module:Class"`` (imported only
when a system is used), the server each one needs, and the options each takes with their checks.

A workload's ``systems/registry.py`` holds its three tables and one ``SystemRegistry`` over them;
adding a system is its file plus one line in each table. Options are validated when a variant is
made, so a typo fails before any server starts, as one line naming the fix.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from pglimits_core.errors import PGLimitsError

OptionCheck = Callable[[Any], Any]  # value -> normalised value; ValueError/TypeError when bad


class SystemRegistry:
    """``what`` names the workload's systems in errors ("queue" -> "unknown queue system 'x'")."""

    def __init__(self, what: str, classes: dict[str, str], servers: dict[str, str],
                 options: dict[str, dict[str, OptionCheck]] | None = None):
        missing = set(classes) ^ set(servers)
        if missing:
            raise ValueError(f"{what} systems without both a class and a server: {sorted(missing)}")
        self.what = what
        self.classes = classes
        self.servers = servers
        self.options = options or {}

    def names(self) -> list[str]:
        return list(self.classes)

    def check(self, system: str) -> str:
        if system not in self.classes:
            raise PGLimitsError(f"unknown {self.what} system {system!r}", f"use one of: {', '.join(self.classes)}")
        return system

    def server_for(self, system: str) -> str:
        return self.servers[self.check(system)]

    def system_class(self, system: str) -> type:
        module_name, class_name = self.classes[self.check(system)].split(":")
        return getattr(importlib.import_module(module_name), class_name)

    def validate_options(self, system: str, options: dict[str, Any]) -> dict[str, Any]:
        """The options normalised; a one-line PGLimitsError for an unknown or bad one."""
        allowed = self.options.get(self.check(system), {})
        resolved = {}
        for key, value in options.items():
            if key not in allowed:
                raise PGLimitsError(f"unknown option {key!r} for {self.what} system {system!r}",
                                    f"use one of: {', '.join(allowed) or '(none)'}")
            try:
                resolved[key] = allowed[key](value)
            except (TypeError, ValueError) as exc:
                raise PGLimitsError(f"{system} option {key}={value!r} is invalid", f"{key} {exc}") from None
        return resolved
