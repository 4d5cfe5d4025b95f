"""The source documents' headline figures, set beside this study's as ratios between systems.

The hardware differs (the seeds ran on 7-vCPU and Hetzner AX-52 boxes), so absolute numbers are not
comparable; the ratio between two systems on the same box is. Seed numbers are quoted from the
source documents (``docs/SOURCES.md``); ours come from the queue tables (run records only).

Both sides of a ratio come from one durability class (fsync per commit / periodic / none), so a
ratio never compares different promises: SQLite vs Postgres at matched per-commit durability is
SQLite ``synchronous=FULL`` vs Postgres ``synchronous_commit=on``. A latency side that did not
sustain the seed's rate here is a finding ("differ", with the reason), not a missing number —
unless its design cannot reach that rate on this box at all (its best closed-loop burn-down, with
no producers, stayed below it: ``head_to_head.reach``): then the pair is "not comparable here",
by the one who-set-the-limit rule (``analysis.verdict.decide``), whose class every row carries.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pglimits_core.analysis.flags import flag_set
from pglimits_core.analysis.runs import runs_limit
from pglimits_core.analysis.seed import AGREEMENT_SLACK, floor_could_move_it, verdict  # noqa: F401
from pglimits_core.analysis.seed import range_text as _range_text
from pglimits_core.analysis.verdict import (
    BY_RATE,
    NOT_COMPARABLE,
    Side,
    limit_from_record,
)
from pglimits_core.workloads.queue.durability_tables import (
    CLASSES,
    UNKNOWN,
    design,
    ensure_class,
    label,
)
from pglimits_core.workloads.queue.head_to_head import Reach, cannot_reach, reach
from pglimits_core.workloads.queue.latency_names import P99
from pglimits_core.workloads.queue.like_for_like import one_promise, promise_of
from pglimits_core.workloads.queue.seed_claims import (  # noqa: F401 (the claims, as tests and drills import them)
    CLAIMS,
    POSTGRES_ANY,
    POSTGRES_TWO_PHASE,
    REDIS_PIPELINED,
    SEED_000,
    SEED_000_DURABILITY,
    SEED_003,
    SEED_003_DURABILITY,
    SQLITE_NORMAL_BOTH,
    SQLITE_STOCK,
    SQLITE_STOCK_CEILING,
    SeedClaim,
)
from pglimits_core.workloads.queue.seed_terms import judged_by, promises_as_the_source, runs_overlap


@dataclass
class Measured:
    """Our value for one side of a claim, with the caveats that travel with it."""

    variant: str
    value: float
    note: str = ""
    rate: float | None = None  # the offered rate of a latency point
    durability_class: str = UNKNOWN
    lower_bound: bool = False  # a throughput floor ("≥"): the consumers could do at least this
    shortfall: str = ""  # a latency side that did not sustain the rate: why (a finding, not a number)
    side: Side | None = None  # the side as the who-set-the-limit rule judges it
    unreachable: str = ""  # the design cannot reach the rate on this box at all: why
    own_terms: str = ""  # measured at the seed's share of this box's capacity, not its absolute rate: how
    sweep: bool = False  # a side from a sweep's short windows: indicative, never decided


def _of_class(table: pd.DataFrame, design_name: str, durability_class: str | None) -> pd.DataFrame:
    """Rows of one queue design, in one durability class (any class when None)."""
    if table.empty:
        return table
    table = ensure_class(table)
    rows = table[table.variant.map(design) == design_name]
    return rows if durability_class is None else rows[rows.durability_class == durability_class]


def _throughput_point(table: pd.DataFrame, designs: tuple[str, ...], consumers: int | None,
                      durability_class: str | None) -> Measured | None:
    """Peak median jobs/s of the first measured design (or at ``consumers``), flags attached: the
    burn-down sweep's short windows, so it indicates and never decides (``sweep``)."""
    for name in designs:
        rows = _of_class(table, name, durability_class)
        rows = rows[rows.jobs_per_s.notna()] if not rows.empty else rows
        if consumers is not None and not rows.empty:
            rows = rows[rows.consumers == consumers]
        if rows.empty:
            continue
        best = rows.loc[rows.jobs_per_s.idxmax()]
        lower = flag_set(best.get("lower_bound"))
        notes = [f"consumers={int(best.consumers)}"] + (["client-bound"] if flag_set(best.client_bound) else [])
        notes += [f"lower bound: {best.lower_bound_why}"] if lower else []
        return Measured(best.variant, float(best.jobs_per_s), "; ".join(notes),
                        durability_class=best.durability_class, lower_bound=lower, side=_throughput_side(best),
                        sweep=True)
    return None


