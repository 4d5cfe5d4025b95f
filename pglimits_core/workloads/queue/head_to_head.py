"""Who set the limit, row by row: the verdict class (``analysis.verdict``: ``Side``, ``decide``)
of each throughput and latency row against its head-to-head counterpart.

A row's counterpart is the best design on the other side of the study's question — a Postgres
row against the best non-Postgres design (Redis, SQLite), any other row against the best
Postgres design — in the same durability class at the same point (consumers; offered rate),
like for like only (``like_for_like.same_terms``, the decision cells' test: the same delivery
guarantee and batch). The core rule judges the pair; nothing here re-words it. A side the
harness itself failed (``undecided``: its producers never offered the rate) is "not decided:
load-limited" whatever its figures: the load, not the queue, set them. No row is decided by
server CPU per job (the rule decides on rate only); a latency side carries none at all: at an
offered rate it measures the consumers' empty polls (a 1 ms idle sleep, a harness parameter). A latency side whose design cannot
reach the offered rate on this box at all — even its best closed-loop burn-down run, consumers
alone with no producers, stayed below it (``reach``) — is ``reaches_rate=False``: the pair is
"not comparable here", never "differ".
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pglimits_core.analysis.flags import flag_set
from pglimits_core.analysis.runs import runs_limit
from pglimits_core.analysis.verdict import (
    LOAD_LIMITED,
    Side,
    decide,
    limit_from_record,
    sweep_class,
)
from pglimits_core.workloads.queue.latency_names import P99
from pglimits_core.workloads.queue.like_for_like import alike, offered_only
from pglimits_core.workloads.queue.systems.registry import SERVER_FOR

NO_COUNTERPART = "no counterpart measured in this durability class at this point"
NO_LIKE_FOR_LIKE = ("no like-for-like counterpart (same durability class, delivery guarantee and batch) "
                    "at this point")


@dataclass(frozen=True)
class Reach:
    """A design's closed-loop burn-down on this box: the peak median, the best single run, and
    whether the peak is only a floor (then its reach is unknown, never "cannot reach")."""

    peak: float
    best_run: float
    floor: bool

    def reaches(self, rate: float) -> bool:
        return self.floor or self.best_run >= rate

    def text(self) -> str:
        return f"burn-down peak {self.peak:,.0f}/s, best run {self.best_run:,.0f}/s, no producers"


def reach(throughput: pd.DataFrame | None) -> dict[str, Reach]:
    """Each design's ``Reach`` from the throughput table (empty without one)."""
    if throughput is None or throughput.empty or "jobs_per_s" not in throughput:
        return {}
    found = {}
    for variant, rows in throughput.dropna(subset=["jobs_per_s"]).groupby("variant"):
        best = rows.loc[rows.jobs_per_s.idxmax()]
        runs = rows.max_jobs_per_s if "max_jobs_per_s" in rows else rows.jobs_per_s
        found[variant] = Reach(float(best.jobs_per_s), float(runs.max()), flag_set(best.get("lower_bound")))
    return found


def cannot_reach(reaches: dict[str, Reach], variant: str, rate: float) -> str:
    """Why ``variant`` cannot reach ``rate`` on this box ("" when it can, or nobody knows)."""
    known = reaches.get(variant)
    if known is None or known.reaches(rate):
        return ""
    return f"{variant} cannot reach {rate:,.0f}/s on this box ({known.text()})"


def on_postgres(variant: str) -> bool:
    return SERVER_FOR.get(str(variant).split()[0]) == "postgres"


def verdict_columns(sides: pd.DataFrame) -> pd.DataFrame:
    """``sides``: one row per design at a point (``variant``, ``durability_class``, ``point``,
    ``side``: its ``Side``, ``better``: higher is better; optional ``undecided``: why the harness
    cannot judge it). Adds ``versus``, ``verdict_class`` and ``verdict_why`` against each row's
    like-for-like counterpart."""
    return pd.DataFrame([_verdict_row(row, sides) for _, row in sides.iterrows()], index=sides.index)


