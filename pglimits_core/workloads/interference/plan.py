"""The interference study's plan: every window a profile's ``interference:`` section asks for.

Per repetition (rounds, so drift on the shared box spreads over every level): each churn level
(level 0 is the baseline: bystanders alone), then the control (b) at its level, the held xmin
(c) and autovacuum off (d) at theirs, then the dedicated side's levels. The levels' order
alternates by repetition on both sides (``LEVEL_ORDERS``: even repetitions the baseline first,
odd ones the churn first), so a warm-up or drift that favours the first window of a side falls
on the baseline and on the churn alike; the control rotates with them (even repetitions baseline,
churn, control; odd ones control, churn, baseline), so it runs after the churn in one and before
it in the next; each run's params record its order. The dedicated side
gets an unrecorded open-loop bystander load before each repetition's first window
(``dedicated.warmup_window_s``: the JVM warms under the load it is then measured at). Every
Postgres point is one window with every tenant at once on the project's one Postgres; every
dedicated point one window with the same tenants at the same rates on OpenSearch, Qdrant and a
Redis reliable queue (``dedicated``), after one set-up point per dedicated server (its data
loaded: this also makes the study start all three). The acts and the control are Postgres-only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pglimits_core.datasets.corpus import CorpusSpec
from pglimits_core.datasets.vectors import VectorSpec
from pglimits_core.errors import PGLimitsError
from pglimits_core.studies.study import Point, point
from pglimits_core.workloads.interference.bystander_capacity import EXPERIMENT as BYSTANDER_CAPACITY
from pglimits_core.workloads.interference.bystander_capacity import BystanderRates
from pglimits_core.workloads.interference.bystander_capacity import (
    capacity_point as bystander_capacity_point,
)
from pglimits_core.workloads.interference.churn_capacity import EXPERIMENT as CAPACITY
from pglimits_core.workloads.interference.churn_capacity import ChurnRate, capacity_point
from pglimits_core.workloads.interference.dedicated import (
    DEDICATED_SIDE,
    SERVERS,
    SYSTEMS,
    dedicated_point,
    ready_point,
    warmup_point,
)
from pglimits_core.workloads.interference.mechanisms import mitigated, order_key
from pglimits_core.workloads.interference.points import (
    POSTGRES_SIDE,
    SPLIT_SIDE,
    InterferenceVariant,
    Knobs,
    interference_point,
)
from pglimits_core.workloads.interference.tenants import Data

#: the sides of the study: built, or why not
SIDES: dict[str, str] = {
    "postgres": ("built: the two-phase SKIP LOCKED churn (pgbench -R), ranked FTS (pg_gin), HNSW (pgvector) and "
                 "OLTP point lookups on one Postgres 16 instance; mechanisms churn, control, held xmin, autovacuum "
                 "off, the holds, the mitigations"),
    "split": ("built: the queue churning on a Postgres instance of its own (postgres_queue: the same binaries and "
              "settings, its own data directory) while the bystanders read from the project's, on the same server "
              "CPU set; baseline and churn levels only"),
    "dedicated": ("built: the same rates on dedicated engines on the same box: FTS on OpenSearch, HNSW on Qdrant "
                  "(hnsw_ef = the same ef), the churn on a Redis reliable queue (qload's churn mode: compiled, "
                  "open loop, its CPU recorded apart) with the same backlog; baseline and churn "
                  "levels only (held xmin, autovacuum off and the control are Postgres mechanisms)"),
}
#: seconds each window costs beyond itself (workers, warm-up queries, queue reset, record): measured
#: ~5 s at the quick sizes and ~5-7 s at the test sizes on the 2-vCPU box while others shared it
OVERHEAD_S = 6.0
#: seconds per 10,000 backlog jobs prefilled and frozen before a Postgres window (measured: see the report)
BACKLOG_S_PER_10K = 0.6
#: seconds a Postgres window waits, typically, for its tables to settle (``start_state.settle``):
#: one check, since the reset flushes its statistics and nothing is due; up to its timeout when
#: a vacuum is running or due (the record says how long it waited)
SETTLE_S = 0.25


def data_of(profile: Any) -> Data:
    """The profile's datasets, the vector study's HNSW build parameters (its defaults if the
    profile has no ``vectors:`` section) and the OLTP tenant's accounts (none without its rate)."""
    corpus, vectors = profile.datasets.corpus, profile.datasets.vectors
    if not isinstance(corpus, CorpusSpec) or not isinstance(vectors, VectorSpec):
        raise PGLimitsError("interference: the profile needs datasets: corpus: and vectors:",
                            "add both under datasets: (the search and vector studies' datasets)")
    study = profile.section("vectors")
    bystanders = profile.section("interference").bystanders
    return Data(corpus, vectors, getattr(study, "m", 16), getattr(study, "ef_construction", 64),
                bystanders.oltp_rows if bystanders.has_oltp() else 0)


