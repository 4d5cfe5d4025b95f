"""The study loop every workload shares: plan -> servers -> context -> points -> outcome.

A workload supplies ``plan(section, profile) -> list[Point]`` (and the operations its points
call); this module owns the rest: servers up (or attached), one ``Context`` for every point,
progress on stderr (point, count, time left), resume (complete records reused), failures kept
and reported instead of raised. Crash drills are ordinary points, planned last by their workload
because they kill the servers the other points measured.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pglimits_core.config import profile_runs_dir, state_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.studies.causes import FAILING_CAUSES, cause_of
from pglimits_core.studies.runner import Context, RecordedRun
from pglimits_core.studies.timing import PointTime, load_seconds, stopwatch
from pglimits_core.studies.watch import ServerWatch


@dataclass
class StudyRun:
    """What a point's call gets: the shared context, the fleet (a crash drill restarts its
    servers through it) and the profile's seed."""

    ctx: Context
    fleet: Any
    seed: int

    @property
    def servers(self) -> dict[str, Any]:
        """The server objects this study started (an attached fleet owns none: nothing to kill)."""
        return getattr(self.fleet, "servers", {})


@dataclass(frozen=True)
class Point:
    """One planned point: ``experiment`` and ``label`` (the variant) are what its run record says
    in ``params``; ``params`` are the point's own knobs (shown, and part of its identity);
    ``server`` is the server it needs; ``call`` measures it and returns its ``RecordedRun`` (or
    a result of its own, e.g. a rate search)."""

    experiment: str
    label: str
    server: str
    params: dict[str, Any]
    call: Callable[[StudyRun], Any] = field(compare=False, repr=False)
    #: False for a set-up point that leaves no run record (the report does not expect one)
    recorded: bool = True


def point(experiment: str, variant: Any, function: Callable[..., Any], **params: Any) -> Point:
    """The usual point: ``function(run, variant, **params)`` measures ``variant`` on its server.
    ``params`` are exactly the call's keyword arguments, so what a run record shows is what ran."""
    return Point(experiment, variant.label, variant.server, params,
                 lambda run: function(run, variant, **params))


@dataclass
class Outcome:
    """What a study run produced: run records, other results (a rate search's verdict) by
    (experiment, label), failures with their reasons, servers that could not run, reused records."""

    runs: list[RecordedRun] = field(default_factory=list)
    results: dict[tuple[str, str], Any] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    reused: int = 0
    #: servers that died while the study ran (``watch.Death.to_dict()``), restarted or not
    deaths: list[dict[str, Any]] = field(default_factory=list)
    #: every point's wall and under-load seconds (``timing.PointTime.to_dict()``), and the servers' start
    timings: list[dict[str, Any]] = field(default_factory=list)
    servers_start_s: float | None = None
    #: the host facts as the study began and as it ended (``runner.closing_host_facts``)
    host_facts: dict[str, Any] = field(default_factory=dict)
    _explained: set[str] = field(default_factory=set, repr=False)  # failed runs a death explains

    def explain_failed_runs(self, point: Point, result: Any, watch: ServerWatch) -> None:
        """A run record that failed because its server died under it: the point's failure says
        so (the record's own error is the client's view of it)."""
        failed = [r for r in (result if isinstance(result, list) else [result])
                  if isinstance(r, RecordedRun) and r.status != "complete"]
        for recorded in failed:
            known = watch.what_happened(point.server, RuntimeError(recorded.error or ""))
            if known:  # a death or a full disk explains it
                self.failures.append(_failure(point, f"{known} — run {recorded.path.name}: {recorded.error}"))
                self._explained.add(recorded.path.name)

    def failing(self) -> list[dict[str, Any]]:
        """The failures that make the study's run a failed one (environment or error, not the
        points the study declined on purpose)."""
        return [f for f in self.failures if f.get("cause") in FAILING_CAUSES]

    def to_dict(self) -> dict[str, Any]:
        """What ``run_all.py`` reads after the notebook: the failures with their causes."""
        failed_runs = [{"experiment": "run", "variant": r.path.name, "error": r.error or "failed",
                        "cause": cause_of(r.error or "")} for r in self.runs
                       if r.status != "complete" and r.path.name not in self._explained]
        return {"failures": self.failures + failed_runs, "deaths": self.deaths,
                "unavailable": self.unavailable, "reused": self.reused, "runs": len(self.runs),
                "timings": self.timings, "servers_start_s": self.servers_start_s, "host_facts": self.host_facts}

    def keep(self, point: Point, result: Any) -> None:
        if isinstance(result, RecordedRun):
            self.runs.append(result)
        elif isinstance(result, list) and all(isinstance(r, RecordedRun) for r in result):
            self.runs.extend(result)
        else:
            self.results[(point.experiment, point.label)] = result


