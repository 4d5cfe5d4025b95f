"""The source documents' headline figures, set beside this study's as ratios between systems.

The hardware differs (the seeds ran on 7-vCPU and Hetzner AX-52 boxes; this study may run on
2 shared cores), so absolute numbers are not comparable; the ratio between two systems measured
on the same box is. Seed numbers below are quoted from ``seeds/``; our side is always computed
from the queue tables (which come from run records only), never typed.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

# A ratio "agrees" when it falls inside the seed's range widened by this factor each way:
# quick profiles have short windows and one repetition, so a tighter band would flag noise.
AGREEMENT_SLACK = 1.25


@dataclass(frozen=True)
class SeedClaim:
    """One headline figure of a source document: system A vs system B, as A/B."""

    source: str
    what: str
    metric: str  # "throughput" (peak jobs/s, closed loop) or "e2e_p99" (ms at a matched rate)
    a_label: str
    b_label: str
    a_variants: tuple[str, ...]  # our variants standing for A, first measured one wins
    b_variants: tuple[str, ...]
    seed_a: tuple[float, float]  # (low, high) as the seed states it
    seed_b: tuple[float, float]
    rate: float | None = None  # matched offered rate for latency claims (msg/s)

    def seed_ratio_range(self) -> tuple[float, float]:
        return self.seed_a[0] / self.seed_b[1], self.seed_a[1] / self.seed_b[0]


SEED_003 = "seed 003 (the study this project implements)"
SEED_000 = "seed 000 (SQLite WAL vs Postgres queue)"
POSTGRES_TWO_PHASE = ("pg_skiplocked batch=1",)
POSTGRES_ANY = ("pgmq batch=1", "pg_skiplocked batch=1", "pg_delete batch=1")

CLAIMS = (
    SeedClaim(SEED_003, "queue throughput, closed loop", "throughput", "Postgres SKIP LOCKED two-phase",
              "Redis reliable queue", POSTGRES_TWO_PHASE, ("redis_reliable batch=1",),
              (45_000, 47_000), (8_000, 11_000)),
    SeedClaim(SEED_003, "queue throughput, closed loop", "throughput", "Postgres delete-mode",
              "Redis reliable queue", ("pg_delete batch=1",), ("redis_reliable batch=1",),
              (72_000, 72_000), (8_000, 11_000)),
    SeedClaim(SEED_003, "queue p99 latency at matched 5k jobs/s", "e2e_p99", "Postgres SKIP LOCKED",
              "Redis reliable queue", POSTGRES_TWO_PHASE + ("pg_delete batch=1",), ("redis_reliable batch=1",),
              (2.46, 2.46), (2.35, 2.35), rate=5_000),
    SeedClaim(SEED_000, "queue throughput at 1 consumer", "throughput_1", "SQLite WAL", "Postgres (pgmq)",
              ("sqlite_wal batch=1",), POSTGRES_ANY, (4_820, 4_820), (2_140, 2_140)),
    SeedClaim(SEED_000, "queue p99 end-to-end at 1k msg/s", "e2e_p99", "SQLite WAL", "Postgres (pgmq)",
              ("sqlite_wal batch=1",), POSTGRES_ANY, (1.1, 1.1), (6.2, 6.2), rate=1_000),
    SeedClaim(SEED_000, "queue p99 end-to-end at 5k msg/s", "e2e_p99", "SQLite WAL", "Postgres (pgmq)",
              ("sqlite_wal batch=1",), POSTGRES_ANY, (2.8, 2.8), (14.6, 14.6), rate=5_000),
)


@dataclass
class Measured:
    """Our value for one side of a claim, with the caveats that travel with it."""

    variant: str
    value: float
    note: str = ""
    rate: float | None = None  # the offered rate of a latency point


def _throughput_point(table: pd.DataFrame, variants: tuple[str, ...], consumers: int | None) -> Measured | None:
    """Peak median jobs/s of the first measured variant (or at ``consumers``), flags attached."""
    for variant in variants:
        rows = table[(table.variant == variant) & table.jobs_per_s.notna()] if not table.empty else table
        if consumers is not None and not rows.empty:
            rows = rows[rows.consumers == consumers]
        if rows.empty:
            continue
        best = rows.loc[rows.jobs_per_s.idxmax()]
        note = f"consumers={int(best.consumers)}" + ("; client-bound" if _flag_true(best.client_bound) else "")
        return Measured(variant, float(best.jobs_per_s), note)
    return None


def _matched_rate(table: pd.DataFrame, a: str, b: str, wanted: float) -> float | None:
    """The offered rate measured for both variants nearest to the seed's (sustained ones first)."""
    both = table[table.variant.isin([a, b]) & table.e2e_p99_ms.notna()]
    counts = both.groupby("offered_per_s").agg(n=("variant", "nunique"), ok=("sustained", "all"))
    shared = counts[counts.n == 2]
    if shared.empty:
        return None
    ranked = shared.assign(distance=(shared.index - wanted).map(abs)).sort_values(["ok", "distance"],
                                                                                    ascending=[False, True])
    return float(ranked.index[0])


