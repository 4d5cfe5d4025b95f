"""The interference study's mechanisms by name: which carry an act, their reading order, and the
names of the horizon holds, whose length is part of the name (a 60-s and a 300-s hold are two
mechanisms: every table groups by mechanism and level, and the two must not pool).

A hold's mechanism is ``<kind>_<seconds>s`` (``idle_xid_60s``, ``rr_query_300s``); the kinds are
``studies.horizons.KINDS``. The older records' act mechanisms (``held_xmin``, ``autovacuum_off``,
and a hold without its length) keep their names. A mitigation re-measures a planned window with
one change: its mechanism is ``<mechanism> | <mitigation>`` (``churn | tuned_autovacuum``,
``idle_xid_300s | holder_timeout``), read as the mechanism it mitigates, placed right after it.
"""

from __future__ import annotations

import re

import pandas as pd

from pglimits_core.studies.horizons import KINDS as HOLD_KINDS

#: the acts before the holds: the held xmin (c) and autovacuum off (d)
STALLS = ("held_xmin", "autovacuum_off")
#: mechanisms in reading order (a hold's kind, its length after it)
ORDER = {"baseline": 0, "churn": 1, "control": 2, "held_xmin": 3, "autovacuum_off": 4, "idle_xid": 5, "rr_query": 6}
_HOLD = re.compile(r"^(?P<kind>[a-z_]+?)_(?P<seconds>\d+(\.\d+)?)s$")
#: between a mechanism and the mitigation applied to it
MITIGATED = " | "


def mitigated(mechanism: str, mitigation: str) -> str:
    return f"{mechanism}{MITIGATED}{mitigation}"


def split_mitigation(mechanism: str) -> tuple[str, str | None]:
    """(the mechanism mitigated, the mitigation) — (mechanism, None) for a plain one."""
    base, _, mitigation = (mechanism or "").partition(MITIGATED)
    return base, mitigation or None


def hold_mechanism(kind: str, seconds: float) -> str:
    """The mechanism of a ``kind`` hold of ``seconds`` (``idle_xid``, 60 -> ``idle_xid_60s``)."""
    if kind not in HOLD_KINDS:
        raise ValueError(f"unknown hold kind {kind!r}: one of {', '.join(HOLD_KINDS)}")
    return f"{kind}_{seconds:g}s"


def kind_of(mechanism: str) -> str:
    """A hold's kind (``idle_xid_60s`` -> ``idle_xid``), a mitigated window's mechanism's kind;
    any other mechanism is its own kind."""
    base, _ = split_mitigation(mechanism)
    found = _HOLD.match(base)
    return found["kind"] if found and found["kind"] in HOLD_KINDS else base


def hold_seconds(mechanism: str) -> float | None:
    """A hold's planned length from its name (None: not a hold with a length)."""
    found = _HOLD.match(split_mitigation(mechanism)[0])
    return float(found["seconds"]) if found and found["kind"] in HOLD_KINDS else None


def is_act(mechanism: str) -> bool:
    """The window carries an act (and runs longer than the plain windows)."""
    return kind_of(mechanism) in (*STALLS, *HOLD_KINDS)


def is_hold(mechanism: str) -> bool:
    return kind_of(mechanism) in HOLD_KINDS


def acts_mask(column: pd.Series) -> pd.Series:
    """Which rows of a mechanism column are act windows."""
    return column.map(lambda m: is_act(m) if isinstance(m, str) else False).astype(bool)


def order_key(mechanism: str) -> float:
    """Reading order: the kind's place, a longer hold after a shorter one, a mitigation right
    after what it mitigates; unknown names last."""
    if not isinstance(mechanism, str):
        return 9
    place = ORDER.get(kind_of(mechanism), 9)
    return place + (hold_seconds(mechanism) or 0) / 1e5 + (1e-6 if split_mitigation(mechanism)[1] else 0)


def order_column(column: pd.Series) -> pd.Series:
    """A mechanism column's sort key (``DataFrame.sort_values(key=...)``)."""
    return column.map(order_key)
