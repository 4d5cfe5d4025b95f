"""Pub/sub's cells of the decision matrix: per fan-out (subscribers) of the fan-out table, the most
deliveries/s pg_notify reached flat out (closed loop) against redis_publish's, judged on rate
(a side whose publishers and subscribers, not the server, were the limit is a floor), with the
server's CPU per delivery printed beside it.

Neither persists a message and neither waits for a disk before a bare publish returns: a
transaction that only notifies writes no WAL before its commit record, so PostgreSQL does not
wait for that record's flush (``terms``). Each side's figure says what its runs recorded
(``terms.disk_text``), and the scale would say if the records ever showed only the Postgres side
paying for a flush."""

from __future__ import annotations

import re

import pandas as pd

from pglimits_core.analysis.decision import Cell, ratio_range, usable
from pglimits_core.analysis.verdict import Side, limit_from_record
from pglimits_core.workloads.pubsub.systems.registry import SERVER_FOR
from pglimits_core.workloads.pubsub.terms import disk_text, unequal

COLUMNS = ("variant", "subscribers", "publishers", "loop", "deliveries_per_s", "deliveries_per_s_range",
           "server_cpu_ms_per_1k", "client_bound")


def server_of(variant: str) -> str:
    return SERVER_FOR.get(str(variant).split()[0], "")


def decisions(tables: dict[str, pd.DataFrame]) -> list[Cell]:
    fanout = tables.get("fanout")
    if not usable(fanout, *COLUMNS):
        return []
    flat_out = fanout[fanout["loop"] == "closed"].dropna(subset=["deliveries_per_s"])
    cells = []
    for subscribers, rows in flat_out.groupby("subscribers", sort=True):
        servers = rows["variant"].map(server_of)
        pg, redis = _most(rows[servers == "postgres"]), _most(rows[servers == "redis"])
        cells.append(Cell("pubsub", _scale(subscribers, pg, redis), "none (closed loop, flat out)", side(pg),
                          side(redis), "fanout", unit="deliveries/s",
                          figures=(_text(pg), _text(redis)), spread=_spread(pg, redis),
                          missing="pg_notify not measured here" if pg is None else "redis_publish not measured here"))
    return cells


def _scale(subscribers: float, pg: pd.Series | None, redis: pd.Series | None) -> str:
    """The fan-out, and the unequal terms when the records show them (kept short: a scoreboard tile)."""
    scale = f"{subscribers:,.0f} subscriber{'s' if subscribers != 1 else ''}"
    return f"{scale}; only Postgres waits for a disk flush" if unequal(pg, redis) else scale


def _most(rows: pd.DataFrame) -> pd.Series | None:
    return None if rows.empty else rows.loc[rows["deliveries_per_s"].idxmax()]


def side(row: pd.Series | None) -> Side | None:
    """One fan-out row as a side of the verdict (``analysis.verdict``): deliveries/s with the
    runs' range, which side set the limit, and the server's CPU µs per delivery (printed only)."""
    if row is None:
        return None
    cpu = row["server_cpu_ms_per_1k"]  # ms per 1,000 = µs per delivery
    return Side(str(row["variant"]), float(row["deliveries_per_s"]), limit=limit_from_record(row),
                server_cpu_us_per_op=None if pd.isna(cpu) else float(cpu), value_range=_range(row))


def _range(row: pd.Series) -> tuple[float, float] | None:
    """The runs' lowest and highest deliveries/s from the table's "median (low–high)" text."""
    found = re.search(r"\(([\d.,]+)–([\d.,]+)\)", str(row["deliveries_per_s_range"]))
    return None if found is None else tuple(float(x.replace(",", "")) for x in found.groups())


def _spread(pg: pd.Series | None, redis: pd.Series | None) -> str:
    ranges = [_range(row) for row in (pg, redis) if row is not None]
    if len(ranges) < 2 or None in ranges:
        return ""
    return ratio_range(*ranges[0], *ranges[1])


def _text(row: pd.Series | None) -> str:
    if row is None:
        return "—"
    publishers = int(row["publishers"])
    return (f"{row['deliveries_per_s_range']} deliveries/s ({publishers} publisher{'s' if publishers != 1 else ''}); "
            f"{disk_text(row)}")
