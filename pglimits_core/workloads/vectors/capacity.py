"""The vector workload's designs for the core capacity experiment (``experiments.capacity``).

Capacity means nothing without the recall it was bought at, so a design is an (engine, ef) pair:
the engine at the ef it needs to reach a recall target (the profile's ``capacity.designs``),
labelled "pgvector hnsw ef=64". Per design the ceiling is closed loop at that ef through the
engine's own C load tool where it has one (``ceiling.py``: pgbench on the stored query vectors,
vegeta on Qdrant's REST search), else the harness's sweep point; capacity at a target is the
harness's open-loop query point at an absolute offered rate (``points.open_loop_point``), p99
from the *intended* start. The design's first rate point also scores recall at its ef, untimed,
exactly as the sweep does (``points.recall_score``), so the table carries the recall measured at
the ef it reports. Every point finds the sweep's index (``points.ensure_index``: built first,
unrecorded, where a resumed study lacks it), on the ``Setup`` the plan gives every point.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from pglimits_core.errors import PGLimitsError
from pglimits_core.experiments.capacity import EXPERIMENT, Design, open_loop_reading
from pglimits_core.load.ratesearch import PointResult
from pglimits_core.workloads.vectors.ceiling import CEILING_TOOLS, ceiling_point
from pglimits_core.workloads.vectors.points import (
    VARIANTS,
    Setup,
    VectorsVariant,
    open_loop_point,
    recall_score,
    sweep_point,
)
from pglimits_core.workloads.vectors.profile import VectorsCapacity

if TYPE_CHECKING:
    from pglimits_core.studies.runner import RecordedRun
    from pglimits_core.studies.study import StudyRun


@dataclass
class VectorsDesign:
    """One engine at one ef as a capacity ``Design``; ``recall_target`` is what that ef is for."""

    engine: VectorsVariant
    ef: int
    recall_target: float
    setup: Setup
    spec: VectorsCapacity
    #: recall is a property of (index, ef): scored once, at the design's first rate point
    scored: bool = field(default=False, compare=False)

    @property
    def label(self) -> str:
        return f"{self.engine.label} ef={self.ef}"

    @property
    def system(self) -> str:
        return self.engine.system

    @property
    def server(self) -> str:
        return self.engine.server

    @property
    def variant(self) -> VectorsVariant:
        """The engine under the design's label: its records say "pgvector hnsw ef=64"."""
        return replace(self.engine, label=self.label)

    def uses_tool(self) -> bool:
        return self.system in CEILING_TOOLS

    def _params(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**params, "engine": self.engine.label, "target_recall": self.recall_target}

    def ceiling_run(self, run: StudyRun, clients: int, warmup_s: float, duration_s: float,
                    params: dict[str, Any]) -> RecordedRun:
        if self.uses_tool():  # whole seconds: pgbench's -T
            return ceiling_point(run, self.variant, self.setup, self.ef, clients, params["repetition"],
                                 max(1, round(duration_s)), round(warmup_s), recorded_as=EXPERIMENT,
                                 extra_params=self._params(params))
        return sweep_point(run, self.variant, self.setup, self.ef, clients, params["repetition"], with_recall=False,
                           duration_s=duration_s, warmup_s=warmup_s, recorded_as=EXPERIMENT,
                           extra_params=self._params(params))

    def check_run(self, run: StudyRun, clients: int, warmup_s: float, duration_s: float,
                  params: dict[str, Any]) -> RecordedRun | None:
        """The harness's closed loop at the tool's ef and clients."""
        if not self.uses_tool():
            return None
        return sweep_point(run, self.variant, self.setup, self.ef, clients, params["repetition"], with_recall=False,
                           duration_s=duration_s, warmup_s=warmup_s, recorded_as=EXPERIMENT,
                           extra_params=self._params(params))

    def rate_run(self, run: StudyRun, rate: float, warmup_s: float, duration_s: float,
                 params: dict[str, Any]) -> RecordedRun:
        with_recall, self.scored = not self.scored, True
        score = recall_score(self.setup, self.spec.recall_queries) if with_recall else None
        return open_loop_point(run, self.variant, self.setup, self.ef, rate, self.spec.workers, duration_s, warmup_s,
                               recorded_as=EXPERIMENT, extra_params={**self._params(params), "with_recall": with_recall},
                               score=score)

    def reading(self, summary: Any, offered: float, outcome: dict[str, Any]) -> PointResult:
        return reading(summary, offered, outcome)