def _verdict_row(row: pd.Series, sides: pd.DataFrame) -> dict:
    other_side = sides[(sides.durability_class == row.durability_class) & (sides.point == row.point)
                       & (sides.variant.map(on_postgres) != on_postgres(row.variant))]
    rivals = other_side[other_side.variant.map(lambda other: alike(row.variant, other))]
    if rivals.empty:
        why = NO_LIKE_FOR_LIKE if len(other_side) else NO_COUNTERPART
        return {"versus": "—", "verdict_class": "—", "verdict_why": why}
    rival = rivals.loc[rivals.better.idxmax()]
    undecided = _undecided(row) or (f"{rival.variant}: {_undecided(rival)}" if _undecided(rival) else "")
    if undecided:
        return {"versus": rival.variant, "verdict_class": LOAD_LIMITED, "verdict_why": undecided}
    verdict = decide(row.side, rival.side)
    why = (f"{verdict.winner}: " if verdict.winner else "") + verdict.why + _in_ms(row, rival)
    steady = bool(row.get("steady", False))  # a matched point's steady windows: its class is its own
    return {"versus": rival.variant, "verdict_class": verdict.klass if steady else sweep_class(verdict.klass),
            "verdict_why": why}


def _in_ms(row: pd.Series, rival: pd.Series) -> str:
    """A latency pair's runs as the reader knows them: the rule compares 1000/p99 (higher is
    better), so the why says so and gives each side's p99 range in ms."""
    ours, theirs = row.get("p99_ms_range"), rival.get("p99_ms_range")
    if not isinstance(ours, tuple) or not isinstance(theirs, tuple):
        return ""
    return (f" (runs as 1000/p99 ms; p99 {ours[0]:.2f}–{ours[1]:.2f} ms here vs "
            f"{theirs[0]:.2f}–{theirs[1]:.2f} ms)")


def _undecided(row: pd.Series) -> str:
    why = row.get("undecided", "")
    return why if isinstance(why, str) else ""


def _range(values: pd.Series) -> tuple[float, float] | None:
    known = pd.to_numeric(values, errors="coerce").dropna()
    return (float(known.min()), float(known.max())) if len(known) else None


def number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def throughput_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """The throughput table with each row's verdict against its counterpart at as many consumers."""
    if table.empty:
        return table
    sides = pd.DataFrame({
        "variant": table.variant, "durability_class": table.durability_class, "point": table.consumers,
        "better": table.jobs_per_s.fillna(0),
        "side": [Side(r.variant, number(r.jobs_per_s), limit=limit_from_record(r),
                      server_cpu_us_per_op=number(r.server_cpu_us_per_job),
                      value_range=(r.min_jobs_per_s, r.max_jobs_per_s) if pd.notna(r.min_jobs_per_s) else None)
                 for _, r in table.iterrows()]})
    return pd.concat([table, verdict_columns(sides)], axis=1)


def latency_verdicts(table: pd.DataFrame, reaches: dict[str, Reach], steady: bool = False) -> pd.DataFrame:
    """The latency table (a row per run) with each design's verdict at its offered rate: value
    1/median p99, a side out of reach of the rate is ``reaches_rate=False``. ``steady``: the rows
    are steady windows (the matched points), not a sweep's short ones: their class stands as is."""
    if table.empty:
        return table
    designs = [{**_latency_side(variant, rate, runs, reaches), "steady": steady}
               for (variant, rate), runs in table.groupby(["variant", "offered_per_s"], sort=False)]
    sides = pd.DataFrame(designs)
    judged = pd.concat([sides, verdict_columns(sides)], axis=1).set_index(["variant", "point"])
    keys = list(zip(table.variant, table.offered_per_s, strict=True))
    columns = {c: [judged.at[key, c] for key in keys] for c in ("versus", "verdict_class", "verdict_why")}
    return table.assign(**columns)


def _latency_side(variant: str, rate: float, runs: pd.DataFrame, reaches: dict[str, Reach]) -> dict:
    p99 = runs[P99].median()
    p99s = _range(runs[P99])
    # no server CPU per job: at an offered rate it is mostly empty polls (see the module docstring)
    side = Side(variant, 1000 / p99 if p99 else None, limit=runs_limit(runs),
                reaches_rate=not cannot_reach(reaches, variant, rate),
                value_range=(1000 / p99s[1], 1000 / p99s[0]) if p99s and p99s[0] else None)
    return {"variant": variant, "durability_class": runs.durability_class.iloc[0], "point": rate,
            "better": side.value or 0.0, "side": side, "undecided": offered_only(runs), "p99_ms_range": p99s}
