"""The queue study as a profile describes it: plan every point, run them, keep the failures.

``run_profile`` is what the notebook calls: servers up (or attached), context, every
experiment of the profile, the consumer-crash drills after the sweeps, server crash drills last
(they kill servers), servers down.
"""

from __future__ import annotations

import sys
from typing import Any

from pglimits_core.config import profile_runs_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.studies.queue import (
    STUDY,
    QueueVariant,
    cliff,
    latency_point,
    steady_point,
    throughput_point,
    variant,
)
from pglimits_core.studies.queue_consumer_crash import EXPERIMENT as CONSUMER_CRASH
from pglimits_core.studies.queue_consumer_crash import consumer_crash_point
from pglimits_core.studies.runner import Context


def run_queue_study(ctx: Context, profile: Any, seed: int, progress: bool = True) -> dict[str, Any]:
    """Every experiment of ``profile`` (a ``profiles.QueueProfile``); failures are kept, not raised."""
    from tqdm import tqdm

    variants = [variant(**spec) for spec in profile.variants]
    points = _planned_points(profile, variants)
    outcome: dict[str, Any] = {"runs": [], "failures": [], "cliffs": {}}
    # Plain text on stderr (not a widget): run_all.py streams it, so a long study shows which
    # point runs, how many are done and the time left; mininterval keeps the notebook small.
    bar = tqdm(points, desc="queue study", disable=not progress, file=sys.stderr, mininterval=5)
    for name, label, call in bar:
        bar.set_postfix_str(f"{name}: {label}", refresh=False)
        try:
            result = call(ctx, seed)
            if name == "cliff":
                outcome["cliffs"][label] = result
            else:
                outcome["runs"].append(result)
        except Exception as exc:  # one system failing must not stop the others
            outcome["failures"].append({"experiment": name, "variant": label, "error": f"{type(exc).__name__}: {exc}"})
    return outcome


def check_variant_filters(profile: Any, variants: list[QueueVariant]) -> None:
    """A label in an experiment's ``variants`` filter that names no variant of the profile is a
    typo that would silently drop points: a one-line error naming it (the crash drill may name
    variants of its own, e.g. SQLite ``synchronous=off``, so it is not checked here)."""
    labels = {v.label for v in variants}
    for section in ("throughput", "steady", "latency", "cliff", "consumer_crash"):
        unknown = [label for label in getattr(getattr(profile, section, None), "variants", None) or []
                   if label not in labels]
        if unknown:
            raise PGLimitsError(f"queue.{section}.variants names {unknown[0]!r}, which is not a variant of the profile",
                                f"use one of: {', '.join(sorted(labels))}")


def _planned_points(profile: Any, variants: list[QueueVariant]) -> list[tuple[str, str, Any]]:
    check_variant_filters(profile, variants)
    t, lat, cl, st = profile.throughput, profile.latency, profile.cliff, profile.steady
    points = []
    for _ in range(profile.repetitions):
        for v in variants:
            points += [("throughput", v.label, _bind(throughput_point, v, consumers=c, prefill_count=t.prefill,
                                                     duration_s=t.duration_s, warmup_s=t.warmup_s))
                       for c in (t.consumers if t.includes(v.label) else [])]
            points += [("steady", v.label, _bind(steady_point, v, consumers=c, producers=st.producers,
                                                 target_depth=st.target_depth, duration_s=st.duration_s,
                                                 warmup_s=st.warmup_s))
                       for c in (st.consumers if st and st.includes(v.label) else [])]
            points += [("latency", v.label, _bind(latency_point, v, rate=r, producers=lat.producers,
                                                  consumers=lat.consumers, duration_s=lat.duration_s,
                                                  warmup_s=lat.warmup_s))
                       for r in (lat.rates if lat.includes(v.label) else [])]
    for v in variants:
        if cl and cl.includes(v.label):
            points.append(("cliff", v.label, _bind(cliff, v, start_rate=cl.start_rate, producers=cl.producers,
                                                   consumers=cl.consumers, probe_s=cl.probe_s,
                                                   p99_bound_ms=cl.p99_bound_ms, max_probes=cl.max_probes,
                                                   repeats=cl.repeats)))
    return points + _consumer_crash_points(profile.consumer_crash, variants)


def _consumer_crash_points(drill: Any, variants: list[QueueVariant]) -> list[tuple[str, str, Any]]:
    """After the sweeps (whose records it must not disturb), before the server crash drills."""
    if drill is None:
        return []
    return [(CONSUMER_CRASH, v.label, _bind(consumer_crash_point, v, consumers=drill.consumers,
                                            prefill_count=drill.prefill,
                                            kill_after_acks=drill.kill_after_acks,
                                            visibility_timeout_s=drill.visibility_timeout_s,
                                            duration_s=drill.duration_s))
            for _ in range(drill.drills) for v in variants if drill.includes(v.label)]


def _bind(function, v: QueueVariant, **kwargs: Any):
    return lambda ctx, seed: function(ctx, v, seed=seed, **kwargs)


def run_profile(profile_name: str, runs_root: str | None = None, progress: bool = True,
                run: bool = True, resume: bool = False) -> dict[str, Any] | None:
    """The queue study of a profile end to end: servers up, context, every experiment, servers down.

    Returns the outcome (runs, cliffs, failures, ``reused`` records) plus ``unavailable`` servers
    with their reasons; ``run=False`` does nothing (a notebook re-rendering existing records).
    Records go to ``runs_root`` (default ``data/runs/<profile>``). ``resume`` reuses the complete
    records of points already measured there; otherwise earlier queue records are moved aside
    first (``resume.supersede_runs``), so one directory holds one run of the study.
    """
    if not run:
        return None
    from pglimits_core.profiles import load_profile
    from pglimits_core.studies.resume import DoneRuns, supersede_runs
    from pglimits_core.studies.runner import build_context
    from pglimits_core.studies.session import study_servers

    profile = load_profile(profile_name)
    root = profile_runs_dir(profile_name, runs_root)
    if not resume and (moved := supersede_runs(root, STUDY, profile_name)):
        print(f"earlier queue records of profile {profile_name} moved to {moved}", file=sys.stderr)
    variants = [variant(**spec) for spec in profile.queue.variants]
    servers = sorted({v.server for v in variants})
    with study_servers(servers, external=profile.external) as fleet:
        ctx = build_context(fleet, runs_root=root)
        ctx.done = DoneRuns(root, STUDY) if resume else None
        usable = [v for v in variants if v.server in fleet.endpoints]
        queue_profile = profile.queue.model_copy(update={"variants": [
            spec for spec, v in zip(profile.queue.variants, variants, strict=True) if v in usable]})
        outcome = run_queue_study(ctx, queue_profile, profile.seed, progress)
        if profile.queue.recovery:  # last: it kills and restarts the servers the others measured
            from pglimits_core.studies.queue_recovery import run_recovery

            run_recovery(ctx, fleet, profile.queue.recovery, usable, profile.seed, outcome,
                         drills=profile.queue.recovery.drills)
    outcome["unavailable"] = dict(fleet.unavailable)
    outcome["reused"] = ctx.done.reused if ctx.done else 0
    return outcome