def planned_servers(points: list[Point]) -> list[str]:
    return sorted({point.server for point in points})


def run_points(points: list[Point], run: StudyRun, title: str, progress: bool = True,
               after_restart: Callable[[str, StudyRun], None] | None = None) -> Outcome:
    """Every point in order; a point whose server is unavailable, died or whose call raises is
    a failure with its reason and cause — the others still run. A server that died is restarted
    once (``watch``), then ``after_restart(name, run)`` brings back the workload's state."""
    from tqdm import tqdm

    outcome = Outcome()
    watch = watch_servers(run, after_restart)
    # Plain text on stderr (not a widget): run_all.py streams it, so a long study shows which
    # point runs, how many are done and the time left; mininterval keeps the notebook small.
    bar = tqdm(points, desc=title, disable=not progress, file=sys.stderr, mininterval=5)
    for point in bar:
        bar.set_postfix_str(f"{point.experiment}: {point.label}", refresh=False)
        if point.server not in run.ctx.endpoints:
            outcome.failures.append(_failure(point, watch.unavailable(point.server, run.fleet)))
            continue
        if (reason := watch.ready(point.server)) is not None:
            outcome.failures.append(_failure(point, f"not run: {reason}"))
            continue
        try:
            with stopwatch() as took:
                result = point.call(run)
        except Exception as exc:  # one system failing must not stop the others
            outcome.failures.append(_failure(point, watch.explain(point.server, exc), exc))
            continue
        outcome.timings.append(PointTime(point.experiment, point.label, took["s"], load_seconds(result)).to_dict())
        outcome.keep(point, result)
        outcome.explain_failed_runs(point, result, watch)
    outcome.deaths = [death.to_dict() for death in watch.deaths]
    return outcome


def watch_servers(run: StudyRun, after_restart: Callable[[str, StudyRun], None] | None) -> ServerWatch:
    """A watch over the servers this study started; a restarted server's new endpoint reaches
    the context and the fleet before the workload restores its state."""
    def restarted(name: str, server: Any) -> None:
        run.ctx.endpoints[name] = server.endpoint
        run.ctx.servers[name] = server
        if name in getattr(run.fleet, "endpoints", {}):
            run.fleet.endpoints[name] = server.endpoint
        if after_restart is not None:
            after_restart(name, run)

    disk_paths = [path for path in (run.ctx.runs_root, state_dir()) if path is not None]
    return ServerWatch(run.servers, restarted, disk_paths)


def _failure(point: Point, error: str, exc: BaseException | None = None) -> dict[str, Any]:
    return {"experiment": point.experiment, "variant": point.label, "server": point.server,
            "error": error, "cause": cause_of(error, exc)}


