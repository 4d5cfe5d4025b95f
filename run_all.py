#!/usr/bin/env python
"""Reproduce the study: execute every workload notebook with papermill for a profile.

    python run_all.py --profile quick            # what `make study` runs
    python run_all.py --profile full --resume    # skip completed notebooks; an interrupted one
                                                 # reuses the points it had already measured
    python run_all.py --only queue --force       # one workload (by its registry name), then the report
    python run_all.py --profile my/own.yaml      # a profile by path: results under its name ("own")

The workloads and their notebooks come from the workload registry (pglimits_core.registry);
a workload whose section the profile lacks is not run. Bad input stops the run before any server
starts, as one line on stderr and exit code 2: the profile is parsed and validated, and every
system, option and variant name in its sections is checked by the workloads' own plans. Each
notebook starts the servers it needs and stops them when it ends (also on Ctrl-C); executed
copies go to data/executed/<profile>/. A failed notebook does not stop the others; the exit code
is non-zero and the summary says what failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from pglimits_core.config import (
    notebook_path,
    profile_figures_dir,
    profile_results_dir,
    profile_runs_dir,
    profiles_dir,
    repo_relative,
)
from pglimits_core.errors import PGLimitsError
from pglimits_core.profiles import PROFILE_HELP, Profile, load_profile, profile_path
from pglimits_core.registry import Workload, workloads
from pglimits_core.servers import ownership
from pglimits_core.studies.causes import FAILING_CAUSES
from pglimits_core.studies.status import (
    COMPLETE,
    FAILED_POINTS,
    PENDING,
    RUNNING,
    executed_dir,
    other_machine,
    read_status,
    set_status,
    this_machine,
)
from pglimits_core.studies.study import read_outcome
from pglimits_core.studies.timing import breakdown_lines

REPORT = "90-report"  # always last: it reads the run records the workload notebooks wrote


def planned_notebooks(profile: str, only: list[str] | None) -> list[str]:
    """The notebooks of the workloads the profile has a section for (``only``: just those, by
    workload name), in registry order, then the report. A bad profile, or a typo in one of its
    system or variant names, fails here, before any server starts."""
    loaded = load_profile(profile)
    chosen = [w for w in workloads() if not only or w.name in only]
    unknown = sorted(set(only or []) - {w.name for w in workloads()})
    if unknown:
        raise PGLimitsError(f"--only {unknown[0]}: no such workload",
                            f"use one of: {', '.join(w.name for w in workloads())}")
    for w in chosen:
        if loaded.section(w.name) is None:
            print(f"run_all: profile {profile} has no {w.name!r} section; {w.notebook} is not run")
    running = [w for w in chosen if loaded.section(w.name) is not None]
    if not running:
        raise PGLimitsError(f"profile {profile} has no {' or '.join(repr(w.name) for w in chosen)} section",
                            f"add one to {repo_relative(profile_path(profile))}"
                            + (", or choose another --only" if only else ", or choose another profile"))
    check_plans(loaded, running)
    return [w.notebook for w in running] + [REPORT]


def check_plans(loaded: Profile, chosen: list[Workload]) -> None:
    """Every system, option and variant name of the chosen workloads' sections, checked now by the
    same ``plan()`` their notebooks run — it builds each variant and checks every experiment's
    variants filter, and starts no server and reads no dataset — so a typo stops the run here, in
    a second, not when that workload's notebook starts."""
    for w in chosen:
        try:
            w.plan(loaded.section(w.name), loaded)
        except PGLimitsError as exc:
            raise in_profile(loaded.name, w.name, exc) from None


def in_profile(profile: str, workload: str, exc: PGLimitsError) -> PGLimitsError:
    """``exc`` saying which profile file and workload section it is about (unless it already does)."""
    where = "" if exc.problem.startswith((workload, "profile ")) else f"{workload}: "
    prefix = "" if exc.problem.startswith("profile ") else f"profile {profile}: "
    shown = repo_relative(profile_path(profile))
    return PGLimitsError(f"{prefix}{where}{exc.problem}", f"in {shown}: {exc.fix}" if exc.fix else f"fix {shown}")


