"""Queue study recipes: consumer sweep (throughput), latency at matched rates, crash recovery.

Each point resets the queue, prefills it where the experiment needs a backlog, settles it
(Postgres: VACUUM ANALYZE, so every point starts from the same state), runs one load spec
through ``runner.run_recorded`` (so it lands as a run record), then proves exactly-once
accounting: produced = acknowledged + left pending afterwards (read back, or drained where a
system cannot read it back; the outcome's ``drained_after``); lost and duplicated ids are counted.

The start state of every sweep point, the same for every system: the queue emptied by its
reset (Postgres TRUNCATE; pgmq drop + create; Redis DEL of the queue's keys; SQLite DELETE, its
truncate optimisation), the prefill loaded through the system's bulk path (``bulk_load``:
COPY, pipelined LPUSH, SQLite transactions of 500), then ``settle()`` (Postgres VACUUM ANALYZE).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pglimits_core.config import data_dir
from pglimits_core.datasets.messages import MessageGenerator, decode, stamp_batch
from pglimits_core.load import (
    ClosedLoop,
    OpenLoop,
    Phase,
    PointResult,
    Role,
    RunSpec,
)
from pglimits_core.studies.runner import Context, RecordedRun, run_recorded
from pglimits_core.studies.variant import Variant
from pglimits_core.workloads.queue.latency_names import RECORDED_KIND
from pglimits_core.workloads.queue.ops import ConsumeOp, EnqueueOp, SteadyEnqueueOp
from pglimits_core.workloads.queue.prefill_size import PrefillSizer, consumed_per_s
from pglimits_core.workloads.queue.systems.registry import (
    make_adapter,
    server_for,
    validate_options,
)

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

STUDY = "queue"
PREFILL_BATCH = 500  # messages generated per call
PREFILL_CHUNK = 50_000  # messages per bulk_load call (bounds the memory a big prefill holds)
IDLE_SLEEP_S = 0.001  # consumer back-off on an empty queue; the seed's Go loop slept 5 ms
DRAIN_LIMIT_S = 60.0
PROBE_S = 1.0  # the unrecorded probe that sizes a variant's first prefill
DRAIN_BATCH = 5000  # messages per take() in the untimed drain after a point


@dataclass(frozen=True)
class QueueVariant(Variant):
    """One queue system with its options, e.g. label "pg_delete b10" = pg_delete with batch 10."""

    @property
    def server(self) -> str:
        return server_for(self.system)

    @property
    def batch(self) -> int:
        return int(self.options.get("batch", 1))


def variant(system: str, label: str | None = None, **options: Any) -> QueueVariant:
    """A validated variant (unknown system/option or batch < 1: one-line PGLimitsError)."""
    resolved = validate_options(system, options)
    return QueueVariant(label or _default_label(system, resolved), system, resolved)


def _default_label(system: str, options: dict[str, Any]) -> str:
    extras = " ".join(f"{k}={v}" for k, v in sorted({"batch": 1, **options}.items()))
    return f"{system} {extras}"


# --- queue state ----------------------------------------------------------------------------
def fresh_queue(ctx: Context, v: QueueVariant):
    adapter = make_adapter(v.system, ctx.endpoints[v.server].url, **v.options, worker_id="study")
    adapter.open()
    adapter.fresh()
    return adapter


def prefill(adapter, count: int, seed: int) -> list[str]:
    """Enqueue ``count`` messages through the system's bulk path (``bulk_load``: COPY, a
    pipelined LPUSH...), ``PREFILL_CHUNK`` at a time, each batch of ``PREFILL_BATCH`` stamped
    with its send time; returns their ids. Every prefill of a seed is a prefix of one sequence
    (``MessageGenerator(seed, "prefill")``), generated once per study process."""
    templates, ids = prefill_templates(seed, count)
    for start in range(0, count, PREFILL_CHUNK):
        end = min(count, start + PREFILL_CHUNK)
        adapter.bulk_load([p for b in range(start, end, PREFILL_BATCH)
                           for p in stamp_batch(templates[b:min(end, b + PREFILL_BATCH)])])
    return ids


_TEMPLATES: dict[int, tuple[MessageGenerator, list[bytes], list[str]]] = {}


def prefill_templates(seed: int, count: int) -> tuple[list[bytes], list[str]]:
    """The first ``count`` prefill templates of ``seed`` and their ids (kept: generating them
    cost more than loading them)."""
    generator, templates, ids = _TEMPLATES.setdefault(seed, (MessageGenerator(seed, producer="prefill"), [], []))
    while len(templates) < count:
        batch = generator.templates(min(PREFILL_BATCH, count - len(templates)))
        templates += batch
        ids += [decode(t)[0] for t in batch]
    return templates[:count], ids[:count]


def drain(adapter, limit_s: float = DRAIN_LIMIT_S) -> tuple[list[str], bool]:
    """Claim+ack everything left (untimed); returns the ids and whether the queue emptied."""
    ids, deadline = [], time.monotonic() + limit_s
    while time.monotonic() < deadline:
        messages = adapter.take(DRAIN_BATCH)
        if not messages:
            return ids, adapter.depth() == 0
        ids += [decode(m.payload)[0] for m in messages]
    return ids, False


def account(produced: list[str], consumed: list[str], drained: list[str], emptied: bool) -> dict[str, Any]:
    """Exactly-once accounting over message ids."""
    delivered = consumed + drained
    unique = set(delivered)
    return {"produced": len(produced), "acknowledged_in_run": len(consumed), "drained_after": len(drained),
            "duplicates": len(delivered) - len(unique), "lost": len(set(produced) - unique),
            "unexpected": len(unique - set(produced)), "drain_complete": emptied}


def read_worker_stats(ledger: Path) -> dict[str, float]:
    """The adapters' own counters summed over every load worker (numbers only)."""
    totals: dict[str, float] = {}
    for path in sorted(ledger.glob("*.stats.json")):
        for key, value in json.loads(path.read_text()).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                totals[key] = totals.get(key, 0) + value
    return totals


