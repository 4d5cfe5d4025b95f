"""How a recorded flag (client-bound, busy neighbour, lower bound...) is read in every table: a
recorded True is a mark; None or NaN (not applicable, not recorded) is not."""

from __future__ import annotations

import pandas as pd


def any_verdict(values: pd.Series) -> bool | None:
    """Client-bound in any run; None when no run has a verdict (not applicable — SQLite's engine
    runs inside the client — or not recorded): shown as "—", never as a mark."""
    known = [bool(value) for value in values if value is not None and not pd.isna(value)]
    return any(known) if known else None


def flag_set(value) -> bool:
    """A recorded True; None or NaN (not applicable, not recorded) is not a mark."""
    return value is not None and not pd.isna(value) and bool(value)