def knobs_of(section: Any, profile: Any) -> Knobs:
    b = section.bystanders
    return Knobs(data_of(profile), b.fts_rate, b.vector_rate, b.vector_ef, b.workers, b.warmup_queries,
                 section.churn_clients, section.backlog, section.payload_bytes, section.min_cycles,
                 section.queue_rate, section.warmup_s, b.oltp_rate)


#: the levels' order within a repetition, alternating: even repetitions ascending (the baseline
#: first), odd ones descending (the churn first)
LEVEL_ORDERS = ("baseline first", "churn first")


def level_order(repetition: int) -> str:
    return LEVEL_ORDERS[repetition % 2]


def ordered_levels(levels: list[float], repetition: int) -> list[float]:
    """``levels`` in the repetition's order (``LEVEL_ORDERS``)."""
    return sorted(levels, reverse=level_order(repetition) == "churn first")


def windows(section: Any, repetition: int = 0) -> list[tuple[str, float, float, dict[str, float] | None]]:
    """One repetition's windows: (mechanism, level, seconds, act), the levels in its order, the
    control rotated with them (last when the baseline is first, first when the churn is first:
    its place relative to the churn alternates by repetition), the acts after."""
    found = [("baseline" if level == 0 else "churn", level, section.window_s, None)
             for level in ordered_levels(section.levels, repetition)]
    if section.control_level is not None:
        control = ("control", section.control_level, section.window_s, None)
        found = found + [control] if level_order(repetition) == "baseline first" else [control] + found
    for mechanism in ("held_xmin", "autovacuum_off"):
        stall = getattr(section, mechanism)
        if stall is not None and stall.runs_in(repetition):
            act = {"before_s": stall.before_s, "act_s": stall.act_s,
                   **({"until_dead": stall.until_dead} if stall.until_dead else {})}
            found.append((mechanism, stall.level, stall.window_s, act))
    holds = section.holds
    if holds is not None and repetition < holds.repetitions:
        found += [(mechanism, holds.level, holds.window_s(act["act_s"]), act) for mechanism, act in holds.acts()]
    return found + mitigated_windows(section, found, repetition)


def mitigated_windows(section: Any, planned: list[tuple[str, float, float, Any]],
                      repetition: int) -> list[tuple[str, float, float, Any]]:
    """Each mitigation's window: the planned window it names, again, with its change in the act
    (``mitigation``: its name, the queue table's settings, the holder's timeout)."""
    found = []
    for m in section.mitigations:
        if repetition >= m.repetitions:
            continue
        base = next(((mech, level, seconds, act) for mech, level, seconds, act in planned
                     if mech == m.mechanism and level == m.level), None)
        if base is None:
            raise PGLimitsError(f"interference: mitigation {m.name} names {m.mechanism} at level {m.level:g}, "
                                "which this repetition does not plan",
                                "name a planned mechanism and level (see the plan's windows)")
        change = {"mitigation": m.name, **({"settings": m.settings()} if m.settings() else {}),
                  **({"timeout_s": m.timeout_s} if m.timeout_s else {}),
                  **({"period_s": m.period_s} if m.name == "partition_rotation" else {}),
                  **({"batch": m.batch} if m.name == "batch_claim" else {})}
        found.append((mitigated(m.mechanism, m.name), m.level, base[2], {**(base[3] or {}), **change}))
    return found


