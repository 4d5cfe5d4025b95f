"""The bystanders' rates as shares of their own capacity on this server, measured first in the run.

Where the profile gives ``bystanders.shares`` (e.g. ``{fts: 0.1, vector: 0.1, oltp: 0.1}``), each
of those tenants is measured alone before any window: the harness runs its operation closed loop
(``capacity.workers`` processes on the load's CPU set, ``capacity.duration_s`` after a warm-up),
nothing else on the server, the queue at its backlog and idle. Its achieved rate is the tenant's
capacity; the record says which CPU set was saturated (the load's: a floor — then the tenant's
window rate is a share of a floor, and says so). Every window then offers ``share × capacity``
for that tenant, on both sides (the dedicated engines get the same absolute rates). A tenant
without a share keeps its stated rate. A resumed study reads the capacities from their records.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.load import ClosedLoop, Phase, Role, RunSpec
from pglimits_core.load.background import PHASE
from pglimits_core.studies.runner import run_recorded
from pglimits_core.workloads.interference import churn, tenants
from pglimits_core.workloads.interference.points import STUDY, Knobs, bystander_ops, prepare_run
from pglimits_core.workloads.interference.window import SERVER

EXPERIMENT = "bystander_capacity"
#: the Knobs field holding each tenant's offered rate
RATE_FIELD = {"fts": "fts_rate", "vector": "vector_rate", "oltp": "oltp_rate"}


@dataclass
class BystanderRates:
    """One per plan: each shared tenant's measured capacity, and the rates it gives the windows."""

    shares: dict[str, float] = field(default_factory=dict)
    measured: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def rate(self, tenant: str) -> float:
        if tenant not in self.measured:
            why = self.errors.get(tenant, "its point has not run")
            raise PGLimitsError(f"interference: the {tenant} bystander's capacity was not measured ({why})",
                                "see its bystander_capacity record's error, fix it and rerun with --resume")
        return round(self.shares[tenant] * self.measured[tenant], 1)

    def resolve(self, knobs: Knobs) -> Knobs:
        """``knobs`` with each shared tenant's rate set from its measured capacity."""
        return replace(knobs, **{RATE_FIELD[t]: self.rate(t) for t in self.shares}) if self.shares else knobs

    def learn(self, tenant: str, recorded: Any) -> None:
        rate = achieved_per_s(recorded)
        if getattr(recorded, "status", None) == "complete" and rate:
            self.measured[tenant] = rate
            self.errors.pop(tenant, None)
        else:
            self.errors[tenant] = getattr(recorded, "error", None) or "the capacity run measured no rate"

    def describe(self) -> dict[str, Any]:
        return {t: {"share": s, "capacity_per_s": self.measured.get(t)} for t, s in self.shares.items()}


def achieved_per_s(recorded: Any) -> float | None:
    """The measured phase's operations/s of a recorded harness run (None without a summary)."""
    summary = getattr(recorded, "summary", None)
    rates = [e.ops_per_s for e in getattr(summary, "entries", []) or [] if e.phase == PHASE and e.ops_per_s]
    return round(max(rates), 1) if rates else None


def capacity_spec(op: Any, tenant: str, workers: int, duration_s: float, warmup_s: float, seed: int) -> RunSpec:
    phases = ([Phase("warmup", warmup_s, warmup=True)] if warmup_s > 0 else []) + [Phase(PHASE, duration_s)]
    return RunSpec(phases=phases, roles=[Role(tenant, op, workers=workers, loop=ClosedLoop())], seed=seed)


def capacity_point(run: Any, v: Any, tenant: str, workers: int, duration_s: float, warmup_s: float,
                   knobs: Knobs, rates: BystanderRates) -> Any:
    """``tenant`` alone, closed loop, before the windows; ``rates`` learns its capacity."""
    ctx = run.ctx
    # the tenant's op as the windows build it (the stated rate it carries is not used here)
    op = next(op for op, _ in bystander_ops(ctx, _with_every_tenant(knobs), run.seed) if op.name == tenant)
    spec = capacity_spec(op, tenant, workers, duration_s, warmup_s, run.seed)
    params = {"experiment": EXPERIMENT, "variant": v.label, "side": "postgres", "mechanism": EXPERIMENT,
              "tenant": tenant, "workers": workers, "duration_s": duration_s, "warmup_s": warmup_s,
              "data": knobs.data.params(), "vector_ef": knobs.vector_ef}
    name = f"{EXPERIMENT}:{tenant}"
    recorded = ctx.reuse(STUDY, v.system, name, {**params, "spec": spec.describe()})
    if recorded is None:
        start = prepare_run(ctx, knobs)
        recorded = run_recorded(ctx, STUDY, v.system, name, SERVER, spec, params,
                                tables=[*churn.QUEUE_TABLES, *tenants.bystander_tables(knobs.data)],
                                after=lambda _result: {"start_state": start})
    rates.learn(tenant, recorded)
    return recorded


def _with_every_tenant(knobs: Knobs) -> Knobs:
    """``knobs`` with a placeholder rate on every tenant, so ``bystander_ops`` builds each op."""
    return replace(knobs, oltp_rate=knobs.oltp_rate or 1.0)
