"""The package's layers, checked on its imports: data flows one way.

- The core (servers, datasets, load, record, samplers, studies, analysis, plotting) and the
  workload registry never import a workload: a workload plugs into the core, not the reverse.
- A workload never imports another workload, except that workload's ``systems/`` (a composite
  workload may run another's operations, never its plan, tables or report).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pglimits_core"
CORE = ("servers", "datasets", "load", "record", "samplers", "studies", "experiments", "analysis", "plotting")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every ``pglimits_core`` module a file imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("pglimits_core.")}


def import_edges() -> list[tuple[str, str]]:
    return [(module_name(path), target) for path in sorted(PACKAGE.rglob("*.py"))
            for target in sorted(imported_modules(path))]


def layer_violation(source: str, target: str) -> str | None:
    """Why ``source`` may not import ``target``; None when it may."""
    src, dst = source.split("."), target.split(".")
    if len(dst) < 3 or dst[1] != "workloads":
        return None
    if src[1] in CORE or source == "pglimits_core.registry":
        return f"{source} (core) imports the workload module {target}"
    across = src[1] == "workloads" and len(src) > 2 and src[2] != dst[2]
    if across and (len(dst) < 4 or dst[3] != "systems"):
        return f"{source} imports {target}: another workload's plan/tables (only its systems/ may be reused)"
    return None


def test_the_package_has_modules_to_check():
    edges = import_edges()
    assert len(edges) > 200
    assert any(target.startswith("pglimits_core.workloads.") for _, target in edges)


def test_no_import_runs_up_from_the_core_or_across_workloads():
    violations = [why for source, target in import_edges() if (why := layer_violation(source, target))]
    assert violations == []


@pytest.mark.parametrize(("source", "target", "allowed"), [
    ("pglimits_core.analysis.report", "pglimits_core.workloads.queue.tables", False),
    ("pglimits_core.studies.runner", "pglimits_core.workloads.queue.systems.base", False),
    ("pglimits_core.registry", "pglimits_core.workloads.queue.workload", False),
    ("pglimits_core.workloads.search.tables", "pglimits_core.workloads.queue.tables", False),
    ("pglimits_core.workloads.interference.points", "pglimits_core.workloads.queue.systems.base", True),
    ("pglimits_core.workloads.queue.tables", "pglimits_core.workloads.queue.health", True),
    ("pglimits_core.workloads.queue.tables", "pglimits_core.analysis.flags", True),
    ("pglimits_core.cli", "pglimits_core.workloads.queue.harness_bench", True),
])
def test_the_rule_itself(source, target, allowed):
    assert (layer_violation(source, target) is None) is allowed


def test_importing_what_a_notebook_imports_leaves_matplotlib_s_backend_alone():
    """A module that picks the Agg backend at import (the scoreboards do, for the command line)
    must not be reached from a notebook's imports: in a kernel it unhooks the inline backend and
    every figure then shows as text, not as an image."""
    import subprocess
    import sys

    script = ("import matplotlib; from pglimits_core import notebook; from pglimits_core.registry import workloads; "
              "import pglimits_core.analysis.report; [w.report_sections for w in workloads()]; "
              "print(matplotlib.get_backend())")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**__import__("os").environ, "MPLBACKEND": "svg"}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().lower() == "svg", f"the backend became {result.stdout.strip()}"
