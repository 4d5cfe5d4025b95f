"""The search study's timed points: closed-loop throughput per query stream (and per match-set
bucket: the crossover), open-loop latency at matched rates. Each runs the load driver through
``runner.run_recorded`` on a variant that passed its correctness check, on an index that holds
the corpus, after an untimed warm-up.

The points before them (no load driver) live beside this module: ``loading`` (load and index)
and ``correctness`` (every answer checked); ``prepared`` holds what every point shares.
"""

from __future__ import annotations

import sys
from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.load import ClosedLoop, OpenLoop, Phase, Role, RunSpec
from pglimits_core.studies.runner import Context, RecordedRun, run_recorded
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.search.correctness import verified
from pglimits_core.workloads.search.loading import ensure_loaded
from pglimits_core.workloads.search.ops import SearchOp
from pglimits_core.workloads.search.prepared import Setup, prepared
from pglimits_core.workloads.search.queries import SearchQuery
from pglimits_core.workloads.search.records import STUDY
from pglimits_core.workloads.search.variant import SearchVariant
from pglimits_core.workloads.search.warmup import driver_slices, warm_until_steady


def stream_params(setup: Setup, v: SearchVariant, stream: str) -> tuple[list[SearchQuery], dict[str, Any]]:
    data = prepared(setup)
    queries = data.queries.stream(stream, setup.seed)
    return queries, {"stream": stream, "queries": len(queries), "median_matches": data.queries.median_matches(stream),
                     "query": v.query_template(), "options": v.options, **setup.params()}


def stream_operation(ctx: Context, v: SearchVariant, queries: list[SearchQuery]) -> SearchOp:
    return SearchOp(v.system, ctx.endpoints[v.server].url, v.options,
                    [(q.term_a, q.term_b, q.expected_hits) for q in queries])


def _phases(warmup_s: float, duration_s: float) -> list[Phase]:
    return [Phase("warmup", warmup_s, warmup=True), Phase("measure", duration_s)]


def throughput_point(run: StudyRun, v: SearchVariant, setup: Setup, stream: str, clients: int,
                     duration_s: float, warmup_s: float, repetition: int = 0,
                     experiment: str = "throughput", extra_params: dict[str, Any] | None = None) -> RecordedRun:
    """Closed loop: ``clients`` worker processes run ``stream`` back to back. ``repetition``
    (which round of the plan) tells the points of the rounds apart; their records tell apart by
    run id, so it is not in them. ``extra_params`` go into the record (the capacity experiment's
    stage, target and window)."""
    queries, params = stream_params(setup, v, stream)
    params = {"experiment": experiment, "variant": v.label, "clients": clients, **params, **(extra_params or {})}
    spec = RunSpec(phases=_phases(warmup_s, duration_s),
                   roles=[Role("client", stream_operation(run.ctx, v, queries), workers=clients,
                               loop=ClosedLoop(idle_sleep_s=0))],
                   seed=run.seed, start_method="fork")
    return _measured(run.ctx, setup, v, experiment, spec, params)


def crossover_point(run: StudyRun, v: SearchVariant, setup: Setup, stream: str, clients: int,
                    duration_s: float, warmup_s: float, repetition: int = 0) -> RecordedRun:
    """A throughput point whose stream is a bucket of match-set size, recorded as the crossover's."""
    return throughput_point(run, v, setup, stream, clients, duration_s, warmup_s, repetition,
                            experiment="crossover")


def _measured(ctx: Context, setup: Setup, v: SearchVariant, experiment: str, spec: RunSpec,
              params: dict[str, Any]) -> RecordedRun:
    name = f"{experiment}:{v.label}"
    if reused := ctx.reuse(STUDY, v.system, name, {**params, "spec": spec.describe()}):
        return reused
    verified(ctx, setup, v)
    ensure_loaded(ctx, setup, v)
    warmed = warm_up(ctx, setup, v)
    return run_recorded(ctx, STUDY, v.system, name, v.server, spec, params, tables=v.engine().sampled_tables,
                        after=lambda _result: {"warmup_before": warmed})


#: the warm-up runs the mixed stream: every class of query, so every part of the index is read
WARMUP_STREAM = "mixed"

