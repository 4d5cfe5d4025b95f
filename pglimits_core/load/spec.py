"""What a load run is: phases (in order, each with a duration) and roles running concurrently.

A role = name + operation template + number of worker processes + loop (``ClosedLoop`` or
``OpenLoop``). Every role is bounded by the run's total duration *and* a maximum op count.
Invalid specs raise ``PGLimitsError`` with one line naming the fix. Durations are seconds,
rates are operations per second for the whole role (split evenly across its workers).
"""

from __future__ import annotations

import math
import pickle
from dataclasses import dataclass, field
from typing import Any, Literal

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.operation import Operation
from pglimits_core.record.results import PhaseInfo, RoleInfo

NS_PER_S = 1_000_000_000
#: The finest per-worker interval a schedule can represent (timer resolution, ns stamps).
MIN_INTERVAL_NS = 1_000
DEFAULT_MAX_OPS = 50_000_000


@dataclass(frozen=True)
class Phase:
    """A named stretch of the run (``warmup=True``: recorded, labelled, left out of summaries)."""

    name: str
    duration_s: float
    warmup: bool = False


@dataclass(frozen=True)
class ClosedLoop:
    """Back to back. After an idle poll (op returned 0 items) sleep ``idle_sleep_s`` seconds."""

    idle_sleep_s: float = 0.001
    kind: Literal["closed"] = "closed"


@dataclass(frozen=True)
class OpenLoop:
    """Fixed offered ``rate`` (ops/s for the role), ``uniform`` or seeded ``poisson`` arrivals.

    A worker that falls behind keeps every intended start (coordinated-omission correct).
    After the last phase it runs the ops already due for up to ``drain_s`` more seconds;
    whatever is still not started then is counted as ``missed``.
    """

    rate: float
    arrival: Literal["uniform", "poisson"] = "uniform"
    drain_s: float = 5.0
    kind: Literal["open"] = "open"


@dataclass(frozen=True)
class Role:
    """``workers`` processes running ``operation``; ``max_ops`` bounds the role (all workers)."""

    name: str
    operation: Operation
    workers: int = 1
    loop: ClosedLoop | OpenLoop = field(default_factory=ClosedLoop)
    max_ops: int = DEFAULT_MAX_OPS
    max_errors: int = 0  # op exceptions one worker tolerates before it fails
    active_phases: tuple[str, ...] = ()  # empty: active in every phase
    #: a worker of this role killed mid-run (a crash drill kills one on purpose) is reported as
    #: "died" and does not stop the others or fail the run
    may_die: bool = False

    def ops_share(self, index: int) -> int:
        """This worker's part of ``max_ops`` (shares differ by at most one)."""
        return self.max_ops // self.workers + (1 if index < self.max_ops % self.workers else 0)

    def info(self) -> RoleInfo:
        rate = self.loop.rate if isinstance(self.loop, OpenLoop) else None
        return RoleInfo(self.name, self.operation.name, self.loop.kind, self.workers, rate,
                        tuple(self.active_phases))


@dataclass(frozen=True)
class RunSpec:
    """A whole run. ``start_method`` "spawn" (default) gives each worker a clean interpreter,
    safe even when the parent has threads (samplers, Jupyter); "fork" starts faster."""

    phases: list[Phase]
    roles: list[Role]
    seed: int = 0
    start_method: Literal["spawn", "fork", "forkserver"] = "spawn"
    open_timeout_s: float = 120.0  # for every worker to start and open its connection
    finish_timeout_s: float = 30.0  # grace after schedule + drain before a worker is "stuck"

    @property
    def total_s(self) -> float:
        return sum(phase.duration_s for phase in self.phases)

    def phase_infos(self) -> list[PhaseInfo]:
        return [PhaseInfo(p.name, p.duration_s, p.warmup) for p in self.phases]

    def describe(self) -> dict[str, Any]:
        """Resolved parameters for the manifest."""
        return {"seed": self.seed, "start_method": self.start_method,
                "phases": [vars(p) for p in self.phases],
                "roles": [_describe_role(role) for role in self.roles]}


def _describe_role(role: Role) -> dict[str, Any]:
    return {"name": role.name, "op": role.operation.name, "workers": role.workers,
            "loop": vars(role.loop), "max_ops": role.max_ops, "max_errors": role.max_errors,
            "active_phases": list(role.active_phases),
            **({"may_die": True} if role.may_die else {}),  # only when set: older records compare equal
            "operation": repr(role.operation)[:300]}


def _fail(problem: str, fix: str) -> None:
    raise PGLimitsError(problem, fix)


def validate_loop(role: Role) -> None:
    loop = role.loop
    if isinstance(loop, ClosedLoop):
        if loop.idle_sleep_s < 0:
            _fail(f"role {role.name}: idle_sleep_s {loop.idle_sleep_s} < 0", "use 0 or more seconds")
        return
    if not math.isfinite(loop.rate) or loop.rate <= 0:
        _fail(f"role {role.name}: open-loop rate {loop.rate} is not > 0", "give a positive ops/s")
    if role.workers * NS_PER_S / loop.rate < MIN_INTERVAL_NS:
        _fail(f"role {role.name}: {loop.rate} ops/s over {role.workers} workers is an interval "
              "under 1 µs per worker", f"use more workers (>= {math.ceil(loop.rate / 1e6)}) "
              "or a lower rate")
    if loop.arrival not in ("uniform", "poisson"):
        _fail(f"role {role.name}: arrival {loop.arrival!r}", "use 'uniform' or 'poisson'")
    if loop.drain_s < 0:
        _fail(f"role {role.name}: drain_s {loop.drain_s} < 0", "use 0 or more seconds")


def validate_role(role: Role, phase_names: set[str]) -> None:
    if role.workers < 1:
        _fail(f"role {role.name}: {role.workers} workers", "use at least 1 worker")
    if role.max_ops < role.workers:
        _fail(f"role {role.name}: max_ops {role.max_ops} < workers", "raise max_ops")
    unknown = set(role.active_phases) - phase_names
    if unknown:
        _fail(f"role {role.name}: unknown active phases {sorted(unknown)}", "use phase names")
    validate_loop(role)
    try:
        pickle.dumps(role.operation)
    except Exception as error:
        _fail(f"role {role.name}: operation cannot be sent to a worker process ({error})",
              "define the operation class at module level and connect in open(), not __init__")


def validate_spec(spec: RunSpec) -> None:
    """Raise ``PGLimitsError`` for anything the driver cannot run honestly."""
    if not spec.phases or not spec.roles:
        _fail("a run needs at least one phase and one role", "add a Phase and a Role")
    for phase in spec.phases:
        if not math.isfinite(phase.duration_s) or phase.duration_s <= 0:
            _fail(f"phase {phase.name}: duration {phase.duration_s} s", "use a duration > 0 s")
    names = [p.name for p in spec.phases]
    if len(set(names)) != len(names) or len({r.name for r in spec.roles}) != len(spec.roles):
        _fail("phase and role names must be unique", "rename the duplicates")
    for role in spec.roles:
        validate_role(role, set(names))
