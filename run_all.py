#!/usr/bin/env python
"""Reproduce the study: execute every workload notebook with papermill for a profile.

    python run_all.py --profile quick            # what `make study` runs
    python run_all.py --profile full --resume    # skip completed notebooks; an interrupted one
                                                 # reuses the points it had already measured
    python run_all.py --only 10-queue --force

Each notebook starts the servers it needs and stops them when it ends (also on Ctrl-C);
executed copies go to data/executed/<profile>/. A failed notebook does not stop the others;
the exit code is non-zero and the summary says what failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pglimits_core.config import NOTEBOOKS_DIR, profile_figures_dir, profile_results_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.profiles import load_profile
from pglimits_core.servers import ownership
from pglimits_core.studies.status import (
    COMPLETE,
    PENDING,
    RUNNING,
    executed_dir,
    read_status,
    set_status,
)

# Workload notebooks in study order (each new workload is added here, for now: the study framework
# will read them from one workload registry).
# The report comes last: it reads the run records the workload notebooks just wrote.
NOTEBOOKS = ["10-queue", "90-report"]
REPORT = "90-report"  # always last: it reads the run records the workload notebooks wrote


def check_parameters(notebook: Path, parameters: dict) -> None:
    """papermill only warns about unknown parameters; we refuse them before running anything."""
    import papermill

    declared = set(papermill.inspect_notebook(str(notebook)))
    unknown = set(parameters) - declared
    if unknown:
        raise PGLimitsError(f"{notebook.name} has no parameter(s) {sorted(unknown)}",
                            "add them to its parameters cell or drop them from run_all.py")


def execute(name: str, profile: str, figures_dir: str = "", resume: bool = False) -> tuple[str, str | None, float]:
    import papermill

    source = NOTEBOOKS_DIR / f"{name}.ipynb"
    parameters = {"profile": profile, **({"figures_dir": figures_dir} if figures_dir else {})}
    if name != REPORT:  # every workload notebook declares `resume`; the report has nothing to resume
        parameters["resume"] = resume
    check_parameters(source, parameters)
    target = executed_dir(profile) / f"{name}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        # the notebook's stderr (its study progress bar: point, count, time left) is streamed here
        papermill.execute_notebook(str(source), str(target), parameters=parameters,
                                   cwd=str(NOTEBOOKS_DIR), progress_bar=False, stderr_file=sys.stderr)
    except papermill.PapermillExecutionError as exc:
        return "failed", f"{exc.ename}: {exc.evalue}"[:500], time.monotonic() - started
    return "complete", None, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--only", action="append", choices=NOTEBOOKS, help="run just this notebook")
    parser.add_argument("--resume", action="store_true",
                        help="skip notebooks that completed; an interrupted one keeps its measured points")
    parser.add_argument("--force", action="store_true", help="rerun even completed notebooks")
    # tests and scratch runs must not overwrite the committed figures/
    parser.add_argument("--figures-dir", default="",
                        help="write figures here instead of figures/<host-id>/<profile>/")
    args = parser.parse_args(argv)
    try:
        load_profile(args.profile)  # a bad profile fails here, before any server starts
        stop_orphans()
        return run(args)
    except PGLimitsError as exc:
        print(f"run_all: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("run_all: interrupted; the notebook's servers were stopped", file=sys.stderr)
        return 130


def stop_orphans() -> None:
    """A run killed earlier (no cleanup) may have left its kernel, servers and workers running:
    stop them before anything starts, so they do not sit inside this run's measurements."""
    found = ownership.stop_orphans()
    if found:
        print(f"run_all: {ownership.summary(found)}", flush=True)


def run(args: argparse.Namespace) -> int:
    owner = ownership.claim_ownership(take_over=True)  # the kernels, servers, workers are this run's
    status = read_status(args.profile)
    names = args.only or NOTEBOOKS
    fresh = not args.resume or args.force
    # nothing a fresh run reruns may read as complete before it is — nor the report, which
    # describes the records a fresh run moves aside
    for name in dict.fromkeys([*names, REPORT]) if fresh else []:
        status = set_status(args.profile, name, status=PENDING)
    ran_something = False
    for index, name in enumerate(names, start=1):
        # the report reads every workload's records: once any workload reran, it is stale
        stale_report = name == REPORT and ran_something
        if not fresh and not stale_report and status.get(name, {}).get("status") == COMPLETE:
            print(f"[{index}/{len(names)}] {name}: complete earlier, skipped (--force reruns)")
            continue
        if status.get(name, {}).get("status") not in (None, PENDING, COMPLETE):
            print(f"[{index}/{len(names)}] {name}: was {status[name]['status']} last time; running it again")
        ran_something = True
        print(f"[{index}/{len(names)}] {name}: running with profile {args.profile} ...", flush=True)
        set_status(args.profile, name, status=RUNNING, owner=owner)
        result, error, elapsed = execute(name, args.profile, args.figures_dir, resume=not fresh)
        status = set_status(args.profile, name, status=result, error=error, elapsed_s=round(elapsed, 1))
        print(f"[{index}/{len(names)}] {name}: {result} in {elapsed:.0f}s" + (f" — {error}" if error else ""))
    failed = {n: s for n, s in status.items() if n in names and s["status"] != COMPLETE}
    print(f"run_all: {len(names) - len(failed)} of {len(names)} notebooks complete; executed copies in "
          f"{executed_dir(args.profile)}; figures in {args.figures_dir or profile_figures_dir(args.profile)}; "
          f"tables and report.html in {profile_results_dir(args.profile)}")
    if args.profile == "full" and not failed:  # the one profile whose results are committed
        print("run_all: to commit these results and refresh the README block: make results")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
