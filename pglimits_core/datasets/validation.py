"""Checks shared by the dataset specs: each failure names the spec field and how to fix it.

A spec is hashed into its dataset's directory name, so a bad value must fail before anything
is generated or written, as a ``PGLimitsError`` the CLI prints on one line.
"""

from __future__ import annotations

import math

from pglimits_core.errors import PGLimitsError


def require_int(spec: str, field: str, value: object, minimum: int) -> None:
    """``value`` is a plain int (not a bool or float) and at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise PGLimitsError(f"{spec}.{field} must be an integer, got {value!r}",
                            f"pass a whole number >= {minimum} for {field}")
    if value < minimum:
        raise PGLimitsError(f"{spec}.{field} = {value} is below its minimum {minimum}",
                            f"pass {field} >= {minimum}")


def require_positive_float(spec: str, field: str, value: object) -> float:
    """``value`` as a float if it is a finite number above zero."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PGLimitsError(f"{spec}.{field} must be a finite number, got {value!r}",
                            f"pass a positive number for {field}")
    if value <= 0:
        raise PGLimitsError(f"{spec}.{field} = {value} must be above zero",
                            f"pass a positive number for {field}")
    return float(value)
