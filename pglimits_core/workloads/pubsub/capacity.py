"""Pub/sub's designs for the core capacity experiment (``experiments.capacity``).

A design is a variant at one fan-out ("pg_notify batch=1 subscribers=10"): capacity is in messages
published per second, each delivered to every subscriber (deliveries/s = messages/s ×
subscribers). Both loads are the fan-out study's own point (``points.fanout_point``) on a fresh
channel, the harness's publishers and subscribers on the load's CPU set:

- the ceiling: closed-loop publishers flat out; its rate is the lower of published/s and the
  subscribers' mean received/s in the window (the summary merges the subscribers): a
  publisher running ahead of its subscribers fills a server buffer, not a capacity;
- a rate point: open-loop publishers at the offered rate; its p99 is the delivery latency from
  each message's *intended* publish to its receipt (the ledger's histogram over the messages
  meant for the window, those read after it included: ``params.outcome.delivery``), and it holds
  only if the subscribers received every message (``lost`` and ``not_received_by_cutoff`` both 0).

The delivery latency and accounting live in the record's ``params.outcome``, not its summary: the
core hands a reading both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from pglimits_core.experiments.capacity import Design, VariantDesign
from pglimits_core.load.ratesearch import PointResult
from pglimits_core.workloads.pubsub.points import PubsubVariant, fanout_point, point_result
from pglimits_core.workloads.pubsub.profile import PubsubCapacity
from pglimits_core.workloads.pubsub.psload_points import psload_point

if TYPE_CHECKING:
    from pglimits_core.studies.runner import RecordedRun
    from pglimits_core.studies.study import StudyRun

EXPERIMENT = "capacity"
#: a point with any message undelivered reads as if its whole rate backed up: far past the
#: experiment's backlog bound (``MAX_BACKLOG_GROWTH``), so it never holds, however small the loss
UNDELIVERED = 1.0


def undelivered(outcome: dict[str, Any]) -> int:
    """Expected deliveries that never arrived: lost, or still missing when the subscriber was cut off."""
    return int(outcome.get("lost") or 0) + int(outcome.get("not_received_by_cutoff") or 0)


def reading(summary: Any, offered: float, outcome: dict[str, Any] | None) -> PointResult:
    """A rate point from its outcome: achieved = messages meant for the window delivered per
    subscriber per second, at most what the publishers started in it, p50/p99 delivery from the intended publish; a point with undelivered
    messages does not hold (its backlog growth is ``UNDELIVERED``)."""
    if not outcome or not outcome.get("delivery"):
        return PointResult(offered=offered, achieved=0.0, p50_us=None, p99_us=None, extra={"failed": "no outcome"})
    missing = undelivered(outcome)
    point = point_result(outcome, offered)
    # deliveries are counted by intended time, so without loss they always equal the offered
    # rate: the publishers' own started-in-window rate is what shows a publisher falling behind
    started = publisher_rate(summary)
    achieved = point.achieved if started is None else min(point.achieved, started)
    return replace(point, achieved=achieved, backlog_growth=UNDELIVERED if missing else 0.0,
                   extra={"undelivered": missing, "subscribers": outcome.get("subscribers")})


def publisher_rate(summary: Any) -> float | None:
    """The open-loop publishers' achieved rate in the measured window (None: not recorded)."""
    entries = [e for e in summary.entries if e.phase == "measure" and e.role == "publisher"] if summary else []
    rates = [e.achieved_rate for e in entries if getattr(e, "achieved_rate", None) is not None]
    return sum(rates) if rates else None


def items_per_s(summary: Any) -> float:
    """Messages/s of a ceiling run: the publishers' messages/s, capped by the subscribers' mean
    received/s (both over the measured window; the summary merges the subscribers)."""
    entries = {e.role: e for e in summary.entries if e.phase == "measure"} if summary else {}
    publisher, subscriber = entries.get("publisher"), entries.get("subscriber")
    if publisher is None or subscriber is None:
        return 0.0
    return min(publisher.items_per_s, subscriber.items_per_s / subscriber.workers)


