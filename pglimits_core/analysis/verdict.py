"""Who set the limit: the one rule every head-to-head comparison is judged by.

On a 2-core box the load generator shares the cores with the server it measures, so a ratio
between two systems is only a claim about the systems when the servers, not the clients, set
both sides. Every comparison gets one class:

- ``decided at the server``: both sides are server-bound (the client was not the limit) or were
  driven by the system's own C load tool (pgbench, redis-benchmark, an HTTP tool) without being
  client-bound; the rate ratio is a claim about the servers.
  A harness side on a box its client and server saturated together is not server-set: the
  client took cores the server could have used (a C tool's client is light; its CPU is recorded).
- ``decided by server CPU per operation``: a side was client-bound, but both sides have the
  server's own CPU per operation; that ratio compares the engines' cost even when the clients
  capped the rate.
- ``not decided by the harness``: a side was client-bound (or its CPU split is not trusted) and no
  server-side figure decides it.
- ``not comparable here``: a side cannot reach the compared rate on this box at all, even with
  nothing else running (so "differ" would describe the box, not the systems).

A ratio within ``TIE_BAND`` of 1 is a tie: "no measurable difference". Where the sides carry
their runs' lowest and highest figures (``value_range``/``cpu_range``), the deciding ratio's spread
runs from the worst case to the best, and a side wins only when the whole spread clears the band.
A server-CPU comparison without per-run CPU figures names no winner: its worst case is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

AT_SERVER = "decided at the server"
BY_SERVER_CPU = "decided by server CPU per operation"
NOT_BY_HARNESS = "not decided by the harness"
NOT_COMPARABLE = "not comparable here"
CLASSES = (AT_SERVER, BY_SERVER_CPU, NOT_BY_HARNESS, NOT_COMPARABLE)
HARNESS = "harness"
# Two figures closer than this factor are a tie on this box: repetitions on shared 2-vCPU
# machines spread by 10-20 % between runs, so a smaller margin is not evidence of a difference.
TIE_BAND = 1.25


@dataclass(frozen=True)
class Side:
    """One system's figure in a comparison. ``value`` is higher-is-better (ops/s; pass 1/latency
    for a latency) and ``tool`` says what drove it ("harness" or the C tool's name)."""

    system: str
    value: float | None
    tool: str = HARNESS
    client_bound: bool | None = None  # None: no verdict (not recorded, or the CPU split untrusted)
    server_cpu_us_per_op: float | None = None
    reaches_rate: bool = True  # False: the compared rate is out of its reach on this box at all
    value_range: tuple[float, float] | None = None  # the runs' lowest and highest ``value``
    cpu_range: tuple[float, float] | None = None  # the runs' lowest and highest server µs per op
    # the harness's client and the server together used (nearly) every core: the server ran short
    # of CPU the client took, so its rate describes the shared box, not the server
    box_saturated: bool = False

    @property
    def server_side(self) -> bool:
        """The server, not the client, set this figure: known not client-bound, or a C tool's
        figure with no client-bound verdict against it."""
        if self.tool == HARNESS and self.box_saturated:
            return False
        if self.client_bound is False:
            return True
        return self.tool != HARNESS and self.client_bound is None


@dataclass(frozen=True)
class Verdict:
    klass: str
    ratio: float | None  # a / b of the deciding figure (rate, or server CPU efficiency)
    winner: str | None  # the system ahead by more than the tie band; None for a tie or undecided
    why: str
    spread: tuple[float, float] | None = None  # the deciding ratio's worst and best case over the runs

    def text(self) -> str:
        return f"{self.klass}: {self.why}"


def decide(a: Side, b: Side, tie_band: float = TIE_BAND) -> Verdict:
    """The class of the comparison of ``a`` with ``b``, the deciding ratio and the winner."""
    unreachable = [side.system for side in (a, b) if not side.reaches_rate]
    if unreachable:
        return Verdict(NOT_COMPARABLE, None, None,
                       f"{' and '.join(unreachable)} cannot reach the compared rate on this box")
    if a.server_side and b.server_side and a.value and b.value:
        ratio, spread = a.value / b.value, _rate_spread(a, b)
        return Verdict(AT_SERVER, ratio, _winner(a, b, ratio, tie_band, spread), "both sides set by the server",
                       spread)
    if a.server_cpu_us_per_op and b.server_cpu_us_per_op:
        # fewer server microseconds per operation is better: efficiency ratio a/b
        ratio, spread = b.server_cpu_us_per_op / a.server_cpu_us_per_op, _cpu_spread(a, b)
        cpu = f"server CPU per operation {a.server_cpu_us_per_op:,.0f} vs {b.server_cpu_us_per_op:,.0f} µs"
        if spread is None:
            return Verdict(NOT_BY_HARNESS, None, None,
                           f"{cpu}, but no per-run CPU figures show the worst case clears the tie band")
        return Verdict(BY_SERVER_CPU, ratio, _winner(a, b, ratio, tie_band, spread), cpu, spread)
    limited = [side.system for side in (a, b) if not side.server_side]
    return Verdict(NOT_BY_HARNESS, None, None,
                   f"{' and '.join(limited)} client-bound, on a box the client saturated, or not judged; "
                   "no server-side figure decides it")


def _rate_spread(a: Side, b: Side) -> tuple[float, float] | None:
    """a/b from the worst case (a's lowest over b's highest) to the best."""
    if not (a.value_range and b.value_range and a.value_range[0] and b.value_range[0]):
        return None
    return a.value_range[0] / b.value_range[1], a.value_range[1] / b.value_range[0]


def _cpu_spread(a: Side, b: Side) -> tuple[float, float] | None:
    """b's CPU over a's (efficiency a/b) from the worst case (a's most µs, b's fewest) to the best."""
    if not (a.cpu_range and b.cpu_range and a.cpu_range[0] and b.cpu_range[0]):
        return None
    return b.cpu_range[0] / a.cpu_range[1], b.cpu_range[1] / a.cpu_range[0]


def _winner(a: Side, b: Side, ratio: float, tie_band: float,
            spread: tuple[float, float] | None = None) -> str | None:
    """The side ahead by more than the band; with a spread, only if its worst case is too."""
    low, high = spread or (ratio, ratio)
    if ratio >= tie_band and low >= tie_band:
        return a.system
    if ratio <= 1 / tie_band and high <= 1 / tie_band:
        return b.system
    return None