def read_ledger(ledger: Path, op_name: str) -> list[str]:
    """Every id the workers of ``op_name`` recorded (``queue_ops``: one line per batch)."""
    return [i for _, ids in read_ledger_batches(ledger, op_name) for i in ids]


def read_ledger_batches(ledger: Path, op_name: str) -> list[tuple[int, list[str]]]:
    """``(wall-clock ns, ids)`` per recorded batch of every worker of ``op_name``."""
    return [batch for path in sorted(ledger.glob(f"{op_name}-*.ids")) for batch in read_ledger_batches_of(path)]


def read_ledger_batches_of(path: Path) -> list[tuple[int, list[str]]]:
    """One worker's ledger file; a line cut short by a kill is skipped (its batch is then "in
    doubt", as one the worker never wrote)."""
    batches = []
    for line in path.read_text().split("\n")[:-1]:  # the text after the last newline is cut
        stamp, *ids = line.split(" ")
        batches.append((int(stamp), ids))
    return batches


# --- experiments ----------------------------------------------------------------------------
def _phases(warmup_s: float, duration_s: float) -> list[Phase]:
    return [Phase("warmup", warmup_s, warmup=True), Phase("measure", duration_s)]


def left_after(adapter) -> tuple[list[str], bool, str]:
    """The ids still in the queue after a window, whether that is all of it (nothing left
    claimed), and how they were found: read back where the system can (``pending()``: no
    claim, no delete, the next point's reset empties the queue at once), else drained."""
    payloads = adapter.pending()
    if payloads is None:
        return (*drain(adapter), "drained")
    return [decode(p)[0] for p in payloads], adapter.depth() == len(payloads), "read back (pending, not taken)"


def exactly_once(adapter, ledger: Path, produced: list[str]) -> dict[str, Any]:
    """The sweeps' judgement: every id acknowledged in the run or still pending after it, none
    twice; and how the acknowledged messages spread over the consumers (fairness: a batched
    claim can starve the others)."""
    left, complete, how = left_after(adapter)
    return {**account(produced + read_ledger(ledger, "enqueue"), read_ledger(ledger, "consume"),
                      left, complete),
            "left_after_run_how": how, "consumer_acks": consumer_acks(ledger)}


