"""Who set the limit: the one rule every head-to-head comparison is judged by, on rate only.

On a 2-core box the load generator shares the machine with the server it measures, so a figure
is only a claim about a system when we know what stopped it going faster. Each side says so in
its ``limit``:

- ``server``: the server's CPU was saturated: the figure is a ceiling on this box;
- ``load``: the load generator's CPU was saturated, or the client was the limit: the figure is a
  floor ("≥ x"), the server could have done more;
- ``neither``: neither was saturated: the figure is what the system did at that load (a latency
  target, locks, the disk set it);
- None: not recorded, or the records cannot tell.

``decide`` applies these rules in order, and every comparison gets the class of the first that
applies:

1. a side that cannot reach the compared rate on this box at all: ``not comparable here``;
2. a side whose limit is None: ``not decided: limit not recorded``;
3. a side that held a latency target at no rate it tried (``below``: its capacity is under the
   lowest rate that missed with a full window) against one that held it: the other wins when its
   worst figure is above that rate by the tie band (``decided by rate``); both below, or too
   close: ``not decided: no rate to compare``;
4. both sides floors: ``not decided: load-limited`` (≥ a against ≥ b says nothing);
5. one floor against a non-floor: the floor wins only when its worst run is above the other's
   best run by the tie band (``decided by a floor above a ceiling``); otherwise the load could not
   show whether the floor passes the other side: ``not decided: load-limited``;
6. neither a floor: the rate ratio and its spread over the runs, worst case to best
   (``decided by rate``). A winner only when the worst case clears ``TIE_BAND``; "no measurable
   difference" only when the two sides' ranges overlap and their figures are inside the band of
   each other; ranges that overlap while the figures are further apart (1,925 in 1,925–2,750
   against 2,450 in 2,450–3,500: ×1.27, an earlier reading of the queue's per-commit cell) show neither a winner nor parity: ``not decided: ranges
   overlap, figures apart beyond the tie band``. A side ahead in every run but inside the band is ``not decided:
   inside the tie band``; without per-run ranges neither a winner nor a tie can be shown: ``not
   decided: run ranges not recorded``.

Server CPU per operation is never a rule here: it comes from one or two one-second samples per
run, too few to decide a cell on. A side carries it only so that it is printed beside the cell.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pglimits_core.samplers.limit import side_of_record

SERVER, LOAD, NEITHER = "server", "load", "neither"
LIMITS = (SERVER, LOAD, NEITHER)

BY_RATE = "decided by rate"
BY_FLOOR = "decided by a floor above a ceiling"
INSIDE_BAND = "not decided: inside the tie band"
OVERLAP = "not decided: ranges overlap, figures apart beyond the tie band"
NO_RANGE = "not decided: run ranges not recorded"
LOAD_LIMITED = "not decided: load-limited"
NOT_RECORDED = "not decided: limit not recorded"
NO_RATE = "not decided: no rate to compare"
NOT_COMPARABLE = "not comparable here"
CLASSES = (BY_RATE, BY_FLOOR, INSIDE_BAND, OVERLAP, NO_RANGE, LOAD_LIMITED, NOT_RECORDED, NO_RATE, NOT_COMPARABLE)
DECIDED = (BY_RATE, BY_FLOOR)
#: the classes under which the rate ratio is no measurement of the two systems (a floor, a limit
#: not recorded, no rate, a rate out of reach); inside the band or without ranges it still is one
NOT_MEASURED = (LOAD_LIMITED, NOT_RECORDED, NO_RATE, NOT_COMPARABLE)
# Two figures closer than this factor are a tie on this box: repetitions on shared 2-vCPU
# machines spread by 10-20 % between runs, so a smaller margin is not evidence of a difference.
TIE_BAND = 1.25


@dataclass(frozen=True)
class Side:
    """One system's figure in a comparison. ``value`` is higher-is-better (ops/s; pass 1/latency
    for a latency), ``value_range`` its runs' lowest and highest, ``limit`` what stopped it (see
    the module). ``server_cpu_us_per_op`` is printed beside a cell, never read by ``decide``."""

    system: str
    value: float | None
    limit: str | None = None
    value_range: tuple[float, float] | None = None
    reaches_rate: bool = True  # False: the compared rate is out of its reach on this box at all
    server_cpu_us_per_op: float | None = None
    #: what ``value_range`` spans: its runs, or a capacity's bracket (the confirmed rate to the
    #: next rate that missed), which the verdict's words then name
    range_of: str = "run"
    #: held the target at no rate it tried: its capacity is below ``value``, the lowest rate that
    #: missed the target with enough operations in its window for a p99 (an upper bound)
    below: bool = False

    @property
    def floor(self) -> bool:
        return self.limit == LOAD


@dataclass(frozen=True)
class Verdict:
    klass: str
    ratio: float | None  # a / b of the rate (for a floor decision: its worst case); None undecided
    winner: str | None  # the side ahead beyond the tie band in every run; None otherwise
    why: str
    spread: tuple[float, float] | None = None  # a / b from the runs' worst case to their best
    ahead: str | None = None  # ahead in every run but inside the tie band (``INSIDE_BAND``)

    def text(self) -> str:
        return f"{self.klass}: {self.why}"

    @property
    def tie(self) -> bool:
        """No measurable difference: decided by rate, with the two sides' run ranges overlapping."""
        return self.klass == BY_RATE and self.winner is None