def run_workload(workload: Any, profile_name: str, runs_root: str | Path | None = None,
                 progress: bool = True, resume: bool = False) -> Outcome:
    """``workload``'s study for a profile end to end: plan, servers up, context, every point,
    servers down (also on error and Ctrl-C).

    Records go to ``runs_root`` (default ``data/runs/<profile>``). ``resume`` reuses the
    complete records of points already measured there; otherwise this workload's earlier
    records are moved aside first, so one directory holds one run of the study.
    """
    from pglimits_core.profiles import load_profile
    from pglimits_core.studies.resume import supersede_runs

    profile = load_profile(profile_name)
    section = profile.section(workload.name)
    if section is None:
        raise PGLimitsError(f"profile {profile_name} has no {workload.name!r} section",
                            f"add one to configs/profiles/{profile_name}.yaml, or run another workload")
    points = workload.plan(section, profile)
    if workload.prepare is not None:
        workload.prepare(section, profile)  # bad input stops here, before any server starts
    placement = profile.placement.resolve()  # a bad placement stops here too
    root = profile_runs_dir(profile_name, runs_root)
    if not resume and (moved := supersede_runs(root, workload.name, profile_name)):
        print(f"earlier {workload.name} records of profile {profile_name} moved to {moved}", file=sys.stderr)
    outcome = _measure(workload, section, profile, points, placement, root, progress, resume)
    write_outcome(root, workload.name, outcome)
    return outcome


def _measure(workload: Any, section: Any, profile: Any, points: list[Point], placement: Any, root: Path,
             progress: bool, resume: bool) -> Outcome:
    """Servers up on the server CPU set, this process on the load set, every point, servers down."""
    from pglimits_core.placement import placed
    from pglimits_core.studies.resume import DoneRuns
    from pglimits_core.studies.runner import build_context, closing_host_facts
    from pglimits_core.studies.session import study_servers

    options = workload.server_options(section) if workload.server_options is not None else {}
    starting = time.monotonic()
    with placed(placement), \
            study_servers(planned_servers(points), external=profile.external, options=options) as fleet:
        servers_start_s = time.monotonic() - starting
        require_servers(workload, fleet)
        ctx = build_context(fleet, runs_root=root, ceiling_s=profile.harness_ceiling_s)
        ctx.done = DoneRuns(root, workload.name) if resume else None
        outcome = run_points(points, StudyRun(ctx, fleet, profile.seed), f"{workload.name} study", progress,
                             after_restart=workload.after_restart)
        outcome.host_facts = closing_host_facts(ctx)  # the servers are still up: their ceilings too
    outcome.unavailable = dict(fleet.unavailable)
    outcome.servers_start_s = round(servers_start_s, 1)
    outcome.reused = ctx.done.reused if ctx.done else 0
    return outcome


def require_servers(workload: Any, fleet: Any) -> None:
    """A workload that needs all its servers stops here, naming the first that is not up."""
    if workload.require_servers and fleet.unavailable:
        name, reason = next(iter(fleet.unavailable.items()))
        raise PGLimitsError(f"{workload.name} study: server {name} is not up: {reason}",
                            "fix that server (`pglimits doctor`), or drop its variants from the profile")


def outcome_path(runs_root: Path, workload_name: str) -> Path:
    """Where a study leaves what it could not measure and why, for ``run_all.py`` to read."""
    return Path(runs_root) / f"{workload_name}.outcome.json"


def write_outcome(runs_root: Path, workload_name: str, outcome: Outcome) -> None:
    path = outcome_path(runs_root, workload_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(outcome.to_dict(), indent=2, default=str))
    tmp.replace(path)


def read_outcome(runs_root: Path, workload_name: str) -> dict[str, Any] | None:
    """The last study's outcome under ``runs_root`` (None if it wrote none: it crashed first)."""
    try:
        return json.loads(outcome_path(runs_root, workload_name).read_text())
    except (OSError, ValueError):
        return None


def servers_needed(profile_name: str) -> list[str]:
    """Every server the profile's workloads plan to use (``make lab`` starts these)."""
    from pglimits_core.profiles import load_profile
    from pglimits_core.registry import workloads

    profile = load_profile(profile_name)
    return sorted({point.server for w in workloads() if profile.section(w.name) is not None
                   for point in w.plan(profile.section(w.name), profile)})


if __name__ == "__main__":  # `python -m pglimits_core.studies.study PROFILE`: the servers it needs
    try:
        print(" ".join(servers_needed(sys.argv[1] if len(sys.argv) > 1 else "full")))
    except PGLimitsError as exc:
        raise SystemExit(f"study: error: {exc}") from None