def reading(summary: Any, offered: float, outcome: dict[str, Any] | None = None) -> PointResult:
    """The open-loop clients' achieved rate and p99 from the intended start (no backlog)."""
    return open_loop_reading(summary, offered)


def items_per_s(summary: Any) -> float:
    """Queries/s of a ceiling run: the tool's measured window, or the harness's closed loop."""
    rates = [e.ops_per_s for e in summary.entries if e.phase == "measure" and e.role in ("client", "tool")]
    return max(rates, default=0.0)


def vectors_designs(spec: VectorsCapacity | None, setup: Setup, variants: list[VectorsVariant]) -> list[Design]:
    """One design per (engine, ef) of ``spec.designs`` that its ``variants`` filter keeps; an ef
    named for two recall targets is one design, for the higher target (it reaches both)."""
    if spec is None:
        return []
    designs: dict[str, VectorsDesign] = {}
    for chosen in spec.designs:  # in the profile's order
        design = VectorsDesign(_engine(chosen.variant, variants), chosen.ef, chosen.recall, setup, spec)
        if design.label not in designs or design.recall_target > designs[design.label].recall_target:
            designs[design.label] = design
    unknown = [label for label in spec.variants if label not in designs]
    if unknown:
        raise PGLimitsError(f"vectors.capacity.variants names {unknown[0]!r}, which is not one of its designs",
                            f"use some of: {', '.join(designs)}")
    return [d for d in designs.values() if spec.includes(d.label)]


def _engine(label: str, variants: list[VectorsVariant]) -> VectorsVariant:
    """A design's engine: an approximate variant of the profile (its index is the sweep's)."""
    if label not in VARIANTS or VARIANTS[label].exact or VARIANTS[label] not in variants:
        raise PGLimitsError(f"vectors.capacity.designs names {label!r}, not an HNSW/DiskANN variant of this profile",
                            f"use some of: {', '.join(v.label for v in variants if not v.exact)}")
    return VARIANTS[label]


def capacity_table_of(frame: Any) -> Any:
    """The capacity table of the runs in ``frame``, read back from their records (empty: none),
    each design with its engine, ef, recall target and the recall measured at that ef."""
    from pglimits_core.experiments.capacity_table import capacity_table, records_at

    if frame.empty or "experiment" not in frame or not (frame.experiment == "capacity").any():
        return frame.iloc[0:0]
    records = records_at(frame[frame.experiment == "capacity"].path)
    table = capacity_table(records, reading, items_per_s)
    recall = recall_of(records)
    columns = ["engine", "ef", "recall_target", "recall_mean", "recall_worst5_mean"]
    known = table.variant.map(lambda label: recall.get(label, {}))
    for position, column in enumerate(columns, start=1):
        table.insert(position, column, [found.get(column) for found in known])
    return table


def recall_of(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per design label: its engine, ef and recall target, and the recall its scored record measured."""
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        params = record["manifest"]["params"]
        design = found.setdefault(params["variant"], {"engine": params.get("engine"), "ef": params.get("ef"),
                                                      "recall_target": params.get("target_recall")})
        outcome = params.get("outcome") or {}
        if outcome.get("recall_mean") is not None:
            design |= {"recall_mean": outcome["recall_mean"], "recall_worst5_mean": outcome.get("recall_worst5_mean")}
    return found


def capacity_decisions(tables: dict[str, Any]) -> list[Any]:
    """The capacity cells (``experiments.capacity_cells``): one scale per recall target, each side
    at its best design whose measured recall reached it (``reached``)."""
    from pglimits_core.experiments.capacity_cells import capacity_cells

    return capacity_cells("vectors", reached(tables.get("capacity")), "queries/s", ["recall_target"],
                          lambda key: f"recall ≥ {float(key[0]):.2f}", "query")


def reached(table: Any) -> Any:
    """Per recall target the designs measured: every design whose measured recall reached it, the
    one it was chosen for or not (an engine whose smaller ef already reaches a higher target
    stands there too: each side at its best design reaching the recall); an ef that fell short of
    every target answers a different question (it is in the table, not in a cell)."""
    if table is None or table.empty or "recall_mean" not in table:
        return table
    recall = pd.to_numeric(table.recall_mean, errors="coerce")
    targets = sorted(pd.to_numeric(table.recall_target, errors="coerce").dropna().unique())
    scales = [table[recall >= target].assign(recall_target=target) for target in targets]
    return pd.concat(scales, ignore_index=True) if scales else table.iloc[0:0]
