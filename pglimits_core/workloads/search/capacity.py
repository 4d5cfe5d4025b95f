"""The search workload's designs for the core capacity experiment (``experiments.capacity``).

Per variant, every step on the profile's stream (``capacity.stream``; the source's ``mixed`` by
default): the ceiling is closed loop at each of ``ceiling_clients`` through the system's own load
tool where the workload already drives the very query with one (``ceiling_tools``: pgbench running
the adapter's statement for Postgres GIN, vegeta sending the adapter's request bodies for
Elasticsearch and OpenSearch), else the harness's closed-loop throughput point (pg_search);
capacity at a target is the harness's open-loop point at the offered rate (``points.rate_point``:
``workers`` processes, one connection each), query latency from the *intended* start — not
vegeta's open loop, which times each request from its send and so hides the queueing a target is
about. Every step runs as the workload's other points do (``points._measured``,
``ceiling.ceiling_point``): on a variant that passed its correctness check, on a loaded index,
after the server's warm-up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pglimits_core.experiments.capacity import EXPERIMENT, Design, VariantDesign, open_loop_reading
from pglimits_core.load.ratesearch import PointResult
from pglimits_core.workloads.search.ceiling import ceiling_point
from pglimits_core.workloads.search.ceiling_tools import CEILING_TOOLS
from pglimits_core.workloads.search.points import rate_point, throughput_point
from pglimits_core.workloads.search.prepared import Setup
from pglimits_core.workloads.search.profile import SearchCapacity
from pglimits_core.workloads.search.variant import SearchVariant

if TYPE_CHECKING:
    from pglimits_core.studies.runner import RecordedRun
    from pglimits_core.studies.study import StudyRun


@dataclass
class SearchDesign(VariantDesign):
    """One search variant on one query stream as a capacity ``Design``: the profile's ``stream``
    with its latency targets, or one of its ``ceiling_streams`` (a match-set class) measured by its
    ceiling alone."""

    variant: SearchVariant
    spec: SearchCapacity
    setup: Setup
    stream: str = ""  # "": the profile's ``stream``
    ceiling_only: bool = False

    @property
    def on(self) -> str:
        return self.stream or self.spec.stream

    @property
    def targets_ms(self) -> tuple[float, ...] | None:
        return () if self.ceiling_only else None  # None: the plan's

    @property
    def params(self) -> dict[str, Any]:
        return {"stream": self.on}

    def uses_tool(self) -> bool:
        return self.system in CEILING_TOOLS

    def ceiling_run(self, run: StudyRun, clients: int, warmup_s: float, duration_s: float,
                    params: dict[str, Any]) -> RecordedRun:
        v, stream = self.variant, self.on
        if self.uses_tool():  # pgbench's -T takes whole seconds: never shorter than asked
            return ceiling_point(run, v, self.setup, stream, clients, math.ceil(duration_s), math.ceil(warmup_s),
                                 experiment=EXPERIMENT, extra_params=params)
        return throughput_point(run, v, self.setup, stream, clients, duration_s, warmup_s,
                                experiment=EXPERIMENT, extra_params=params)

    def check_run(self, run: StudyRun, clients: int, warmup_s: float, duration_s: float,
                  params: dict[str, Any]) -> RecordedRun | None:
        """The harness's closed loop on the tool's stream at as many clients (on the targets'
        stream only: the two loads agree or not on a server, not on a query mix)."""
        if not self.uses_tool() or self.ceiling_only:
            return None
        return throughput_point(run, self.variant, self.setup, self.on, clients, duration_s, warmup_s,
                                experiment=EXPERIMENT, extra_params=params)

    def rate_run(self, run: StudyRun, rate: float, warmup_s: float, duration_s: float,
                 params: dict[str, Any]) -> RecordedRun:
        return rate_point(run, self.variant, self.setup, self.on, rate, self.spec.workers, duration_s,
                          warmup_s, experiment=EXPERIMENT, extra_params=params)

    def reading(self, summary: Any, offered: float, outcome: dict[str, Any]) -> PointResult:
        return reading(summary, offered, outcome)


def reading(summary: Any, offered: float, outcome: dict[str, Any] | None = None) -> PointResult:
    """The open-loop clients' achieved rate and p99 from the intended start (no backlog)."""
    return open_loop_reading(summary, offered)


def items_per_s(summary: Any) -> float:
    """Queries/s of a ceiling run: the load tool's measured window, or the harness clients'."""
    rates = [e.items_per_s for e in summary.entries if e.phase == "measure" and e.role in ("client", "tool")]
    return max(rates, default=0.0)


def search_designs(spec: SearchCapacity | None, setup: Setup, variants: list[SearchVariant]) -> list[Design]:
    """Per variant: its design on the targets' stream, then one per ceiling stream (variants in
    the profile's order within each stream, so drift on the box spreads over every system)."""
    if spec is None:
        return []
    chosen = [v for v in variants if spec.includes(v.label)]
    return [SearchDesign(v, spec, setup) for v in chosen] + [
        SearchDesign(v, spec, setup, stream=stream, ceiling_only=True) for stream in spec.ceiling_streams for v in chosen]


def capacity_table_of(frame: Any) -> Any:
    """The capacity table of the runs in ``frame``, read back from their records (empty: none):
    one design per variant and stream."""
    from pglimits_core.experiments.capacity_table import capacity_table, records_at

    if frame.empty or "experiment" not in frame or not (frame.experiment == EXPERIMENT).any():
        return frame.iloc[0:0]
    records = records_at(frame[frame.experiment == EXPERIMENT].path)
    return capacity_table(records, reading, items_per_s, split_by="stream")


def capacity_decisions(tables: dict[str, Any]) -> list[Any]:
    """The capacity cells (``experiments.capacity_cells``): one scale per query stream."""
    from pglimits_core.experiments.capacity_cells import capacity_cells
    from pglimits_core.workloads.search.quality import with_quality

    return with_quality(capacity_cells("search", tables.get("capacity"), "queries/s", ["stream"],
                                       lambda key: f"{key[0]} stream", "query"), tables.get("ranking"))