def decide(a: Side, b: Side, tie_band: float = TIE_BAND) -> Verdict:
    """The class of the comparison of ``a`` with ``b``, the deciding ratio and the winner
    (the rules, in order, are the module's)."""
    unreachable = [side.system for side in (a, b) if not side.reaches_rate]
    if unreachable:
        return Verdict(NOT_COMPARABLE, None, None,
                       f"{' and '.join(unreachable)} cannot reach the compared rate on this box")
    if not (a.value and b.value):
        missing = [side.system for side in (a, b) if not side.value]
        return Verdict(NO_RATE, None, None, f"{' and '.join(missing)}: no rate measured to compare")
    unknown = [side.system for side in (a, b) if side.limit not in LIMITS]
    if unknown:
        return Verdict(NOT_RECORDED, None, None,
                       f"{' and '.join(unknown)}: which side set the limit was not recorded")
    if a.below or b.below:
        return _below_against(a, b, tie_band)
    if a.floor and b.floor:
        return Verdict(LOAD_LIMITED, None, None, "both figures are floors, each where its load generator's CPU set "
                       "was saturated (the server's may have been too): "
                       f"≥ {a.value:,.0f} vs ≥ {b.value:,.0f}")
    if a.floor or b.floor:
        return _floor_against(a, b, tie_band)
    return _by_rate(a, b, tie_band)


def _below_against(a: Side, b: Side, tie_band: float) -> Verdict:
    """A side whose capacity is below the lowest rate it missed at, against the other: the other
    wins when even its worst figure (a floor's too: its true rate is higher) clears that bound by
    the band."""
    if a.below and b.below:
        return Verdict(NO_RATE, None, None, f"neither held the target at any rate tried (below {a.value:,.0f} "
                       f"and {b.value:,.0f}/s)")
    below, other = (a, b) if a.below else (b, a)
    worst = other.value_range[0] if other.value_range else other.value
    held = f"held it at {'≥ ' if other.floor else ''}{worst:,.0f}"
    missed = f"{below.system} held the target at no rate it tried with a full window, down to {below.value:,.0f}/s"
    if worst >= tie_band * below.value:
        ratio = below.value / worst if below is a else worst / below.value
        return Verdict(BY_RATE, ratio, other.system,
                       f"{missed}; {other.system} {held} (> ×{worst / below.value:.1f}, beyond the tie band)")
    return Verdict(NO_RATE, None, None, f"{missed}; {other.system} {held}: too close to that bound to tell")


def _floor_against(a: Side, b: Side, tie_band: float) -> Verdict:
    """One floor F against a non-floor N: F's true rate is at least its figure, so F wins when
    even its worst run is above N's best by the band; below or near N it could pass N or not."""
    floor, other = (a, b) if a.floor else (b, a)
    spread = _rate_spread(a, b)
    # a median inside the band can have no worst run above the band: no range is needed to say so
    if spread is None and floor.value >= tie_band * other.value:
        return Verdict(NO_RANGE, None, None, f"{floor.system}'s load limited it at ≥ {floor.value:,.0f}; "
                       "without the runs' ranges its worst run against the other's best is unknown")
    if spread is not None and floor.value_range[0] >= tie_band * other.value_range[1]:
        worst, best = floor.value_range[0], other.value_range[1]
        return Verdict(BY_FLOOR, worst / best if floor is a else best / worst, floor.system,
                       f"{floor.system}'s worst run ≥ {worst:,.0f} against {other.system}'s best {best:,.0f} "
                       f"(×{worst / best:.2f}): a floor above a ceiling decides", spread)
    where = "below" if floor.value < other.value else "near"
    return Verdict(LOAD_LIMITED, None, None,
                   f"{floor.system}'s load limited it at ≥ {floor.value:,.0f}, {where} {other.system}'s "
                   f"{other.value:,.0f}: the load could not show whether {floor.system} passes it")


