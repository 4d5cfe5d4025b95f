"""The queue's statements driven by each system's own C tool: one run record per call, on a
prefilled, settled queue (the throughput points' prefill and settle) — pgbench for the Postgres
designs (SKIP LOCKED two-phase and delete-mode at any batch, pgmq's read + delete or archive; a
``synchronous_commit`` option is the tool's session setting through ``PGOPTIONS``, as the adapter
sets it per session), qload's burn-down or redis-benchmark for the Redis reliable queue — the same
samplers, the tool's name, version and exact command lines in the manifest. The capacity
experiment's ceilings (``CAPACITY_TOOLS``) and the harness benchmark (``CEILING_TOOLS``) run here.

A system has a tool when it has an entry in those maps; a variant named in a section's
``variants`` without one is a plan error, and a tool missing from the machine fails its point
with a one-line reason (the study reports it), never a silent skip.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools import PgbenchLoad, RedisBenchmarkLoad
from pglimits_core.load.tools.process import ToolCommand
from pglimits_core.load.tools.qload import QloadBurnDown
from pglimits_core.studies.runner import RecordedRun, run_tool_recorded
from pglimits_core.workloads.queue import ceiling_tools as scripts
from pglimits_core.workloads.queue.points import STUDY, QueueVariant, fresh_queue, prefill
from pglimits_core.workloads.queue.prefill_size import PrefillSizer, consumed_per_s

if TYPE_CHECKING:
    from pglimits_core.studies.study import StudyRun

#: the variant options a Postgres adapter sets on its session, which the tool's session must share
SESSION_OPTIONS = ("synchronous_commit",)


class SessionPgbenchLoad(PgbenchLoad):
    """pgbench whose sessions start with the variant's session settings (``PGOPTIONS``: libpq
    sends them at connect, so no statement is added to the script); recorded in the manifest."""

    def __init__(self, *args: Any, settings: dict[str, str], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.settings = settings

    def commands(self) -> list[ToolCommand]:
        options = " ".join(f"-c {name}={value}" for name, value in sorted(self.settings.items()))
        return [replace(c, env={**c.env, "PGOPTIONS": options}) if options else c for c in super().commands()]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "tool_session_settings": dict(self.settings)}


class PgbenchCeiling:
    """pgbench runs ``script(variant)`` on a queue prefilled with ``prefill`` jobs; the run
    holds only if every logged transaction claimed a full batch (the queue never ran dry)."""

    tool = "pgbench"
    fills_queue = True

    def __init__(self, script: Callable[[QueueVariant], str], op: str):
        self.script, self.op = script, op

    def load(self, url: str, v: QueueVariant, clients: int, knobs: dict[str, Any]) -> PgbenchLoad:
        settings = {name: str(v.options[name]) for name in SESSION_OPTIONS if name in v.options}
        return SessionPgbenchLoad(url, self.script(v), clients, knobs["duration_s"], knobs["warmup_s"],
                                  items_per_transaction=v.batch, op=self.op, script_name=f"{v.system}.sql",
                                  settings=settings)

    def judge(self, adapter, result, prefilled: int, clients: int, batch: int) -> dict[str, Any]:
        """Rows the run removed against what the logged transactions claim they took: fewer
        means claims came back short (the table ran dry) and jobs/s = transactions × batch
        overstates; a few more are the transactions cut off by ``-T`` (not logged)."""
        logged = result.params.get("tool_reported", {}).get("logged_transactions", 0)
        left = adapter.depth()
        removed, expected = prefilled - left, logged * batch
        fact = {"prefilled": prefilled, "left_after_run": left, "removed": removed,
                "logged_jobs": expected}
        if left == 0 or not expected <= removed <= expected + clients * batch:
            return {**fact, "error": f"queue ran dry or lost count: {removed} jobs removed, "
                                     f"{expected} claimed by logged transactions — raise ceiling.prefill"}
        return fact


class RedisBenchmarkCeiling:
    """redis-benchmark runs the reliable queue's LPUSH, LMOVE and LREM, ``requests`` each, with
    the variant's pipeline depth; per-job rates are derived from them in the table."""

    tool = "redis-benchmark"
    fills_queue = False  # the LPUSH step fills what the LMOVE step takes

    def load(self, url: str, v: QueueVariant, clients: int, knobs: dict[str, Any]) -> RedisBenchmarkLoad:
        steps = scripts.reliable_queue_steps(v.options.get("key", scripts.DEFAULT_KEY))
        return RedisBenchmarkLoad(url, steps, clients, knobs["requests"], int(v.options.get("pipeline", 1)))

    def judge(self, adapter, result, prefilled: int, clients: int, batch: int) -> dict[str, Any]:
        """Every LMOVE found a job and every LREM its value: nothing is left behind."""
        left = adapter.depth()
        if left and result.status == "complete":
            return {"left_after_run": left, "error": f"{left} jobs left after LPUSH/LMOVE/LREM of equal counts"}
        return {"left_after_run": left}