def _latency_point(table: pd.DataFrame, variant: str, rate: float) -> Measured:
    """The median p99 over the repetitions at ``rate`` (the latency table has a row per run);
    a flag holds if it held in any repetition."""
    rows = table[(table.variant == variant) & (table.offered_per_s == rate) & table.e2e_p99_ms.notna()]
    flags = [f"at {rate:,.0f}/s, median of {len(rows)}"]
    flags += ["not sustained"] if any(_flag_false(value) for value in rows.sustained) else []
    flags += ["client-bound"] if any(_flag_true(value) for value in rows.client_bound) else []
    return Measured(variant, float(rows.e2e_p99_ms.median()), "; ".join(flags), rate)


def _flag_true(value) -> bool:
    return value is not None and not pd.isna(value) and bool(value)


def _flag_false(value) -> bool:
    """A recorded False (a missing flag is not a failure)."""
    return value is not None and not pd.isna(value) and not bool(value)


def _latency_pair(table: pd.DataFrame, claim: SeedClaim) -> tuple[Measured | None, Measured | None]:
    if table.empty:
        return None, None
    for a in claim.a_variants:
        for b in claim.b_variants:
            rate = _matched_rate(table, a, b, claim.rate or 0)
            if rate is not None:
                return _latency_point(table, a, rate), _latency_point(table, b, rate)
    return None, None


def measured_pair(claim: SeedClaim, tables: dict[str, pd.DataFrame]) -> tuple[Measured | None, Measured | None]:
    if claim.metric == "e2e_p99":
        return _latency_pair(tables.get("latency", pd.DataFrame()), claim)
    throughput = tables.get("throughput", pd.DataFrame())
    consumers = 1 if claim.metric == "throughput_1" else None
    return (_throughput_point(throughput, claim.a_variants, consumers),
            _throughput_point(throughput, claim.b_variants, consumers))


def verdict(ratio: float | None, low: float, high: float) -> str:
    """agree / same direction, different size / differ (opposite direction) / not measured."""
    if ratio is None:
        return "not measured here"
    if low / AGREEMENT_SLACK <= ratio <= high * AGREEMENT_SLACK:
        return "agree"
    seed_side = (low + high) / 2 >= 1
    return "same direction, different size" if (ratio >= 1) == seed_side else "differ (opposite direction)"


def _range_text(low: float, high: float) -> str:
    return f"{low:.2f}×" if abs(high - low) < 0.005 else f"{low:.2f}–{high:.2f}×"


def comparison_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per seed headline figure: the seed's A/B ratio, ours (computed), and the verdict."""
    rows = []
    for claim in CLAIMS:
        low, high = claim.seed_ratio_range()
        ours_a, ours_b = measured_pair(claim, tables)
        ratio = ours_a.value / ours_b.value if ours_a and ours_b and ours_b.value else None
        judged = verdict(ratio, low, high)
        if claim.rate and ours_a and ours_a.rate != claim.rate:
            # a p99 at another rate is shown for context, but it is not the seed's figure
            judged = (f"not comparable: no rate near {claim.rate:,.0f}/s that both sustained here "
                      f"(ours at {ours_a.rate:,.0f}/s)")
        unit = "jobs/s" if claim.metric.startswith("throughput") else "ms p99"
        rows.append({"source": claim.source, "figure": claim.what, "A / B": f"{claim.a_label} / {claim.b_label}",
                     "seed A": _seed_text(claim.seed_a, unit), "seed B": _seed_text(claim.seed_b, unit),
                     "seed ratio A/B": _range_text(low, high),
                     "ours A": _ours_text(ours_a, unit), "ours B": _ours_text(ours_b, unit),
                     "our ratio A/B": None if ratio is None else round(ratio, 2),
                     "verdict": judged})
    return pd.DataFrame(rows)


def _seed_text(value: tuple[float, float], unit: str) -> str:
    low, high = value
    return f"{low:g} {unit}" if low == high else f"{low:g}–{high:g} {unit}"


def _ours_text(point: Measured | None, unit: str) -> str:
    if point is None:
        return "no usable point (not run, or every point was blanked)"
    note = f" ({point.note})" if point.note else ""
    value = f"{point.value:,.0f}" if unit == "jobs/s" else f"{point.value:.2f}"
    return f"{value} {unit} — {point.variant}{note}"