def _throughput_side(row: pd.Series) -> Side:
    cpu = _known(row.get("server_cpu_us_per_job"))
    least, most = _known(row.get("min_jobs_per_s")), _known(row.get("max_jobs_per_s"))
    return Side(row.variant, float(row.jobs_per_s), limit=limit_from_record(row),
                server_cpu_us_per_op=cpu, value_range=(least, most) if least and most else None)


def _known(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _matched_rate(table: pd.DataFrame, a: str, b: str, wanted: float) -> float | None:
    """The seed's rate if both variants were offered it, else the nearest rate both were offered
    (sustained or not: a rate a system could not sustain is a finding, not a reason to look away)."""
    both = table[table.variant.isin([a, b])]
    counts = both.groupby("offered_per_s").variant.nunique()
    shared = counts[counts == 2].index
    if shared.empty:
        return None
    return float(min(shared, key=lambda rate: abs(rate - wanted)))


def _latency_point(table: pd.DataFrame, variant: str, rate: float, reaches: dict[str, Reach],
                   steady: bool = False) -> Measured:
    """The median p99 over the repetitions at ``rate`` (the latency table has a row per run); a
    repetition that fell short of the rate makes the side a shortfall; client-bound in any run
    travels as a flag; a design that cannot reach the rate on this box at all says why."""
    rows = table[(table.variant == variant) & (table.offered_per_s == rate)]
    short = sum(_flag_false(value) for value in rows.sustained)
    flags = [f"at {rate:,.0f}/s, median of {int(rows[P99].notna().sum())}{_windows(rows, steady)}"]
    # a p99 of a rate not kept up with is a floor: the consumers stop at the window's end, so the
    # late sends and the backlog left then are not in it
    flags += [f"not sustained in {short} of {len(rows)} runs: the p99 is a floor"] if short else []
    flags += ["client-bound"] if any(flag_set(value) for value in rows.client_bound) else []
    # a server out of CPU at the rate is at its capacity there: its p99 is that regime's, said so
    flags += ["the server's CPU set saturated (≥ 85 % busy): past what it holds at a latency target"] \
        if runs_limit(rows) == "server" else []
    shortfall = (f"{variant} did not sustain {rate:,.0f}/s here (fell short in {short} of {len(rows)} runs)"
                 if short else "")
    p99, unreachable = float(rows[P99].median()), cannot_reach(reaches, variant, rate)
    low, high = rows[P99].min(), rows[P99].max()
    side = Side(variant, 1000 / p99 if p99 else None, reaches_rate=not unreachable, limit=runs_limit(rows),
                value_range=(1000 / high, 1000 / low) if low else None)
    return Measured(variant, p99, "; ".join(flags), rate, rows.durability_class.iloc[0], shortfall=shortfall,
                    side=side, unreachable=unreachable, sweep=not steady)


def _windows(rows: pd.DataFrame, steady: bool) -> str:
    """" × 30-s windows (steady, the compiled load)" or the sweep's short windows."""
    seconds = pd.to_numeric(rows.get("window_s", pd.Series(dtype=float)), errors="coerce").median()
    length = f" × {seconds:g}-s windows" if pd.notna(seconds) else ""
    return f"{length} ({'the steady matched rates' if steady else 'the latency sweep: short windows'})"


def _flag_false(value) -> bool:
    """A recorded False (a missing flag is not a failure)."""
    return value is not None and not pd.isna(value) and not bool(value)


#: how far the rate both sides were offered may sit from the seed's share of this box's ceiling
#: (×/÷) and still be read as the claim's own terms
OWN_TERMS_SLACK = 1.5


def own_terms_rate(claim: SeedClaim, capacity: pd.DataFrame | None,
                   durability_class: str | None) -> tuple[float, Measured] | None:
    """The seed's share of its peak applied to this box's ceiling of the same design (the capacity
    experiment's; the design's own class, which the seed's peak was measured in, whatever the
    class of the pair), and that ceiling; None without one here."""
    share = claim.share_of_peak()
    if share is None:
        return None
    ceiling = _ceiling_point(capacity, claim.of_peak[1], None)
    if ceiling is None or ceiling.lower_bound:  # a floor is no peak to take a share of
        return None
    return share * ceiling.value, ceiling


def own_terms_words(claim: SeedClaim, rate: float, ceiling: Measured) -> str:
    """"9.9% of pg_skiplocked batch=10's ceiling here (10,062 jobs/s) — the rate both were offered
    nearest the seed's share (10.9%: 5,000 of 46,000), within ×1.5"."""
    return (f"{rate / ceiling.value:.1%} of {ceiling.variant}'s ceiling here ({ceiling.value:,.0f} jobs/s, "
            f"{label(ceiling.durability_class)}) — the "
            f"rate both were offered nearest the seed's share ({claim.share_of_peak():.1%}: {claim.rate:,.0f} of "
            f"{claim.of_peak[0]:,.0f}), within ×{OWN_TERMS_SLACK:g}")


def _own_terms_rate_offered(table: pd.DataFrame, a: str, b: str, wanted: float) -> float | None:
    rate = _matched_rate(table, a, b, wanted)
    return rate if rate is not None and wanted / OWN_TERMS_SLACK <= rate <= wanted * OWN_TERMS_SLACK else None


def _latency_pair(table: pd.DataFrame, claim: SeedClaim, durability_class: str | None,
                  reaches: dict[str, Reach], capacity: pd.DataFrame | None = None, steady: bool = False,
                  ) -> tuple[Measured | None, Measured | None]:
    """The pair at the seed's rate, or — where not both were offered it and this box's ceiling
    gives the claim's own terms — at the same share of this box's capacity (``steady``: the
    matched rates' steady windows, else the sweep's short ones)."""
    if table.empty:
        return None, None
    table = ensure_class(table)
    own = own_terms_rate(claim, capacity, durability_class)
    for a, b in _candidates(table, claim, durability_class):
        rate = _matched_rate(table, a, b, claim.rate or 0)
        at_share = (_own_terms_rate_offered(table, a, b, own[0])
                    if rate is not None and rate != claim.rate and own is not None else None)
        if at_share is not None:
            pair = (_latency_point(table, a, at_share, reaches, steady),
                    _latency_point(table, b, at_share, reaches, steady))
            for side in pair:
                side.own_terms = own_terms_words(claim, at_share, own[1])
            return pair
        if rate is not None:
            return _latency_point(table, a, rate, reaches, steady), _latency_point(table, b, rate, reaches, steady)
    return None, None


def _candidates(table: pd.DataFrame, claim: SeedClaim, durability_class: str | None) -> list[tuple[str, str]]:
    """The claim's (A, B) variants measured in the class, in the claim's order, pairs with one
    delivery guarantee first (a pair that differs is kept last: shown, never judged)."""
    pairs = []
    for a_name in claim.a_designs:
        for b_name in claim.b_designs:
            a_rows, b_rows = _of_class(table, a_name, durability_class), _of_class(table, b_name, durability_class)
            if not a_rows.empty and not b_rows.empty:
                pairs.append((sorted(a_rows.variant.unique())[0], sorted(b_rows.variant.unique())[0]))
    return sorted(pairs, key=lambda pair: not one_promise(*pair))  # stable: the claim's order kept


def _ceiling_point(capacity: pd.DataFrame | None, designs: tuple[str, ...],
                   durability_class: str | None) -> Measured | None:
    """The capacity experiment's ceiling of the first design it measured: the median of its steady
    closed-loop windows with the server's own core, a floor ("≥") where its load set the limit."""
    if capacity is None or capacity.empty or "ceiling_per_s" not in capacity:
        return None
    for name in designs:
        rows = _of_class(capacity.drop_duplicates("variant"), name, durability_class)
        rows = rows[pd.to_numeric(rows.ceiling_per_s, errors="coerce").notna()] if not rows.empty else rows
        if rows.empty:
            continue
        best = rows.iloc[0]
        limit = None if pd.isna(best.get("ceiling_limit")) else best.get("ceiling_limit")
        side = Side(best.variant, float(best.ceiling_per_s), limit=limit,
                    value_range=(float(best.ceiling_low), float(best.ceiling_high)))
        by = best.get("ceiling_by") if isinstance(best.get("ceiling_by"), str) else "the harness"
        note = (f"capacity ceiling: {by}, {int(best.ceiling_clients)} clients, median of {int(best.ceiling_runs)} "
                f"× {float(best.ceiling_s):g}-s windows ({best.ceiling_low:,.0f}–{best.ceiling_high:,.0f})")
        note += "; lower bound: its load set the limit" if side.floor else ""
        return Measured(best.variant, side.value, note, durability_class=best.durability_class,
                        lower_bound=side.floor, side=side)
    return None


def measured_pair(claim: SeedClaim, tables: dict[str, pd.DataFrame],
                  durability_class: str | None = None) -> tuple[Measured | None, Measured | None]:
    """Our A and B for ``claim`` within one durability class (None: the first measured of any). A
    peak-throughput claim is read from the capacity experiment's ceilings where both sides have one
    (steady windows, the server on its own core), else from the burn-down sweep."""
    throughput = tables.get("throughput", pd.DataFrame())
    if claim.metric == "e2e_p99":  # the steady windows at the claims' rates first, else the sweep's
        pairs = [_latency_pair(tables.get(name, pd.DataFrame()), claim, durability_class, reach(throughput),
                               tables.get("capacity"), steady=name == "matched") for name in ("matched", "latency")]
        found = [pair for pair in pairs if pair[0] is not None]
        # on the claim's terms first (its rate, or its share of this box's ceiling), one delivery
        # promise on both sides before two; else the pair at another rate, shown as context
        on_terms = [pair for pair in found if _on_its_terms(claim, pair)]
        alike = [pair for pair in on_terms if one_promise(pair[0].variant, pair[1].variant)]
        return next(iter(alike + on_terms), found[-1] if found else (None, None))
    if claim.metric == "throughput":
        a, b = (_ceiling_point(tables.get("capacity"), designs, durability_class)
                for designs in (claim.a_designs, claim.b_designs))
        if a is not None and b is not None:
            return a, b
    consumers = 1 if claim.metric == "throughput_1" else None
    return (_throughput_point(throughput, claim.a_designs, consumers, durability_class),
            _throughput_point(throughput, claim.b_designs, consumers, durability_class))


def _on_its_terms(claim: SeedClaim, pair: tuple[Measured | None, Measured | None]) -> bool:
    """A latency pair at the claim's rate, or at its own terms."""
    a = pair[0]
    return a is not None and (a.rate == claim.rate or bool(a.own_terms) or claim.rate is None)


def judge(claim: SeedClaim, a: Measured | None, b: Measured | None) -> tuple[float | None, str]:
    """Our A/B ratio and the verdict for a pair measured in one durability class."""
    if a is None or b is None:
        return None, "not measured here"
    if not promises_as_the_source(claim, a, b):  # one side may lose a job the other redelivers: no verdict
        return None, (f"not compared: different delivery guarantees (A {promise_of(a.variant)}, "
                      f"B {promise_of(b.variant)}); the figures are context only")
    if claim.rate and a.rate != claim.rate and not a.own_terms:
        # a p99 at another rate is shown for context, but it is not the seed's figure
        return None, f"not comparable: not offered {claim.rate:,.0f}/s here (ours at {a.rate:,.0f}/s)"
    unreachable = [side.unreachable for side in (a, b) if side.unreachable]
    if unreachable:
        # not even consumers alone reach the rate here: "differ" would describe the box, not the systems
        return None, f"{NOT_COMPARABLE}: " + "; ".join(unreachable)
    shortfalls = [side.shortfall for side in (a, b) if side.shortfall]
    if shortfalls:
        # the seed sustained this rate on both sides: one of ours not sustaining it is the finding
        return None, "differ: " + "; ".join(shortfalls)
    ratio = a.value / b.value if b.value else None
    low, high = claim.seed_ratio_range()
    floors = [name for name, side in (("A", a), ("B", b)) if side.lower_bound]
    terms = f" — at its own terms: {a.rate:,.0f}/s = {a.own_terms}" if a.own_terms else ""
    if ratio is not None and floor_could_move_it(ratio, low, high, a.lower_bound, b.lower_bound):
        return ratio, (f"inconclusive: ours {' and '.join(floors)} a lower bound, the true ratio may reach the "
                       f"seed's{terms}")
    # a sweep's short windows can swing a p99 many times over (a stall in 2 s): they indicate only
    sweep = "indicative only (the sweep's short windows): " if a.sweep or b.sweep else ""
    if (overlap := runs_overlap(a, b, low, high)):
        return ratio, sweep + overlap + terms
    judged = verdict(ratio, low, high)
    pairing = "" if one_promise(a.variant, b.variant) else (
        f" — delivery differs, as in the source's own pairing (A {promise_of(a.variant)}, B {promise_of(b.variant)})")
    return ratio, sweep + judged + (f" (ours {' and '.join(floors)}: a lower bound)" if floors else "") + terms + pairing


def comparison_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per seed headline figure and durability class measured on both sides: the seed's A/B ratio,
    ours (computed), and the verdict. A figure with no class measured on both sides gets one row
    that says so, each side shown with its class and the ratio as context, never a verdict."""
    from pglimits_core.workloads.queue.drills.backup_tables import (
        backup_seed_rows,  # it judges by verdict() here
    )

    rows = []
    for claim in CLAIMS:
        pairs = [(name, *measured_pair(claim, tables, name)) for name in CLASSES]
        matched = [(name, a, b) for name, a, b in pairs if a and b]
        for name, a, b in matched or [(None, *measured_pair(claim, tables))]:
            rows.append(_comparison_row(claim, name, a, b))
    return pd.DataFrame(rows + backup_seed_rows(tables))


def _comparison_row(claim: SeedClaim, durability_class: str | None, a: Measured | None,
                    b: Measured | None) -> dict:
    ratio, judged = judge(claim, a, b)
    if durability_class is None and a and b:
        # different promises: the ratio is shown as context (it is what the seed's pairing gives
        # here), never judged
        ratio = a.value / b.value if b.value else None
        judged = (f"not compared: no durability class measured on both sides (A {label(a.durability_class)}, "
                  f"B {label(b.durability_class)}); the ratio is context only")
    low, high = claim.seed_ratio_range()
    unit = "jobs/s" if claim.metric.startswith("throughput") else "ms p99"
    klass = judged_by(durability_class, a, b) if a is None or b is None or promises_as_the_source(
        claim, a, b) else "—"
    if "not decided here" in judged and klass == BY_RATE:
        # a tie the rule found, against a seed that claims a direction: the row decides nothing
        klass = "not decided: no measurable difference against the seed's direction"
    return {"source": claim.source, "figure": claim.what,
            "durability class (ours, both sides)": label(durability_class) if durability_class else "—",
            "A / B": f"{claim.a_label} / {claim.b_label}", "seed durability": claim.seed_durability,
            "seed A": _seed_text(claim.seed_a, unit), "seed B": _seed_text(claim.seed_b, unit),
            "seed ratio A/B": _range_text(low, high), "ours A": _ours_text(a, unit), "ours B": _ours_text(b, unit),
            "our ratio A/B": _ratio_text(ratio, a, b, claim.metric), "verdict": judged,
            "verdict class": klass}


def _ratio_text(ratio: float | None, a: Measured | None, b: Measured | None, metric: str) -> float | str | None:
    """Our A/B as printed: a bound ("≤ 0.41×") where a throughput side is a floor (``bounded_ratio``)."""
    from pglimits_core.analysis.seed import bounded_ratio
    sides = metric.startswith("throughput") and a is not None and b is not None and a.side and b.side
    return bounded_ratio(ratio, a.side, b.side) if ratio is not None and sides else (
        None if ratio is None else round(ratio, 2))


def _seed_text(value: tuple[float, float], unit: str) -> str:
    low, high = value
    return f"{low:g} {unit}" if low == high else f"{low:g}–{high:g} {unit}"


def _ours_text(point: Measured | None, unit: str) -> str:
    if point is None:
        return "no usable point (not run, or every point was blanked)"
    note = f" ({point.note})" if point.note else ""
    value = f"{point.value:,.0f}" if unit == "jobs/s" else f"{point.value:.2f}"
    floor = "≥ " if point.lower_bound else ""
    return f"{floor}{value} {unit} — {point.variant} [{label(point.durability_class)}]{note}"
