"""Writes while querying: does a system hold its query latency, and its answers, while a steady
stream of writes changes what it searches — and what does its cleanup cost afterwards?

Two run records per (design, write rate, repetition), the queries open loop at one offered rate
throughout, the same for every system of the workload, so each phase's p99 from the intended start
compares like for like:

    stage "writes":  warmup | before (queries) | writing (queries + writes) | after (queries)
    stage "cleanup": cleanup (queries + the system's own cleanup, once, timed as an operation)

The writers run open loop at ``write_per_s`` (a share of the collection per minute) in ``writing``
only; a write planned there and not started by its end is counted missed (no drain into
``after``). Each write replaces one item with a new version of itself — the same id, the same
content: the system does an update's whole work (a new index entry; the old version dead until a
cleanup removes it) while the exact answers stay what they were. So the answers are scored against
one truth at three moments: before the first run; after it — ``after_s`` seconds after the writes
stopped, each system left to its own background upkeep (Postgres's autovacuum, which its default
thresholds do not trigger below a fifth of the table dead; an engine's merges or optimizer); and
after the cleanup run, whose cleanup (Postgres's VACUUM; a Lucene engine's merge of its deleted
documents; Qdrant's optimizer, waited for) ran under the same query load, so its cost lands in a
p99 as the engines' background upkeep does in theirs.

A workload supplies a ``WritesDesign`` per system; this module builds both runs and reads the
records back. The quality and state readings go in each record's ``params.outcome``::

    stage writes:  {"quality": {"before", "after_writes"}, "state": {...same...}, "write_per_s", "query_per_s"}
    stage cleanup: {"quality": {"after_cleanup"}, "state": {"after_cleanup"}, "cleanup_kind"}

``writes_table`` joins the two records of a point: each phase's query p99 and achieved rate, the
writes done against offered, the writers' commit p99, the cleanup's seconds and the three readings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.operation import Operation
from pglimits_core.load.spec import ClosedLoop, OpenLoop, Phase, Role, RunSpec
from pglimits_core.studies.runner import RecordedRun, run_recorded

EXPERIMENT = "writes"
WRITES_STAGE, CLEANUP_STAGE = "writes", "cleanup"
BEFORE, WRITING, AFTER, CLEANUP = "before", "writing", "after", "cleanup"
PHASES = (BEFORE, WRITING, AFTER, CLEANUP)
#: the moments the answers and the state are read at
MOMENTS = ("before", "after_writes", "after_cleanup")
#: how long a cleanup operation may run past its phase before the run gives up on it (a VACUUM of
#: a large HNSW index, a merge): the record then says it outlasted the phase
CLEANUP_GRACE_S = 900.0


@dataclass(frozen=True)
class WritesTiming:
    """The knobs of one run: the phases' lengths, the query load, the write rate as a share of the
    collection rewritten per minute (1: 1 % of the items each minute)."""

    write_pct_per_min: float
    before_s: float
    writing_s: float
    after_s: float
    warmup_s: float
    query_workers: int
    #: the cleanup run's length: the queries go on this long while the cleanup runs (once)
    cleanup_s: float = 30.0
    #: writer processes (a connection each; the write rate split between them): one synchronous
    #: writer waits a commit per write, so a high rate may need more than one to be offered at all
    writers: int = 1

    def write_per_s(self, items: int) -> float:
        """Writes per second for a collection of ``items``: the share per minute, per second."""
        return self.write_pct_per_min / 100.0 * items / 60.0

    def params(self) -> dict[str, Any]:
        return {"write_pct_per_min": self.write_pct_per_min, "before_s": self.before_s,
                "writing_s": self.writing_s, "after_s": self.after_s, "cleanup_s": self.cleanup_s,
                "warmup_s": self.warmup_s, "query_workers": self.query_workers, "writers": self.writers}


class WritesDesign(Protocol):
    """What a workload gives the experiment for one system: operations for the two roles and
    three untimed verbs, each run in the parent against an open connection of its own."""

    #: items in the collection (the write rate is a share of it)
    items: int

    def query_op(self) -> Operation:
        """One query per call (the load's template: pickled to each worker)."""

    def rewrite_op(self) -> Operation:
        """One item replaced by a new version of itself per call."""

    def quality(self) -> dict[str, Any]:
        """The answers' quality now (recall against the exact truth, or agreement with the answers
        before the writes), untimed."""

    def state(self) -> dict[str, Any]:
        """What the writes left in the system: dead versions, segments, pending entries."""

    def cleanup_op(self) -> Operation:
        """The system's own cleanup as one operation, run to its end (VACUUM, a merge, waiting for
        the optimizer): the cleanup run times it as the queries go on."""

    #: what the cleanup does, in the system's words (every table row says it: they differ)
    cleanup_kind: str


def _rates(timing: WritesTiming, design: WritesDesign, query_per_s: float) -> float:
    write_per_s = timing.write_per_s(design.items)
    if write_per_s <= 0 or query_per_s <= 0:
        raise PGLimitsError(f"writes while querying: write rate {write_per_s:g}/s, query rate {query_per_s:g}/s",
                            "give a positive write_pct_per_min and a query rate above 0")
    return write_per_s


def _queries(timing: WritesTiming, design: WritesDesign, query_per_s: float) -> Role:
    return Role("client", design.query_op(), workers=timing.query_workers, loop=OpenLoop(rate=query_per_s, drain_s=2.0))


def writes_spec(timing: WritesTiming, design: WritesDesign, query_per_s: float, seed: int) -> RunSpec:
    """The writes run: queries open loop at ``query_per_s`` through every phase, ``timing.writers``
    writers open loop at the timing's share of the collection per minute in ``writing`` only, with
    no drain (a write not started in ``writing`` is missed, not run in ``after``). ``seed`` orders
    the writers' items (``rewrite_order``): give each run its own."""
    write_per_s = _rates(timing, design, query_per_s)
    phases = [Phase("warmup", timing.warmup_s, warmup=True), Phase(BEFORE, timing.before_s),
              Phase(WRITING, timing.writing_s), Phase(AFTER, timing.after_s)]
    roles = [_queries(timing, design, query_per_s),
             Role("writer", design.rewrite_op(), workers=timing.writers, loop=OpenLoop(rate=write_per_s, drain_s=0.0),
                  active_phases=(WRITING,))]
    return RunSpec(phases=[p for p in phases if p.duration_s > 0], roles=roles, seed=seed, start_method="fork")


def cleanup_spec(timing: WritesTiming, design: WritesDesign, query_per_s: float, seed: int) -> RunSpec:
    """The cleanup run: the same queries for ``timing.cleanup_s`` while one worker runs the
    system's cleanup once from the phase's start; a cleanup still running at the phase's end may
    finish within ``CLEANUP_GRACE_S`` (unmeasured by the queries, and the table says so)."""
    _rates(timing, design, query_per_s)
    roles = [_queries(timing, design, query_per_s),
             Role("cleanup", design.cleanup_op(), workers=1, loop=ClosedLoop(idle_sleep_s=0), max_ops=1)]
    return RunSpec(phases=[Phase(CLEANUP, timing.cleanup_s)], roles=roles, seed=seed, start_method="fork",
                   finish_timeout_s=CLEANUP_GRACE_S)


def readings(design: WritesDesign, moment: str) -> dict[str, Any]:
    """The answers' quality and the system's state at ``moment`` (untimed, between runs)."""
    return {"quality": {moment: design.quality()}, "state": {moment: design.state()}}


def rewrite_order(items: int, worker: Any) -> Any:
    """A writer's items in its own seeded random order, from its share of the ids (worker i of n
    takes the ids ≡ i mod n): two writers never replace the same item at once, which on Postgres
    would have one's INSERT meet the other's new row (a duplicate key), and the stream does not
    walk the table in id order, as an application's updates do not."""
    import numpy as np

    index, workers, seed = (0, 1, 0) if worker is None else (worker.index, worker.workers, worker.seed)
    order = np.random.default_rng(seed).permutation(items)
    return order[order % workers == index]


def _merged(*found: dict[str, Any]) -> dict[str, Any]:
    """``readings`` of several moments as one outcome (their quality and state side by side)."""
    return {"quality": {k: v for f in found for k, v in f["quality"].items()},
            "state": {k: v for f in found for k, v in f["state"].items()}}


def run_point(ctx: Any, study: str, v: Any, design: WritesDesign, timing: WritesTiming, query_per_s: float,
              seed: int, params: dict[str, Any], ready: Callable[[], Any], tables: list[str] | None = None,
              extra: dict[str, Any] | None = None) -> RecordedRun:
    """One point: the writes run, then the cleanup run, each an ordinary run record (``params``
    with ``stage``), the readings between them. ``ready()`` readies the index (rebuilt, or made
    sure of, and warmed) before the first reading; ``extra`` goes into the writes record's
    outcome. A point whose two records are there is reused; one interrupted between them runs
    again whole — the state its cleanup would have cleaned is gone (the table keeps each stage's
    latest record)."""
    writes, cleanup = (writes_spec(timing, design, query_per_s, seed), cleanup_spec(timing, design, query_per_s, seed))
    stages = {WRITES_STAGE: ({**params, "stage": WRITES_STAGE}, writes),
              CLEANUP_STAGE: ({**params, "stage": CLEANUP_STAGE}, cleanup)}
    name = f"{EXPERIMENT}:{v.label}"
    reused = [ctx.reuse(study, v.system, name, {**p, "spec": spec.describe()}) for p, spec in stages.values()]
    if all(reused):
        return reused[-1]
    ready()
    before = readings(design, "before")
    told = {"query_per_s": query_per_s, "write_per_s": timing.write_per_s(design.items), **(extra or {})}
    run_recorded(ctx, study, v.system, name, v.server, writes, stages[WRITES_STAGE][0], tables=tables,
                 after=lambda _result: {**_merged(before, readings(design, "after_writes")), **told})
    return run_recorded(ctx, study, v.system, name, v.server, cleanup, stages[CLEANUP_STAGE][0], tables=tables,
                        after=lambda _result: {**readings(design, "after_cleanup"), "cleanup_kind": design.cleanup_kind,
                                               "query_per_s": query_per_s})
