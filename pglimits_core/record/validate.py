"""Validate every run record under a path against the schema.

``python -m pglimits_core.record.validate PATH`` checks each finished run directory (one
holding ``manifest.json``) and each ``summary.json`` / ``manifest.json`` found elsewhere
(e.g. committed results). It prints one line per problem and exits 1 when there is any;
``*.partial`` directories are runs in progress or abandoned, so they are listed, not failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
from pydantic import BaseModel, ValidationError

from pglimits_core.record.manifest import Manifest
from pglimits_core.record.rundir import PARTIAL_SUFFIX
from pglimits_core.record.summary import Summary

SCHEMAS: dict[str, type[BaseModel]] = {"manifest.json": Manifest, "summary.json": Summary}
REQUIRED_RUN_FILES = ("manifest.json", "summary.json", "timeseries.parquet")


def _first_errors(error: ValidationError, limit: int = 3) -> str:
    parts = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:limit]]
    return "; ".join(parts)


def validate_json_file(path: Path) -> list[str]:
    """Problems with one manifest/summary file (empty list when it matches its schema)."""
    try:
        SCHEMAS[path.name].model_validate(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError) as error:
        return [f"{path}: unreadable: {error}"]
    except ValidationError as error:
        return [f"{path}: schema: {_first_errors(error)}"]
    return []


def validate_run_dir(run_dir: Path) -> list[str]:
    """Problems with one finished run directory."""
    missing = [name for name in REQUIRED_RUN_FILES if not (run_dir / name).exists()]
    if "manifest.json" in missing:
        return [f"{run_dir}: missing manifest.json"]
    problems = validate_json_file(run_dir / "manifest.json")
    if not problems:
        status = json.loads((run_dir / "manifest.json").read_text())["status"]
        if status == "running":
            problems.append(f"{run_dir}: finished directory but manifest status is 'running'")
        if status == "complete":
            problems += [f"{run_dir}: complete run is missing {name}" for name in missing]
    if (run_dir / "summary.json").exists():
        problems += validate_json_file(run_dir / "summary.json")
    problems += _check_parquet(run_dir / "timeseries.parquet")
    return problems


def _check_parquet(path: Path) -> list[str]:
    if not path.exists():
        return []
    try:
        pq.read_schema(path)
    except Exception as error:  # pyarrow raises several types for a corrupt file
        return [f"{path}: unreadable parquet: {error}"]
    return []


def validate_tree(root: Path) -> tuple[list[str], list[Path]]:
    """``(problems, partial run directories)`` for every record under ``root``."""
    problems: list[str] = []
    partial = sorted(p for p in root.rglob(f"*{PARTIAL_SUFFIX}") if p.is_dir())
    run_dirs = {m.parent for m in root.rglob("manifest.json")}
    run_dirs = {d for d in run_dirs if not any(part.endswith(PARTIAL_SUFFIX) for part in d.parts)}
    for run_dir in sorted(run_dirs):
        problems += validate_run_dir(run_dir)
    for loose in sorted(root.rglob("summary.json")):
        if loose.parent not in run_dirs and not str(loose.parent).endswith(PARTIAL_SUFFIX):
            problems += validate_json_file(loose)
    return problems, partial


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="a run directory or a tree of them")
    root = parser.parse_args(argv).path
    if not root.exists():
        print(f"{root}: does not exist — fix: pass a run directory or data/runs", file=sys.stderr)
        return 2
    problems, partial = validate_tree(root)
    for path in partial:
        print(f"note: {path} is an unfinished run (ignored)")
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)" if problems else "all run records valid")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