@dataclass
class PubsubDesign(VariantDesign):
    """One variant at one fan-out as a capacity ``Design``."""

    variant: PubsubVariant
    subscribers: int
    spec: PubsubCapacity

    @property
    def label(self) -> str:
        return f"{self.variant.label} subscribers={self.subscribers}"

    @property
    def compiled(self) -> bool:
        return self.spec.load == "psload"

    def ceiling_run(self, run: StudyRun, clients: int, warmup_s: float, duration_s: float,
                    params: dict[str, Any]) -> RecordedRun:
        if self.compiled:  # psload closed loop: its publishers flat out, every subscriber compiled
            return self._psload(run, clients, 0.0, warmup_s, duration_s, params)
        return self._fanout(run, clients, None, warmup_s, duration_s, params)

    def check_run(self, run: StudyRun, clients: int, warmup_s: float, duration_s: float,
                  params: dict[str, Any]) -> RecordedRun | None:
        """After a psload ceiling, the harness's on the same terms (its Python subscribers)."""
        return self._fanout(run, clients, None, warmup_s, duration_s, params) if self.compiled else None

    def rate_run(self, run: StudyRun, rate: float, warmup_s: float, duration_s: float,
                 params: dict[str, Any]) -> RecordedRun:
        if self.compiled:
            return self._psload(run, self.spec.publishers, rate, warmup_s, duration_s, params)
        return self._fanout(run, self.spec.publishers, rate, warmup_s, duration_s, params)

    def rate_check_run(self, run: StudyRun, rate: float, warmup_s: float, duration_s: float,
                       params: dict[str, Any]) -> RecordedRun | None:
        """The harness's fan-out point at a rate psload confirmed (None where the harness drove them)."""
        if not self.compiled:
            return None
        return self._fanout(run, self.spec.publishers, rate, warmup_s, duration_s, params)

    def _psload(self, run: StudyRun, publishers: int, rate: float, warmup_s: float, duration_s: float,
                params: dict[str, Any]) -> RecordedRun:
        """The same point with its load compiled (``psload_points``); rate 0: closed loop."""
        return psload_point(run, replace(self.variant, label=self.label), self.subscribers, publishers, rate,
                            duration_s, warmup_s, self.spec.payload_bytes, EXPERIMENT, params)

    def _fanout(self, run: StudyRun, publishers: int, rate: float | None, warmup_s: float, duration_s: float,
                params: dict[str, Any]) -> RecordedRun:
        """The fan-out point under the design's label (the record's ``variant``), experiment ``capacity``."""
        labelled = replace(self.variant, label=self.label)
        return fanout_point(run, labelled, self.subscribers, publishers, rate, duration_s, warmup_s,
                            payload_bytes=self.spec.payload_bytes, experiment=EXPERIMENT, extra_params=params)

    def reading(self, summary: Any, offered: float, outcome: dict[str, Any]) -> PointResult:
        return reading(summary, offered, outcome)

    def items_per_s(self, summary: Any) -> float:
        """A ceiling window's messages/s, as the capacity table reads it (the search may start from it)."""
        return items_per_s(summary)


def pubsub_designs(spec: PubsubCapacity | None, variants: list[PubsubVariant]) -> list[Design]:
    """A design per chosen variant and fan-out, fan-out by fan-out."""
    if spec is None:
        return []
    return [PubsubDesign(v, n, spec) for n in spec.subscribers for v in variants if spec.includes(v.label)]


def capacity_table_of(frame: Any) -> Any:
    """The capacity table of the runs in ``frame``, read back from their records (empty: none),
    with each design's fan-out and its rates as deliveries/s."""
    from pglimits_core.experiments.capacity_table import capacity_table, records_at

    if frame.empty or "experiment" not in frame or not (frame.experiment == EXPERIMENT).any():
        return frame.iloc[0:0]
    records = records_at(frame[frame.experiment == EXPERIMENT].path)
    table = capacity_table(records, reading, items_per_s)
    table = with_deliveries(table, {r["manifest"]["params"]["variant"]: r["manifest"]["params"]["subscribers"]
                                    for r in records})
    return table.assign(ceiling_delivery_p99_ms=table.variant.map(ceiling_delivery_p99_ms(records)))


def ceiling_delivery_p99_ms(records: list[dict[str, Any]]) -> dict[str, float]:
    """Per design, the median delivery p99 of its ceiling windows (publishers flat out: what the
    source's flat-out figure measured), where every window recorded one."""
    from statistics import median

    found: dict[str, list[float | None]] = {}
    for record in records:
        params = record["manifest"]["params"]
        if params.get("stage") == "ceiling" and record["manifest"]["status"] == "complete":
            delivery = (params.get("outcome") or {}).get("delivery") or {}
            found.setdefault(params["variant"], []).append(delivery.get("p99_ms"))
    return {variant: median(p99s) for variant, p99s in found.items() if p99s and None not in p99s}


def with_deliveries(table: Any, subscribers: dict[str, int]) -> Any:
    """The fan-out beside each rate, and the rate × fan-out: deliveries/s."""
    fanout = table.variant.map(subscribers)
    table = table.assign(subscribers=fanout)
    for rate in ("ceiling", "capacity"):
        if f"{rate}_per_s" in table:  # None where a design has no figure: NaN deliveries, not an error
            table[f"{rate}_deliveries_per_s"] = pd.to_numeric(table[f"{rate}_per_s"], errors="coerce") * fanout
    return table


def capacity_decisions(tables: dict[str, Any]) -> list[Any]:
    """The capacity cells (``experiments.capacity_cells``): one scale per fan-out, in messages
    published per second (the table carries deliveries/s beside them)."""
    from pglimits_core.experiments.capacity_cells import capacity_cells

    return capacity_cells("pubsub", tables.get("capacity"), "messages/s", ["subscribers"],
                          lambda key: f"{int(key[0])} subscriber{'' if int(key[0]) == 1 else 's'}", "delivery")
