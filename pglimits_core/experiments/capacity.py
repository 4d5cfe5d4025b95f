"""Capacity, the headline of every workload: the ceiling, and the highest rate holding a target.

The field's form (SPECjbb's max-jOPS and critical-jOPS, MLPerf's server scenario): for one design

1. **the ceiling** — closed loop, as many clients as the profile names, each repetition a steady
   window; its run record says which CPU set was saturated (``limit``: a server-limited ceiling, or
   a load-limited floor, "≥ x"). Where the ceiling ran the system's own C tool, the **agreement
   check**: the harness's own closed loop at the same clients (``check_run``), so a table can say
   whether the two loads measured the same server (within 25 %). It checks the harness; where a
   workload's rate points run a compiled load instead (the queue's qload, pub/sub's psload), that
   load is checked by its own tests against its exact percentiles, not by this check;
2. **capacity at each latency target** — a coarse search with short open-loop probes
   (``load.ratesearch``: step up, bisect) for the highest offered rate whose p99 from the
   *intended* start holds the target, then a **steady confirmation**: ``confirmations`` windows of
   ``steady_s`` at that rate, every one of which must hold; a failed confirmation steps the rate
   down (× ``step_down``) and confirms again, at most ``max_steps_down`` times; where that leaves
   the confirmed rate and the steady miss above it wider apart than ``narrow_to``, **the bracket
   narrowed**: steady windows at their geometric mean, ``narrow_steps`` times (a ×0.7 step leaves
   ×1.43, against which a ×1.25 tie band rarely separates two designs); then, where only a
   short probe missed above the confirmed rate, **the top pinned**: steady windows at that probe's
   rate — a miss there bounds the capacity (a probe's miss decides nothing), windows that all
   hold raise it to that rate;
3. where the rate points ran a compiled load (``rate_check_run``: the queue's qload, pub/sub's
   psload), **the rate check**: one steady window of the harness at the lowest rate a target
   confirmed, judged by the same target — the two loads should reach the same verdict there (a
   harness whose own core set the limit checks nothing).

Every probe and confirmation is an ordinary run record (experiment ``capacity``; params ``stage``
= ceiling / check / probe / confirm / rate_check, ``target_p99_ms``, ``offered_per_s``, ``repetition``, ``window_s``, the
``slo`` it was judged by and ``confirmations_required``), so the table
(``capacity_table``) is derived from the records alone, never from this run's memory.

A workload supplies a ``Design`` per variant: its loads as verbs (``ceiling_run``, ``rate_run``)
and how to read a record (``reading``: offered, achieved, p99 from the intended start, backlog
growth, from the record's summary and its ``params.outcome``). Which tool drives a load (the harness, pgbench ``-R``, vegeta...) is the design's business;
the record says it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pglimits_core.load.ratesearch import PointResult, Slo, search_rate
from pglimits_core.studies.runner import RecordedRun
from pglimits_core.studies.study import Point, StudyRun

EXPERIMENT = "capacity"
#: operations a window needs before its p99 is one (fewer: the p99 is the slowest few)
MIN_ITEMS = 100
CEILING, CHECK, PROBE, CONFIRM, RATE_CHECK = "ceiling", "check", "probe", "confirm", "rate_check"


@dataclass(frozen=True)
class CapacityPlan:
    """The knobs of the experiment (a profile's ``capacity:`` section, ``profiles.CapacitySpec``)."""

    targets_ms: tuple[float, ...]
    ceiling_clients: tuple[int, ...]
    ceiling_s: float
    warmup_s: float
    repetitions: int
    probe_s: float
    start_rate: float
    max_probes: int
    steady_s: float
    confirmations: int
    step_down: float = 0.7
    max_steps_down: int = 3
    factor: float = 2.0
    tolerance: float = 0.1
    check_repetitions: int = 1
    rate_check: bool = True
    start_share: float | None = None  # start at this share of the measured ceiling (``CapacityRun.start``)
    #: steady sets that bisect a bracket a step down left wider than ``narrow_to`` (``narrow``)
    narrow_steps: int = 0
    narrow_to: float = 1.2


class Design(Protocol):
    """One design a workload measures (a variant): its loads as verbs, no timing of its own."""

    label: str
    system: str
    server: str

    def ceiling_run(self, run: StudyRun, clients: int, warmup_s: float, duration_s: float,
                    params: dict[str, Any]) -> RecordedRun: ...

    def rate_run(self, run: StudyRun, rate: float, warmup_s: float, duration_s: float,
                 params: dict[str, Any]) -> RecordedRun: ...

    def check_run(self, run: StudyRun, clients: int, warmup_s: float, duration_s: float,
                  params: dict[str, Any]) -> RecordedRun | None:
        """The agreement check: the harness's closed loop on the ceiling's terms where
        ``ceiling_run`` drove the system's C tool; None where the ceiling is the harness's own."""

    def reading(self, summary: Any, offered: float, outcome: dict[str, Any]) -> PointResult:
        """A rate point's figures from its record: the summary, and the outcome the load's own
        accounting added (``params.outcome``: delivery latency, lost messages...)."""


#: a rate holds a target when its p99 is within it, it achieved this share of the offered rate
#: (operations that never started are in no histogram: 1 % unstarted could hide the whole p99 tail;
#: a point below it could not be sustained: not a latency) and its backlog grew by no more than
#: this share of the offered rate per second. A queue's p99 counts the messages claimed inside the
#: window: 1 %/s bounds what a falling-behind consumer can leave unclaimed (the newest, the slowest)
#: at 1 % of a second's messages per second of window, so a point that hides a tail fails instead
MIN_ACHIEVED_FRACTION, MAX_BACKLOG_GROWTH = 0.99, 0.01


class VariantDesign:
    """A design that is one workload variant: its label, system and server are the variant's."""

    variant: Any

    def check_run(self, run: StudyRun, clients: int, warmup_s: float, duration_s: float,
                  params: dict[str, Any]) -> RecordedRun | None:
        return None  # a design whose ceiling is the harness's has nothing to check it against

    @property
    def label(self) -> str:
        return self.variant.label

    @property
    def system(self) -> str:
        return self.variant.system

    @property
    def server(self) -> str:
        return self.variant.server


def slo_for(target_ms: float) -> Slo:
    return Slo(p99_bound_us=target_ms * 1000, min_achieved_fraction=MIN_ACHIEVED_FRACTION,
               max_backlog_growth=MAX_BACKLOG_GROWTH)


def open_loop_reading(summary: Any, offered: float, role: str = "client") -> PointResult:
    """A rate point whose operations leave no backlog (a query): ``role``'s achieved rate (started
    inside the window) and its p50/p99 from the intended start; a rate the server cannot keep shows
    as late starts, so as achieved < offered."""
    entry = next((e for e in summary.entries if e.phase == "measure" and e.role == role), None) if summary else None
    latency = entry.latencies.get("latency") if entry else None
    return PointResult(offered=offered, achieved=(entry.achieved_rate or 0.0) if entry else 0.0,
                       p50_us=latency.p50_us if latency else None, p99_us=latency.p99_us if latency else None)


def read(design: Design, recorded: RecordedRun, rate: float) -> PointResult:
    """A record's reading; a failed run never holds a rate."""
    if recorded.status != "complete" or recorded.summary is None:
        return PointResult(offered=rate, achieved=0.0, p50_us=None, p99_us=None, extra={"failed": recorded.error})
    return design.reading(recorded.summary, rate, recorded.extra or {})


class CapacityRun:
    """Measures one design: keeps every record it made (the point's result is that list)."""

    def __init__(self, run: StudyRun, design: Design, plan: CapacityPlan):
        self.run, self.design, self.plan = run, design, plan
        self.records: list[RecordedRun] = []
        # per target: every probed rate and whether it held, and the rates a steady window missed
        self.probed: dict[float, dict[float, bool]] = {}
        self.steady_missed: dict[float, set[float]] = {}
        self.ceiling_rates: list[float] = []  # what each complete ceiling window achieved, where the design reads it

    def ceilings(self) -> None:
        plan = self.plan
        for repetition in range(plan.repetitions):
            for clients in plan.ceiling_clients:
                params = {"stage": CEILING, "clients": clients, "repetition": repetition, "target_p99_ms": None,
                          "window_s": plan.ceiling_s}
                recorded = self.design.ceiling_run(self.run, clients, plan.warmup_s, plan.ceiling_s, params)
                self.records.append(recorded)
                self.note_ceiling(recorded)

    def note_ceiling(self, recorded: RecordedRun) -> None:
        """A ceiling window's rate, by the design's own ``items_per_s`` (an optional verb)."""
        per_s = getattr(self.design, "items_per_s", None)
        if per_s is not None and recorded.status == "complete" and recorded.summary is not None:
            rate = per_s(recorded.summary)
            if rate and rate > 0:
                self.ceiling_rates.append(rate)

    def start(self) -> float:
        """Where the search starts: ``start_share`` of the median ceiling just measured, else the
        plan's ``start_rate``."""
        if not self.plan.start_share or not self.ceiling_rates:
            return self.plan.start_rate
        return round(self.plan.start_share * statistics.median(self.ceiling_rates), 1)

    def checks(self) -> None:
        """The harness on the tool's ceiling, after it (a design without a tool has none)."""
        plan, check_run = self.plan, getattr(self.design, "check_run", None)  # an optional verb
        for repetition in range(plan.check_repetitions if check_run else 0):
            for clients in plan.ceiling_clients:
                params = {"stage": CHECK, "clients": clients, "repetition": repetition, "target_p99_ms": None,
                          "window_s": plan.ceiling_s}
                recorded = check_run(self.run, clients, plan.warmup_s, plan.ceiling_s, params)
                if recorded is None:
                    return
                self.records.append(recorded)

    def at(self, rate: float, stage: str, target_ms: float, seconds: float, repetition: int = 0) -> PointResult:
        # what the table needs to judge the point again from the record alone: the SLO it was held
        # to, and how many steady windows a confirmation takes
        params = {"stage": stage, "target_p99_ms": target_ms, "offered_per_s": round(rate, 3),
                  "repetition": repetition, "window_s": seconds, "slo": vars(slo_for(target_ms)),
                  "confirmations_required": self.plan.confirmations}
        recorded = self.design.rate_run(self.run, rate, self.plan.warmup_s, seconds, params)
        self.records.append(recorded)
        return read(self.design, recorded, rate)

    def search(self, target_ms: float, floor: float | None = None) -> float | None:
        """The coarse search: short probes, each rate once; the highest that held — or, where none
        did, the lowest rate whose probe offered ``MIN_ITEMS`` operations (a p99 needs them): its
        steady windows then show whether the design holds the target there, or bound it below
        that rate from steady windows rather than from a short probe. With ``floor`` (a tighter
        target's confirmed rate, which holds this one too) it starts there, never below."""
        plan, slo = self.plan, slo_for(target_ms)
        probed = self.probed.setdefault(target_ms, {})

        def probe(rate: float) -> PointResult:
            point = self.at(rate, PROBE, target_ms, plan.probe_s)
            probed[rate] = slo.failure(point) is None
            return point

        found = search_rate(probe, slo, start_rate=max(self.start(), floor or 0), factor=plan.factor,
                            tolerance=plan.tolerance, max_probes=plan.max_probes, repeats=1)
        if found.sustainable_rate is not None:
            return found.sustainable_rate
        full = [rate for rate in probed if rate * plan.probe_s >= MIN_ITEMS]
        return min(full) if full else None

    def rate_check(self, confirmed: dict[float, float | None]) -> None:
        """The harness at the lowest confirmed rate, one steady window, after a compiled load's
        confirmations (a design whose rate points the harness drives has no ``rate_check_run``)."""
        check_run, lowest = getattr(self.design, "rate_check_run", None), _lowest_held(confirmed)
        if not self.plan.rate_check or check_run is None or lowest is None:
            return
        rate, target_ms = lowest
        params = {"stage": RATE_CHECK, "target_p99_ms": target_ms, "offered_per_s": round(rate, 3), "repetition": 0,
                  "window_s": self.plan.steady_s, "slo": vars(slo_for(target_ms)), "confirmations_required": 1}
        recorded = check_run(self.run, rate, self.plan.warmup_s, self.plan.steady_s, params)
        if recorded is not None:
            self.records.append(recorded)

    def confirm(self, target_ms: float, rate: float | None, floor: float | None = None) -> float | None:
        """Steady windows at ``rate`` until ``confirmations`` all hold; a failure steps down — to
        ``floor`` at the lowest, a tighter target's confirmed rate, whose steady windows held this
        target too (the table reads every steady window at every target): none are run again."""
        for _ in range(self.plan.max_steps_down + 1):
            if rate is None or (floor is not None and rate <= floor):
                return floor
            if self.steady(target_ms, rate):
                return rate
            rate *= self.plan.step_down
        return None

    def steady(self, target_ms: float, rate: float) -> bool:
        """Steady windows at ``rate`` until ``confirmations`` all hold (False at the first miss)."""
        slo = slo_for(target_ms)
        held = all(slo.failure(self.at(rate, CONFIRM, target_ms, self.plan.steady_s, repetition)) is None
                   for repetition in range(self.plan.confirmations))  # all() stops at the first failure
        if not held:
            self.steady_missed.setdefault(target_ms, set()).add(rate)
        return held

    def narrow(self, target_ms: float, rate: float | None) -> float | None:
        """Bisect, with steady windows, the bracket between the confirmed ``rate`` and the lowest
        steady miss above it while it is wider than ``narrow_to``: a midpoint that holds raises
        the rate, one that misses lowers the top."""
        for _ in range(self.plan.narrow_steps):
            above = [m for m in self.steady_missed.get(target_ms, ()) if rate is not None and m > rate]
            if rate is None or not above or min(above) / rate <= self.plan.narrow_to:
                break
            middle = round((rate * min(above)) ** 0.5, 1)
            if self.steady(target_ms, middle):
                rate = middle
        return rate

    def pin_top(self, target_ms: float, rate: float | None) -> float | None:
        """Steady windows at the bracket's top where only a short probe missed it (a probe's miss
        decides nothing): a miss there bounds the capacity; windows that all hold raise it."""
        if rate is None or any(missed > rate for missed in self.steady_missed.get(target_ms, ())):
            return rate
        top = min((probe for probe, held in self.probed.get(target_ms, {}).items() if not held and probe > rate),
                  default=None)
        return rate if top is None or not self.steady(target_ms, top) else top


def _lowest_held(confirmed: dict[float, float | None]) -> tuple[float, float] | None:
    held = [(rate, target) for target, rate in confirmed.items() if rate is not None]
    return None if not held else min(held)


def measure_capacity(run: StudyRun, design: Design, plan: CapacityPlan) -> list[RecordedRun]:
    """The ceiling, then per target the search and its steady confirmation; every record made.
    A design may narrow the plan's targets (``targets_ms``: () measures its ceiling alone)."""
    capacity = CapacityRun(run, design, plan)
    capacity.ceilings()
    capacity.checks()
    confirmed: dict[float, float | None] = {}
    for target_ms in sorted(targets_of(design, plan)):  # the tightest first: a looser one starts at its rate
        floor = max((rate for rate in confirmed.values() if rate is not None), default=None)
        found = capacity.confirm(target_ms, capacity.search(target_ms, floor), floor)
        confirmed[target_ms] = capacity.pin_top(target_ms, capacity.narrow(target_ms, found))
    capacity.rate_check(confirmed)
    return capacity.records


def targets_of(design: Design, plan: CapacityPlan) -> tuple[float, ...]:
    """The latency targets a design's rate is searched at: its own (an optional attribute), else the plan's."""
    own = getattr(design, "targets_ms", None)
    return plan.targets_ms if own is None else tuple(own)


def capacity_points(plan: CapacityPlan | None, designs: list[Design]) -> list[Point]:
    """One point per design (its records are the point's result)."""
    if plan is None:
        return []
    return [Point(EXPERIMENT, d.label, d.server, {"targets_ms": list(targets_of(d, plan)), **point_params(d)},
                  _measure(d, plan)) for d in designs]


def point_params(design: Design) -> dict[str, Any]:
    """What tells two designs of one variant apart in the plan (an optional ``params`` attribute:
    the search's stream), so each is its own point."""
    return dict(getattr(design, "params", None) or {})


def _measure(design: Design, plan: CapacityPlan) -> Callable[[StudyRun], list[RecordedRun]]:
    return lambda run: measure_capacity(run, design, plan)