def side_windows(side: Any, section: Any, repetition: int) -> list[tuple[str, float, float]]:
    """A side's windows in one repetition — (mechanism, level, seconds), the levels in the
    repetition's order — or none where the profile does not run the side."""
    if side is None:
        return []
    return [("baseline" if level == 0 else "churn", level, section.window_s)
            for level in ordered_levels(side.levels, repetition)]


def split_windows(section: Any, repetition: int = 0) -> list[tuple[str, float, float]]:
    """One repetition's split-side windows (the queue on its own instance)."""
    return side_windows(section.split, section, repetition)


def postgres_windows(section: Any, repetition: int) -> list[tuple[Any, str, float, float, Any]]:
    """The repetition's windows on Postgres: (side, mechanism, level, seconds, act), the one
    instance's first, then the split side's (no act there)."""
    return ([(POSTGRES_SIDE, *w) for w in windows(section, repetition)]
            + [(SPLIT_SIDE, m, level, seconds, None) for m, level, seconds in split_windows(section, repetition)])


def dedicated_windows(section: Any, repetition: int = 0) -> list[tuple[str, float, float]]:
    """One repetition's dedicated windows."""
    return side_windows(section.dedicated, section, repetition)


def setup_points(section: Any, knobs: Knobs) -> list[Point]:
    """One per dedicated server, before any dedicated window: its data loaded (or its queue checked)."""
    if section.dedicated is None:
        return []
    # set-up, not a measurement: no run record (the windows record what they found)
    return [replace(point("dedicated_setup", InterferenceVariant(f"dedicated {SYSTEMS[t]}", SYSTEMS[t],
                                                                 {"server": server}),
                          ready_point, tenant=t, knobs=knobs, warmup_queries=section.dedicated.engine_warmup_queries,
                          appendfsync=section.dedicated.churn_appendfsync),
                    recorded=False)
            for t, server in SERVERS.items()]


def capacity_points(section: Any, knobs: Knobs, rates: ChurnRate, shared: BystanderRates) -> list[Point]:
    """The churn's own capacity and each shared bystander's, first (none where rates are stated)."""
    spec, bystanders = section.churn_capacity, section.bystanders
    found = [] if spec is None else [
        point(CAPACITY, POSTGRES_SIDE, capacity_point, clients=spec.clients, duration_s=spec.duration_s,
              warmup_s=spec.warmup_s, knobs=knobs, rates=rates)]
    for tenant in shared.shares:
        found.append(point(BYSTANDER_CAPACITY, POSTGRES_SIDE, bystander_capacity_point, tenant=tenant,
                           workers=bystanders.capacity.workers, duration_s=bystanders.capacity.duration_s,
                           warmup_s=bystanders.capacity.warmup_s, knobs=knobs, rates=shared))
    return found


def plan(section: Any, profile: Any) -> list[Point]:
    """``section`` is a ``workloads.interference.profile.InterferenceProfile``."""
    knobs = knobs_of(section, profile)
    rates, shared = ChurnRate(stated=section.queue_rate), BystanderRates(dict(section.bystanders.shares))
    found = capacity_points(section, knobs, rates, shared) + setup_points(section, knobs)
    for r in range(section.repetitions):
        order = {"level_order": level_order(r)}
        postgres = [point(mechanism, side, interference_point, mechanism=mechanism, level=level,
                          rates=rates, window_s=seconds, repetition=r, knobs=knobs, act=act, run_order=i,
                          bystanders=shared, **order)
                    for i, (side, mechanism, level, seconds, act) in enumerate(postgres_windows(section, r))]
        found += postgres + dedicated_points(section, knobs, (rates, shared), r, len(postgres))
    return found