def consumer_acks(ledger: Path) -> dict[str, int]:
    """Messages each consumer acknowledged over the run (warm-up and window), by worker tag."""
    return {path.name.removeprefix("consume-").removesuffix(".ids"): sum(len(ids) for _, ids in batches)
            for path in sorted(ledger.glob("consume-*.ids"))
            for batches in [read_ledger_batches_of(path)]}


def _run_point(ctx: Context, v: QueueVariant, experiment: str, roles_for, phases, params: dict,
               prefill_count: int | Callable[[], int], seed: int, judge=exactly_once) -> RecordedRun:
    """One recorded load run on a fresh, prefilled, settled queue; ``judge(adapter, ledger,
    produced) -> dict`` accounts for it afterwards (into the manifest's ``params.outcome``).
    A callable ``prefill_count`` is a size decided only if the point is measured (not reused
    on resume): the params then say "sized", the outcome's ``prefilled`` the count."""
    ledger = Path(tempfile.mkdtemp(prefix="ledger-", dir=_scratch()))
    spec = RunSpec(phases=phases, roles=roles_for(str(ledger)), seed=seed, start_method="fork")
    params = {"experiment": experiment, "variant": v.label, "options": v.options,
              "prefill": "sized" if callable(prefill_count) else prefill_count, **params}
    name = f"{experiment}:{v.label}"
    reused = ctx.reuse(STUDY, v.system, name, {**params, "spec": spec.describe()})
    if reused:  # measured before an interruption: checked first, so no queue is set up for it
        shutil.rmtree(ledger, ignore_errors=True)
        return reused
    count = prefill_count() if callable(prefill_count) else prefill_count  # (a probe resets the queue)
    adapter = fresh_queue(ctx, v)
    try:
        produced = prefill(adapter, count, seed)
        start_state = adapter.settle()  # every point starts from the same state (see settle())

        def after(_result) -> dict[str, Any]:
            return {**judge(adapter, ledger, produced), "prefilled": len(produced), "adapter": adapter.describe(),
                    "worker_stats": read_worker_stats(ledger), "start_state": start_state}

        return run_recorded(ctx, STUDY, v.system, name, v.server, spec,
                            params, tables=adapter.describe().get("tables"), after=after)
    finally:
        adapter.close()
        shutil.rmtree(ledger, ignore_errors=True)


def _scratch() -> Path:
    path = data_dir() / "scratch"
    path.mkdir(parents=True, exist_ok=True)
    return path


def throughput_point(run: StudyRun, v: QueueVariant, consumers: int, prefill_count: int,
                     duration_s: float, warmup_s: float = 1.0, recorded_as: str = "throughput",
                     sizer: PrefillSizer | None = None, extra_params: dict | None = None) -> RecordedRun:
    """Closed-loop burn-down: ``consumers`` drain a prefilled backlog as fast as they can
    (``recorded_as``: the experiment it is recorded under; the harness benchmark runs the same
    burn-down beside its C tool). With a ``sizer`` the backlog is sized from the variant's
    earlier points, ``prefill_count`` its cap (``prefill_size.py``); without, it is
    ``prefill_count``."""
    ctx, seed = run.ctx, run.seed
    url = ctx.endpoints[v.server].url

    def roles(ledger: str) -> list[Role]:
        op = ConsumeOp(v.system, url, v.options, v.batch, ledger, seed)
        return [Role("consumer", op, workers=consumers, loop=ClosedLoop(idle_sleep_s=IDLE_SLEEP_S))]

    if sizer is None:
        return _run_point(ctx, v, recorded_as, roles, _phases(warmup_s, duration_s),
                          {"consumers": consumers, **(extra_params or {})}, prefill_count, seed)
    seconds = warmup_s + duration_s

    def sized() -> int:  # asked only when the point is measured (a resumed study reuses records)
        if not sizer.knows(recorded_as, v.label):
            sizer.learn(recorded_as, v.label, probe_rate(ctx, v, sizer.floor, seed))
        return sizer.size(recorded_as, v.label, prefill_count, seconds)

    params = {"consumers": consumers, "prefill_cap": prefill_count, "prefill_rule": sizer.rule(), **(extra_params or {})}
    recorded = _run_point(ctx, v, recorded_as, roles, _phases(warmup_s, duration_s), params, sized, seed)
    sizer.learn(recorded_as, v.label, consumed_per_s(recorded))
    return recorded


