"""Code a newcomer can live in: no module of the package over 400 lines, no function over 40."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pglimits_core"
MODULE_LINES, FUNCTION_LINES = 400, 40


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MODULE_LINES}
    assert long == {}


def test_no_function_is_over_40_lines():
    long = {f"{p.relative_to(PACKAGE)}:{node.name}": node.end_lineno - node.lineno + 1
            for p in PACKAGE.rglob("*.py") for node in ast.walk(ast.parse(p.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > FUNCTION_LINES}
    assert long == {}
