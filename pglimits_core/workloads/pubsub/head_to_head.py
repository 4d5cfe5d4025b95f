"""The fan-out head to head: at each fan-out point both systems measured (the same subscribers,
publishers, offered rate and batch), Postgres's row against Redis's, judged by the one rule
(``analysis.verdict.decide``) from the sides ``decision.side`` builds — the decision matrix's
own, so the table and the matrix cannot disagree.

At an offered (open-loop) rate both deliver what is offered: the rate is no figure of merit there,
so such a row is not decided. The server's CPU per delivery (µs, from the server's own processes
in the run's samples) is printed beside every row and decides none: it comes from one or two
one-second samples per run.

The two sides do not do the same work on disk (a NOTIFY's commit waits for a WAL flush, a
PUBLISH writes nothing; neither persists the message): the table's caption states it from the
runs' recorded settings and the host's fsync figure (``terms.terms_note``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from pglimits_core.analysis.verdict import INSIDE_BAND, Side, Verdict, decide, sweep_class
from pglimits_core.workloads.pubsub.decision import server_of, side

KEY = ["options", "subscribers", "publishers", "rate"]


def head_to_head_table(fanout: pd.DataFrame) -> pd.DataFrame:
    """One row per fan-out point measured on both servers; empty when none is."""
    if fanout is None or fanout.empty:
        return pd.DataFrame()
    rows = fanout.assign(options=fanout.variant.map(lambda label: str(label).partition(" ")[2]),
                         server=fanout.variant.map(server_of))
    table = []
    for key, group in rows.groupby(KEY, sort=True, dropna=False):
        pg, redis = group[group.server == "postgres"], group[group.server == "redis"]
        if len(pg) == 1 and len(redis) == 1:
            table.append({**dict(zip(KEY, key, strict=True)), **_compare(pg.iloc[0], redis.iloc[0])})
    return pd.DataFrame(table)


def _compare(pg: pd.Series, redis: pd.Series) -> dict:
    verdict = decide(*(_at_rate(side(row), row.rate) for row in (pg, redis)))
    return {"postgres": pg.variant, "postgres_deliveries_per_s": pg.deliveries_per_s_range,
            "postgres_server_cpu_us_per_delivery": _us(pg), "postgres_client_bound": pg.client_bound,
            "redis": redis.variant, "redis_deliveries_per_s": redis.deliveries_per_s_range,
            "redis_server_cpu_us_per_delivery": _us(redis), "redis_client_bound": redis.client_bound,
            "verdict_class": sweep_class(verdict.klass), "ratio_postgres_over_redis": verdict.ratio,
            "ratio_spread": "" if verdict.spread is None else f"{verdict.spread[0]:.2f}–{verdict.spread[1]:.2f}",
            "ahead": _ahead(verdict), "why": verdict.why}


def _ahead(verdict: Verdict) -> str:
    """The winner; "no measurable difference" only where the runs overlap; who led in every run
    inside the tie band; "—" when undecided."""
    if verdict.winner:
        return verdict.winner
    if verdict.tie:
        return "no measurable difference"
    return f"{verdict.ahead} in every run, inside the tie band" if verdict.klass == INSIDE_BAND else "—"


def _at_rate(one: Side, rate: Any) -> Side:
    """At an offered (open-loop) rate both sides deliver what is offered: the rate is no figure
    of merit there, so the row has no rate to decide on."""
    return one if rate == "flat out" else replace(one, value=None, value_range=None)


def _us(row: pd.Series) -> str:
    """Median µs per delivery with the runs' range."""
    median, low, high = row.server_cpu_ms_per_1k, row.get("server_cpu_us_low"), row.get("server_cpu_us_high")
    if median is None or pd.isna(median):
        return "—"
    if low is None or high is None or pd.isna(low) or pd.isna(high) or low == high:
        return f"{median:.1f}"
    return f"{median:.1f} ({low:.1f}–{high:.1f})"