def profile_name(given: str) -> str:
    """``--profile`` given as a name or a path: the profile's name, which keys its results, status
    and executed notebooks. A file outside the profiles folder makes its folder this run's
    (``PGLIMITS_PROFILES_DIR``, which the notebook kernels inherit), so they find it by name too."""
    path = profile_path(given)
    if path.parent != profiles_dir().resolve():
        os.environ["PGLIMITS_PROFILES_DIR"] = str(path.parent)
    return path.stem


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

    source = notebook_path(name)
    parameters = {"profile": profile, **({"figures_dir": figures_dir} if figures_dir else {})}
    if name != REPORT:  # every workload notebook measures (by hand it shows committed results)
        parameters.update(measure=True, resume=resume)
    check_parameters(source, parameters)
    target = executed_dir(profile) / f"{name}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        # the notebook's stderr (its study progress bar: point, count, time left) is streamed here
        papermill.execute_notebook(str(source), str(target), parameters=parameters,
                                   cwd=str(source.parent), progress_bar=False, stderr_file=sys.stderr)
    except papermill.PapermillExecutionError as exc:
        if INTERRUPTED:
            raise KeyboardInterrupt from None
        return "failed", f"{exc.ename}: {exc.evalue}"[:500], time.monotonic() - started
    except Exception:
        if INTERRUPTED:  # the kernel we stopped died under papermill: the interrupt, not a failure
            raise KeyboardInterrupt from None
        raise
    if INTERRUPTED:
        raise KeyboardInterrupt
    return "complete", None, time.monotonic() - started


# Ctrl-C (or SIGTERM) must stop the study, but a SIGINT that lands while papermill waits on the
# kernel can be swallowed there (seen: the study ran on to its end). So the handler stops the
# kernel itself: on SIGTERM its fleet stops every server it started, its load workers die with it,
# and papermill then returns or raises, which the checks above turn into the interrupt.
INTERRUPTED = False


