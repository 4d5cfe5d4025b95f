"""The queue's designs for the core capacity experiment (``experiments.capacity``).

Per variant: the ceiling is a burn-down of a prefilled, settled queue — through a compiled load
that runs the design's very statements in one window: pgbench for the Postgres designs; for the
Redis queue qload's burn-down when the rate points run qload too (``load: qload``;
redis-benchmark runs its three commands as separate phases, so it gives no per-job window), else
the harness's consumers; capacity at a target is the open-loop load's (the harness's, or qload's):
open-loop producers (one message per enqueue, latency from the *intended* send) and closed-loop
consumers, send → claim p99 judged over messages sent inside the window. Under the split placement
the load runs on its own CPU set, so a design the harness cannot push to its limit shows as a floor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pglimits_core.experiments.capacity import Design, VariantDesign
from pglimits_core.load.ratesearch import PointResult
from pglimits_core.workloads.queue.ceiling import (
    CAPACITY_TOOLS,
    CEILING_TOOLS,
    PgbenchCeiling,
    QloadCeiling,
    ceiling_point,
)
from pglimits_core.workloads.queue.points import (
    QueueVariant,
    latency_point,
    reading,
    throughput_point,
)
from pglimits_core.workloads.queue.prefill_size import PrefillSizer
from pglimits_core.workloads.queue.profile import QueueCapacity
from pglimits_core.workloads.queue.qload_points import qload_point
from pglimits_core.workloads.queue.systems.qload_verbs import QLOAD_SYSTEMS

if TYPE_CHECKING:
    from pglimits_core.studies.runner import RecordedRun
    from pglimits_core.studies.study import StudyRun


@dataclass
class QueueDesign(VariantDesign):
    """One queue variant as a capacity ``Design``."""

    variant: QueueVariant
    spec: QueueCapacity
    #: None: every ceiling and check starts from the same backlog, ``spec.prefill`` (its
    #: repetitions must measure one state); a sizer sizes each from the design's rate so far
    sizer: PrefillSizer | None = None
    experiment: str = "capacity"  # what its records say (the placement check reuses its ceiling)
    ceiling_only: bool = False

    @property
    def targets_ms(self) -> tuple[float, ...] | None:
        return () if self.ceiling_only else None  # None: the plan's

    @property
    def prefill(self) -> int:
        return self.spec.prefill_of(self.label)

    def ceiling_tool(self) -> Any:
        """pgbench for a Postgres design; with the compiled load (``load: qload``), qload's
        burn-down for a Redis one; None: the harness's burn-down."""
        tools = CAPACITY_TOOLS if self.spec.load == "qload" else CEILING_TOOLS
        tool = tools.get(self.system)
        return tool if isinstance(tool, PgbenchCeiling | QloadCeiling) else None

    def uses_tool(self) -> bool:
        return self.ceiling_tool() is not None

    def ceiling_run(self, run: StudyRun, clients: int, warmup_s: float, duration_s: float,
                    params: dict[str, Any]) -> RecordedRun:
        if self.uses_tool():
            return ceiling_point(run, self.variant, clients, int(duration_s), int(warmup_s), self.prefill,
                                 requests=0, recorded_as=self.experiment, sizer=self.sizer, extra_params=params,
                                 tool=self.ceiling_tool())
        return throughput_point(run, self.variant, clients, self.prefill, duration_s, warmup_s,
                                recorded_as=self.experiment, sizer=self.sizer, extra_params=params)

    def check_run(self, run: StudyRun, clients: int, warmup_s: float, duration_s: float,
                  params: dict[str, Any]) -> RecordedRun | None:
        """The harness's burn-down at the tool's clients (as many consumers)."""
        if not self.uses_tool():
            return None
        return throughput_point(run, self.variant, clients, self.prefill, duration_s, warmup_s,
                                recorded_as=self.experiment, sizer=self.sizer, extra_params=params)

    def rate_run(self, run: StudyRun, rate: float, warmup_s: float, duration_s: float,
                 params: dict[str, Any]) -> RecordedRun:
        if self.compiled_rates():
            return qload_point(run, self.variant, rate, self.spec.producers, self.spec.consumers, duration_s,
                               warmup_s, experiment="capacity", extra_params=params)
        return latency_point(run, self.variant, rate, self.spec.producers, self.spec.consumers, duration_s,
                             warmup_s, experiment="capacity", extra_params=params)

    def rate_check_run(self, run: StudyRun, rate: float, warmup_s: float, duration_s: float,
                       params: dict[str, Any]) -> RecordedRun | None:
        """The harness's rate point at a rate qload confirmed (None where the harness drove them)."""
        if not self.compiled_rates():
            return None
        return latency_point(run, self.variant, rate, self.spec.producers, self.spec.consumers, duration_s,
                             warmup_s, experiment="capacity", extra_params=params)

    def compiled_rates(self) -> bool:
        return self.spec.load == "qload" and self.system in QLOAD_SYSTEMS

    def reading(self, summary: Any, offered: float, outcome: dict[str, Any]) -> PointResult:
        return point_reading(summary, offered, outcome)


def point_reading(summary: Any, offered: float, outcome: dict[str, Any] | None = None) -> PointResult:
    """A rate point: send → claim from the summary (the accounting in ``outcome`` is the table's)."""
    return reading(summary, offered)


def items_per_s(summary: Any) -> float:
    """Jobs/s of a ceiling run: the consumers' (harness) or the tool's measured window."""
    rates = [e.items_per_s for e in summary.entries if e.phase == "measure" and e.role in ("consumer", "tool")]
    return max(rates, default=0.0)


def queue_designs(spec: QueueCapacity | None, variants: list[QueueVariant]) -> list[Design]:
    if spec is None:
        return []
    # no sizer: every repetition of a ceiling, and its check, from the same backlog (``prefill``)
    return ([QueueDesign(v, spec) for v in variants if spec.includes(v.label) and v.label not in spec.ceilings_only]
            + [QueueDesign(v, spec, ceiling_only=True) for v in variants if v.label in spec.ceilings_only])


def capacity_table_of(frame: Any) -> Any:
    """The capacity table of the runs in ``frame``, read back from their records (empty: none)."""
    from pglimits_core.experiments.capacity_table import capacity_table, records_at

    if frame.empty or "experiment" not in frame or not (frame.experiment == "capacity").any():
        return frame.iloc[0:0]
    runs = frame[frame.experiment == "capacity"]
    records = records_at(runs.path)
    table = capacity_table(records, point_reading, items_per_s, ran_dry)
    classes = runs.drop_duplicates("variant").set_index("variant").durability_class
    return table.assign(durability_class=table.variant.map(classes),
                        survives_process_kill=table.variant.map(kill_survival(records)))


def ran_dry(summary: Any) -> bool:
    """A burn-down whose consumers polled an empty queue inside the window (the harness's, or
    qload's) ran out of backlog: its rate is the prefill's, a floor (a pgbench run that drains its
    table fails)."""
    return any(e.idle_polls > 0 for e in summary.entries if e.phase == "measure" and e.role in ("consumer", "tool"))


def kill_survival(records: list[dict[str, Any]]) -> dict[str, bool | None]:
    """Per design: whether an acknowledged job survives a process kill (read back by its adapter:
    Redis's AOF does, Postgres's commit with ``synchronous_commit=off`` does not)."""
    found: dict[str, bool | None] = {}
    for record in records:
        adapter = (record["manifest"]["params"].get("outcome") or {}).get("adapter") or {}
        if "survives_process_kill" in adapter:
            found[record["manifest"]["params"]["variant"]] = adapter["survives_process_kill"]
    return found