def probe_rate(ctx: Context, v: QueueVariant, count: int, seed: int, seconds: float = PROBE_S) -> float:
    """One consumer's claim + ack rate for ``seconds``, in this process, on a fresh queue of
    ``count`` messages: an unrecorded estimate that sizes a variant's first prefill only (a
    probe that empties the queue is a floor, and the sizing's safety factor covers the rest)."""
    adapter = fresh_queue(ctx, v)
    try:
        prefill(adapter, count, seed)
        taken, started = 0, time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            messages = adapter.claim(v.batch)
            if not messages:
                break
            adapter.ack([m.id for m in messages])
            taken += len(messages)
        return taken / max(elapsed, 1e-3)
    finally:
        adapter.close()


def steady_point(run: StudyRun, v: QueueVariant, consumers: int, producers: int, target_depth: int,
                 duration_s: float, warmup_s: float = 1.0, batch: int = 10) -> RecordedRun:
    """Producer/consumer steady state: producers hold the backlog near ``target_depth`` (enqueue
    batches of ``batch`` only while below it), ``consumers`` claim as fast as they can."""
    ctx, seed = run.ctx, run.seed
    url = ctx.endpoints[v.server].url

    def roles(ledger: str) -> list[Role]:
        producer = SteadyEnqueueOp(v.system, url, v.options, batch, ledger, seed, target_depth=target_depth)
        consumer = ConsumeOp(v.system, url, v.options, v.batch, ledger, seed)
        return [Role("producer", producer, workers=producers, loop=ClosedLoop(idle_sleep_s=IDLE_SLEEP_S)),
                Role("consumer", consumer, workers=consumers, loop=ClosedLoop(idle_sleep_s=IDLE_SLEEP_S))]

    params = {"consumers": consumers, "producers": producers, "target_depth": target_depth,
              "producer_batch": batch}
    return _run_point(ctx, v, "steady", roles, _phases(warmup_s, duration_s), params, target_depth, seed)


def latency_point(run: StudyRun, v: QueueVariant, rate: float, producers: int, consumers: int,
                  duration_s: float, warmup_s: float = 1.0,
                  experiment: str = "latency", extra_params: dict | None = None) -> RecordedRun:
    """Open-loop producers at ``rate`` msg/s (one message per enqueue) + closed-loop consumers."""
    ctx, seed = run.ctx, run.seed
    url = ctx.endpoints[v.server].url

    def roles(ledger: str) -> list[Role]:
        producer = EnqueueOp(v.system, url, v.options, 1, ledger, seed)
        consumer = ConsumeOp(v.system, url, v.options, v.batch, ledger, seed)
        return [Role("producer", producer, workers=producers, loop=OpenLoop(rate=rate, drain_s=2.0)),
                Role("consumer", consumer, workers=consumers, loop=ClosedLoop(idle_sleep_s=IDLE_SLEEP_S))]

    params = {"rate": rate, "producers": producers, "consumers": consumers, **(extra_params or {})}
    return _run_point(ctx, v, experiment, roles, _phases(warmup_s, duration_s), params, 0, seed)


def point_result(run: RecordedRun, rate: float, duration_s: float) -> PointResult:
    """What the rate search needs from a latency point (``reading``)."""
    return reading(run.summary, rate)


def reading(summary: Any, rate: float) -> PointResult:
    """A latency point's achieved rate, p50/p99 send → claim from the intended send, and the
    backlog growth as a fraction of the offered rate (produced/s − consumed/s, over rate)."""
    entries = {e.role: e for e in summary.entries if e.phase == "measure"} if summary else {}
    producer, consumer = entries.get("producer"), entries.get("consumer")
    send_to_claim = consumer.latencies.get(RECORDED_KIND) if consumer else None
    consumed = consumer.items_per_s if consumer else 0.0
    achieved = min(producer.achieved_rate or 0.0, consumed) if producer else 0.0
    backlog = max(0.0, (producer.items_per_s if producer else 0.0) - consumed) / rate
    return PointResult(offered=rate, achieved=achieved, p50_us=send_to_claim.p50_us if send_to_claim else None,
                       p99_us=send_to_claim.p99_us if send_to_claim else None, backlog_growth=backlog)