#: each server's warm-up record, by (server url, dataset): once per server, not per variant
_WARM: dict[tuple[str, str], dict[str, Any]] = {}


def warm_up(ctx: Context, setup: Setup, v: SearchVariant, again: bool = False) -> dict[str, Any]:
    """Before the first timed point on ``v``'s server: the study's queries on concurrent
    connections until the throughput is steady (``warmup.WarmupRule``), untimed. Once per server
    and dataset, not per variant: what warms is the server's — the JVMs' compiled code, the index
    in their caches and in Postgres's shared buffers and the page cache — and every variant of a
    server reads the same index (a variant's prepared statement is per connection: each load
    worker prepares its own). Returns the server's warm-up record for this point's record, with
    whether this point ran it ({} when the profile turns the warm-up off)."""
    rule = setup.warmup
    if not rule.enabled:
        return {}
    url = ctx.endpoints[v.server].url
    key = (url, setup.dataset)
    if key in _WARM and not again:  # ``again``: the index was reloaded since (its caches are not warm)
        return {**_WARM[key], "ran_before_this_point": False}
    queries, _ = stream_params(setup, v, WARMUP_STREAM)
    slices = driver_slices(stream_operation(ctx, v, queries), rule.clients, setup.seed)
    _WARM[key] = {"server": v.server, "variant": v.label, "stream": WARMUP_STREAM,
                  **warm_until_steady(rule, slices)}
    said = _WARM[key]
    print(f"search: warm-up of {v.server} ({rule.clients} clients, {said['seconds']:g} s, {said['queries']} queries): "
          f"{said['stopped']}; qps per {rule.slice_s:g} s slice: {said['slices_qps']}", file=sys.stderr)
    return {**said, "ran_before_this_point": True}


def matched_rate(ctx: Context, stream: str, fraction: float, labels: list[str]) -> tuple[float, dict[str, float]]:
    """``fraction`` of the slower system's closed-loop peak in ``stream``: each variant's peak
    is its best client count's median qps over this run's throughput records; the slowest
    variant of ``labels`` sets the rate, so every system is offered a rate it sustains."""
    from pglimits_core.record.records import load_records
    from pglimits_core.workloads.search.tables import peak_qps

    peaks = peak_qps(load_records(STUDY, ctx.runs_root), stream, labels)
    missing = [label for label in labels if label not in peaks]
    if missing:
        raise PGLimitsError(f"no throughput record of {missing[0]} in stream {stream!r} to match a rate to",
                            "keep the stream and the variant in search.throughput")
    return fraction * min(peaks.values()), peaks


def latency_point(run: StudyRun, v: SearchVariant, setup: Setup, stream: str, fraction: float, workers: int,
                  duration_s: float, warmup_s: float, labels: list[str], repetition: int = 0) -> RecordedRun:
    """Open loop at ``fraction`` of the slower system's peak in ``stream`` (the same offered rate
    for every system of ``labels``), latency from the intended start."""
    rate, peaks = matched_rate(run.ctx, stream, fraction, labels)
    matched = {"fraction": fraction, "peaks": {k: round(p, 1) for k, p in sorted(peaks.items())}}
    return rate_point(run, v, setup, stream, rate, workers, duration_s, warmup_s, extra_params=matched)


def rate_point(run: StudyRun, v: SearchVariant, setup: Setup, stream: str, rate: float, workers: int,
               duration_s: float, warmup_s: float, experiment: str = "latency",
               extra_params: dict[str, Any] | None = None) -> RecordedRun:
    """Open loop at the absolute offered ``rate`` (queries/s over ``workers`` processes), latency
    from the intended start; ``extra_params`` go into the record (how the rate was chosen)."""
    queries, params = stream_params(setup, v, stream)
    params = {"experiment": experiment, "variant": v.label, "rate": round(rate, 1), "workers": workers,
              **params, **(extra_params or {})}
    spec = RunSpec(phases=_phases(warmup_s, duration_s),
                   roles=[Role("client", stream_operation(run.ctx, v, queries), workers=workers,
                               loop=OpenLoop(rate=round(rate, 1), drain_s=2.0))],
                   seed=run.seed, start_method="fork")
    return _measured(run.ctx, setup, v, experiment, spec, params)