def interrupt(signum: int, frame) -> None:
    global INTERRUPTED
    INTERRUPTED = True
    import psutil

    for kernel in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            kernel.terminate()
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="quick", help=f"{PROFILE_HELP}; default: quick")
    parser.add_argument("--only", action="append", metavar="WORKLOAD",
                        help="run just this workload (then the report); repeatable")
    parser.add_argument("--resume", action="store_true",
                        help="skip notebooks that completed; an interrupted one keeps its measured points")
    parser.add_argument("--force", action="store_true", help="rerun even completed notebooks")
    # tests and scratch runs must not overwrite the committed figures/
    parser.add_argument("--figures-dir", default="",
                        help="write figures here instead of figures/<host-id>/<profile>/")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    try:
        args.profile = profile_name(args.profile)
        names = planned_notebooks(args.profile, args.only)
        stop_orphans()
        return run(args, names)
    except PGLimitsError as exc:
        print(f"run_all: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        stop_what_is_left()
        print("run_all: interrupted; the notebook's servers were stopped", file=sys.stderr)
        return 130


def stop_what_is_left() -> None:
    """After an interrupt: give the kernels the time to stop their servers themselves, then stop
    whatever of this run is still there (a kernel killed while stopping leaves its servers)."""
    import psutil

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut this cleanup short
    psutil.wait_procs(psutil.Process().children(), timeout=ownership.STOP_GRACE_S)
    found = ownership.stop_owned(ownership.process_id(os.getpid()))
    if found:
        print(f"run_all: stopped what the interrupted notebook left: {', '.join(sorted({t.name for t in found}))}",
              file=sys.stderr, flush=True)


def stop_orphans() -> None:
    """A run killed earlier (no cleanup) may have left its kernel, servers and workers running:
    stop them before anything starts, so they do not sit inside this run's measurements."""
    found = ownership.stop_orphans()
    if found:
        print(f"run_all: {ownership.summary(found)}", flush=True)


def run(args: argparse.Namespace, names: list[str]) -> int:
    owner = ownership.claim_ownership(take_over=True)  # the kernels, servers, workers are this run's
    status = read_status(args.profile)
    fresh = not args.resume or args.force or started_elsewhere(status)
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
        set_status(args.profile, name, status=RUNNING, owner=owner, host=this_machine())
        result, error, elapsed = execute(name, args.profile, args.figures_dir, resume=not fresh)
        result, failing = with_failed_points(result, args.profile, name)
        status = set_status(args.profile, name, status=result, error=error, elapsed_s=round(elapsed, 1),
                            failed_points=len(failing), host=this_machine())
        print(f"[{index}/{len(names)}] {name}: {result} in {elapsed:.0f}s" + (f" — {error}" if error else ""))
        print_time_breakdown(args.profile, name)
    failed = {n: s for n, s in status.items() if n in names and s["status"] != COMPLETE}
    print(f"run_all: {len(names) - len(failed)} of {len(names)} notebooks complete; executed copies in "
          f"{executed_dir(args.profile)}; figures in {args.figures_dir or profile_figures_dir(args.profile)}; "
          f"tables and report.html in {profile_results_dir(args.profile)}")
    print_failed_points(args.profile, names)
    print_server_deaths(args.profile, names)
    if any(s["status"] == FAILED_POINTS for s in failed.values()):
        print(f"run_all: to measure only what failed: python run_all.py --profile {args.profile} --resume")
    if args.profile == "full" and not failed:  # the one profile whose results are committed
        print("run_all: to commit these results and refresh the README block: make results")
    return 1 if failed else 0


def started_elsewhere(status: dict[str, dict]) -> bool:
    """True (and says why) when ``--resume`` finds an earlier run from another machine."""
    other = other_machine(status)
    if other:
        print(f"run_all: the earlier run was on {other}, this machine is {this_machine()}: starting over "
              "(one study's records come from one machine)")
    return bool(other)


def workload_of(notebook: str) -> str | None:
    return next((w.name for w in workloads() if w.notebook == notebook), None)


def failing_points(profile: str, notebook: str) -> list[dict]:
    """The points of a workload notebook's last study that failed because the environment did
    (or an error): a point the study declined on purpose does not count."""
    name = workload_of(notebook)
    outcome = read_outcome(profile_runs_dir(profile), name) if name else None
    return [f for f in (outcome or {}).get("failures", []) if f.get("cause") in FAILING_CAUSES]


def with_failed_points(result: str, profile: str, notebook: str) -> tuple[str, list[dict]]:
    """A notebook that ran to its end but whose study lost points is not "complete": it is
    ``failed points``, and ``--resume`` measures exactly those points again."""
    failing = failing_points(profile, notebook) if result == COMPLETE else []
    return (FAILED_POINTS if failing else result), failing


def print_time_breakdown(profile: str, notebook: str) -> None:
    """Where the notebook's study spent its time, per experiment (studies.timing)."""
    name = workload_of(notebook)
    outcome = read_outcome(profile_runs_dir(profile), name) if name else None
    for line in breakdown_lines(name, outcome) if outcome else []:
        print(line)


def print_failed_points(profile: str, notebooks: list[str]) -> None:
    """One line per workload and cause: what failed, on which server, how many points."""
    for notebook in notebooks:
        groups: dict[tuple[str, str], int] = {}
        for failure in failing_points(profile, notebook):
            key = (failure.get("server", "?"), headline(failure["error"]))
            groups[key] = groups.get(key, 0) + 1
        for (server, why), count in groups.items():
            print(f"run_all: {workload_of(notebook)}: {server}: {why}: {count} point{'s' * (count != 1)} not measured",
                  file=sys.stderr)


def server_deaths(profile: str, notebook: str) -> list[dict]:
    """The servers that died while the notebook's last study ran (``studies.watch``), each
    restarted or not: a complete notebook can still have lost a server and re-measured points."""
    name = workload_of(notebook)
    outcome = read_outcome(profile_runs_dir(profile), name) if name else None
    return list((outcome or {}).get("deaths") or [])


def print_server_deaths(profile: str, notebooks: list[str]) -> None:
    """One line per server death: which, how, when, and whether the study restarted it."""
    for notebook in notebooks:
        for death in server_deaths(profile, notebook):
            after = ("restarted, its points measured again" if death.get("restarted")
                     else f"not restarted: {death.get('restart_error') or 'see the record'}")
            print(f"run_all: {workload_of(notebook)}: {death.get('server')} died ({death.get('how')}) at "
                  f"{death.get('at')}; {after}", file=sys.stderr)


def headline(error: str) -> str:
    """The part of a failure's reason that groups it: the cause before the raw client error."""
    return error.removeprefix("not run: ").split(" — ")[0][:200]


if __name__ == "__main__":
    sys.exit(main())