def _by_rate(a: Side, b: Side, tie_band: float) -> Verdict:
    """Neither a floor: the rate ratio, judged on its spread over the runs."""
    ratio, spread = a.value / b.value, _rate_spread(a, b)
    if spread is None:
        return Verdict(NO_RANGE, None, None, f"rate {a.value:,.0f} vs {b.value:,.0f}, but the runs' ranges "
                       "were not recorded: the spread, and so a winner or a tie, is unknown")
    low, high = spread
    unit = "run" if a.range_of == b.range_of == "run" else "bracket"
    every = "in every run" if unit == "run" else "across both brackets (confirmed rate to the next that missed)"
    ranges = f"{unit}s {_range_text(a)} vs {_range_text(b)}"
    if low >= tie_band or high <= 1 / tie_band:
        winner = a.system if low >= tie_band else b.system
        return Verdict(BY_RATE, ratio, winner, f"ahead beyond the tie band {every}: {ranges}", spread)
    if low <= 1 <= high and 1 / tie_band < ratio < tie_band:
        return Verdict(BY_RATE, ratio, None, f"no measurable difference: the {unit}s overlap ({ranges})", spread)
    if low <= 1 <= high:
        return Verdict(OVERLAP, ratio, None, f"the {unit}s overlap ({ranges}), but the figures are ×{max(ratio, 1 / ratio):.2f} "
                       "apart, beyond the tie band: neither a winner nor parity", spread)
    ahead = a.system if low > 1 else b.system
    return Verdict(INSIDE_BAND, ratio, None, f"{ahead} ahead {every}, but inside the tie band ({ranges})",
                   spread, ahead=ahead)


def _rate_spread(a: Side, b: Side) -> tuple[float, float] | None:
    """a/b from the worst case (a's lowest over b's highest) to the best."""
    if not (a.value_range and b.value_range and a.value_range[0] and b.value_range[0]):
        return None
    return a.value_range[0] / b.value_range[1], a.value_range[1] / b.value_range[0]


def _range_text(side: Side) -> str:
    low, high = side.value_range
    return f"{low:,.0f}–{high:,.0f}"


# --- which side set the limit, from the records ------------------------------------------------------
# The per-second classification every record before the ``limit`` field carries
# (``client_bound``, ``client_bound_reason``), by the start of its reason.
_OLD_SERVER = ("server-bound",)
# client and server saturated the shared cores together, the server holding the larger part: the
# server ran short of CPU its client took (pgbench ran the same statements 1.4-1.6x faster on such
# rows), so the figure is a floor of what the server does with the cores to itself
_OLD_SHARED_SATURATED = ("box saturated mostly by the server",)
_OLD_NEITHER = ("not CPU-bound",)
_OLD_UNKNOWN = ("cannot tell", "not applicable")


def limit_from_record(record: Mapping[str, Any] | Any) -> str | None:
    """The limit of one run's manifest, or of a table row: the record's own ``limit`` (a
    manifest's ``{"side": ..., "reason": ...}``, a row's column) where it has one, else the old
    per-second verdict mapped (client-bound -> "load"; server-bound or a box saturated mostly by
    the server -> "server"; not CPU-bound or otherwise not client-bound -> "neither"; unknown,
    "cannot tell" or "not applicable" -> None)."""
    if "limit" in record:
        recorded = record["limit"]
        exact = (record.get("cpu") or {}).get("exact") if isinstance(record.get("cpu"), Mapping) else None
        side = side_of_record(dict(recorded), exact) if isinstance(recorded, Mapping) else recorded
        if side in LIMITS or not shared_cores(record):
            return side if side in LIMITS else None
    # a record without the sets' reading, or one whose server and load shared the cores (then the
    # sets cannot tell): the per-second verdict is all there is
    return _old_limit(record.get("client_bound"), record.get("client_bound_reason"))


def shared_cores(record: Mapping[str, Any] | Any) -> bool:
    """Whether server and load shared the cores (a placement that does not say: as if shared,
    the same default ``samplers.limit`` reads it with)."""
    placement = record.get("placement")
    return isinstance(placement, Mapping) and bool(placement.get("client_and_server_share_cores", True))


def _old_limit(bound: Any, reason: Any) -> str | None:
    reason = reason if isinstance(reason, str) else ""
    if _known(bound) and bool(bound):
        return LOAD
    if reason.startswith(_OLD_SHARED_SATURATED):
        return LOAD
    if reason.startswith(_OLD_SERVER):
        return SERVER
    if reason.startswith(_OLD_NEITHER):
        return NEITHER
    if reason.startswith(_OLD_UNKNOWN) or "cannot tell" in reason:
        return None
    return NEITHER if _known(bound) else None


def _known(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def combined_limit(limits: Iterable[str | None]) -> str | None:
    """One limit for the runs behind a figure: a floor if any run's load was the limit (its
    median may be a floor); unknown if any run's is; a ceiling only if every run's was; else
    "neither". No runs: None."""
    found = [limit if limit in LIMITS else None for limit in limits]
    if LOAD in found:
        return LOAD
    if not found or None in found:
        return None
    return SERVER if all(limit == SERVER for limit in found) else NEITHER


SWEEP = "indicative (a sweep's window)"


def sweep_class(klass: str | None) -> str | None:
    """A per-row class of a sweep's table: the sweeps draw curves on short windows and decide no
    cell (the capacity experiment's steady windows do), so a decided class there is indicative."""
    return f"{SWEEP}: {klass}" if klass in DECIDED else klass