def dedicated_points(section: Any, knobs: Knobs, bases: tuple[ChurnRate, BystanderRates], r: int,
                     first: int) -> list[Point]:
    """Repetition ``r``'s dedicated windows (``first``: the first one's place in the repetition),
    after its unrecorded warm-up load."""
    side = section.dedicated
    if side is None:
        return []
    found = [replace(point("dedicated_warmup", InterferenceVariant("dedicated warm-up", "dedicated",
                                                                   {"server": SERVERS["fts"]}),
                           warmup_point, knobs=knobs, seconds=side.warmup_window_s, repetition=r,
                           bystanders=bases[1]),
                     recorded=False)] if side.warmup_window_s > 0 else []
    rates, shared = bases
    return found + [point(mechanism, DEDICATED_SIDE, dedicated_point, mechanism=mechanism, level=level,
                          rates=rates, bystanders=shared, window_s=seconds, repetition=r,
                          knobs=knobs, churn_workers=side.churn_workers, appendfsync=side.churn_appendfsync,
                          run_order=first + i, level_order=level_order(r))
                    for i, (mechanism, level, seconds) in enumerate(dedicated_windows(section, r))]


def server_options(section: Any) -> dict[str, dict[str, Any]]:
    """OpenSearch's heap from the profile (the other servers start as every study starts them)."""
    return {} if section.dedicated is None else {SERVERS["fts"]: {"heap": section.dedicated.heap}}


def estimate_s(section: Any) -> float:
    """The study's wall time: the churn's capacity run, every window plus its overhead and the
    backlog's prefill (the one-off data loads apart: the corpus and vectors into Postgres,
    OpenSearch and Qdrant, and the servers' start)."""
    prefill = BACKLOG_S_PER_10K * section.backlog / 10_000
    capacity, shared = section.churn_capacity, section.bystanders
    total = capacity.warmup_s + capacity.duration_s + OVERHEAD_S + prefill if capacity else 0.0
    if shared.shares:
        total += len(shared.shares) * (shared.capacity.warmup_s + shared.capacity.duration_s + OVERHEAD_S + prefill)
    for r in range(section.repetitions):
        total += sum(seconds + OVERHEAD_S + prefill + SETTLE_S for *_, seconds, _ in postgres_windows(section, r))
        dedicated = dedicated_windows(section, r)
        total += sum(seconds + OVERHEAD_S for _, _, seconds in dedicated)
        if dedicated and section.dedicated.warmup_window_s:
            total += section.dedicated.warmup_window_s + OVERHEAD_S
    return total


def churn_base(section: Any) -> str:
    """What the levels are fractions of, in words."""
    if section.churn_capacity is not None:
        spec = section.churn_capacity
        return (f"the churn's own capacity, measured first (pgbench closed loop, {spec.clients} clients, "
                f"{spec.duration_s} s after {spec.warmup_s} s)")
    return f"{section.queue_rate:g} jobs/s"


def describe(section: Any) -> str:
    """The plan in one line, with its time estimate (what the report and notebook say)."""
    every = [w for r in range(section.repetitions) for w in windows(section, r)]
    mechanisms = sorted({m for m, *_ in every}, key=order_key)
    dedicated = dedicated_windows(section)
    side = (f"dedicated side: {len(dedicated)} windows a repetition (levels "
            f"{', '.join(f'{lv:g}' for lv in section.dedicated.levels)})" if dedicated
            else "dedicated side: not in this profile")
    if section.split is not None:
        side += f"; split side (the queue on its own instance): levels {', '.join(f'{lv:g}' for lv in section.split.levels)}"
    return (f"{len(every)} Postgres windows over {section.repetitions} repetition(s) "
            f"({', '.join(mechanisms)}; churn levels {', '.join(f'{lv:g}' for lv in section.levels)} of "
            f"{churn_base(section)}, backlog {section.backlog:,} jobs; {side}; levels "
            f"{' / '.join(LEVEL_ORDERS)} in alternate repetitions): "
            f"about {estimate_s(section) / 60:.1f} min plus the one-off data loads and the servers' start")