class QloadCeiling:
    """qload's burn-down (``-rate 0``): the design's own claim and ack, ``clients`` consumers flat
    out on a prefilled, settled queue, one window — the ceiling of the Redis designs, whose
    commands redis-benchmark runs only as separate phases (no per-job window), from a compiled
    load on the load's core rather than the Python harness's; and of the SQLite designs, whose
    engine then runs inside qload (a compiled program, as the SQLite source study's). The run
    holds if the jobs removed match the jobs qload claimed; one whose backlog ran out inside the
    window is a floor."""

    tool = "qload"
    fills_queue = True

    def load(self, url: str, v: QueueVariant, clients: int, knobs: dict[str, Any]) -> QloadBurnDown:
        from pglimits_core.workloads.queue.systems.qload_verbs import qload_target, qload_verbs

        return QloadBurnDown(qload_verbs(v), qload_target(url, v), clients, v.batch, knobs["duration_s"],
                             knobs["warmup_s"])

    def judge(self, adapter, result, prefilled: int, clients: int, batch: int) -> dict[str, Any]:
        claimed = int(result.params.get("tool_reported", {}).get("claimed_total", 0))
        left = adapter.depth()
        fact = {"prefilled": prefilled, "left_after_run": left, "removed": prefilled - left, "claimed_jobs": claimed}
        if prefilled - left != claimed:
            return {**fact, "error": f"lost count: {prefilled - left} jobs removed, {claimed} claimed and "
                                     "acknowledged by qload"}
        return fact  # a backlog that ran out is the record's idle polls: a floor (capacity.ran_dry)


def _pgmq_script(v: QueueVariant) -> str:
    """The pgmq adapter's own calls for this variant (its queue, visibility timeout and ack)."""
    options = {key: v.options[key] for key in ("queue", "vt_s", "mode") if key in v.options}
    return scripts.pgmq_script(v.batch, **options)


CEILING_TOOLS: dict[str, Any] = {
    "pg_delete": PgbenchCeiling(lambda v: scripts.delete_mode_script(v.batch), "claim_delete"),
    "pg_skiplocked": PgbenchCeiling(lambda v: scripts.two_phase_script(v.batch), "claim_ack"),
    "pgmq": PgbenchCeiling(_pgmq_script, "read_ack"),
    "redis_reliable": RedisBenchmarkCeiling(),
}
#: the capacity experiment's ceilings with its compiled load (``capacity.load: qload``): pgbench
#: for the Postgres designs, qload's burn-down for Redis's and for SQLite (the engine inside it)
CAPACITY_TOOLS: dict[str, Any] = {**{k: t for k, t in CEILING_TOOLS.items() if isinstance(t, PgbenchCeiling)},
                                  "redis_reliable": QloadCeiling(), "sqlite_wal": QloadCeiling()}


def tool_variants(section: Any, variants: list[QueueVariant], name: str) -> list[QueueVariant]:
    """The variants ``section`` names (empty: every one whose system has a C tool); naming one
    without a tool is a plan error."""
    chosen = [v for v in variants if section.includes(v.label) and (section.variants or v.system in CEILING_TOOLS)]
    for v in chosen:
        if v.system not in CEILING_TOOLS:
            raise PGLimitsError(f"queue.{name}.variants names {v.label!r}, but {v.system} has no C load tool here",
                                f"name variants of {', '.join(sorted(CEILING_TOOLS))}")
    return chosen


def ceiling_point(run: StudyRun, v: QueueVariant, clients: int, duration_s: int, warmup_s: int,
                  prefill_count: int, requests: int, recorded_as: str,
                  sizer: PrefillSizer | None = None, extra_params: dict | None = None,
                  tool: Any = None) -> RecordedRun:
    """One tool run on a fresh queue (prefilled and settled where the tool needs a backlog),
    recorded under experiment ``recorded_as``; with a ``sizer``, ``prefill_count`` is the cap.
    ``tool``: the system's entry in ``CEILING_TOOLS`` unless given."""
    recorded = _ceiling_run(run, v, clients, duration_s, warmup_s, prefill_count, requests, recorded_as, sizer,
                            extra_params or {}, tool or CEILING_TOOLS[v.system])
    if sizer is not None:
        sizer.learn(recorded_as, v.label, consumed_per_s(recorded, role=None))
    return recorded


def _ceiling_run(run: StudyRun, v: QueueVariant, clients: int, duration_s: int, warmup_s: int,
                 prefill_count: int, requests: int, experiment: str, sizer: PrefillSizer | None,
                 extra_params: dict[str, Any], tool: Any) -> RecordedRun:
    ctx = run.ctx
    knobs = {"duration_s": duration_s, "warmup_s": warmup_s, "requests": requests}
    load = tool.load(ctx.endpoints[v.server].url, v, clients, knobs)  # a missing tool fails here
    filled = prefill_count if tool.fills_queue else 0
    params = {"experiment": experiment, "variant": v.label, "options": v.options, "clients": clients,
              "prefill": filled, **knobs, **extra_params}
    if sizer is not None and tool.fills_queue:  # sized only when measured, so a resume still matches
        params |= {"prefill": "sized", "prefill_cap": prefill_count, "prefill_rule": sizer.rule()}
    name = f"{experiment}:{v.label}"
    reused = ctx.reuse(STUDY, v.system, name, {**params, **load.describe()})
    if reused:
        return reused
    adapter = fresh_queue(ctx, v)
    try:
        if sizer is not None and tool.fills_queue:
            filled = sizer.size(experiment, v.label, prefill_count, warmup_s + duration_s)
        prefill(adapter, filled, run.seed)
        start_state = adapter.settle()

        def after(result) -> dict[str, Any]:
            return {**tool.judge(adapter, result, filled, clients, v.batch), "adapter": adapter.describe(),
                    "start_state": start_state, "tool_reported": result.params.get("tool_reported", {})}

        return run_tool_recorded(ctx, STUDY, v.system, name, v.server, load, params, seed=run.seed,
                                 tables=adapter.describe().get("tables"), after=after)
    finally:
        adapter.close()
