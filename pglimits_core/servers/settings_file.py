"""Committed server settings files: ``key = value  # why`` (or ``key value  # why``) per line.

The same parse gives the flags a server is started with and the *tuning ledger* that every
run manifest carries: what was changed from the defaults and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pglimits_core.errors import PGLimitsError


@dataclass(frozen=True)
class Setting:
    key: str
    value: str
    why: str


def parse_settings(path: Path) -> list[Setting]:
    """Settings in file order; a malformed line is an error naming the file and line."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise PGLimitsError(f"cannot read settings file {path}: {exc.strerror}",
                            "restore it from git (git checkout -- configs/)") from exc
    settings = []
    for number, line in enumerate(lines, start=1):
        setting = _parse_line(line, path, number)
        if setting:
            settings.append(setting)
    return settings


def _parse_line(line: str, path: Path, number: int) -> Setting | None:
    body, _, why = line.partition("#")
    body = body.strip()
    if not body:
        return None
    key, sep, value = body.partition("=")
    if not sep:
        key, _, value = body.partition(" ")
    key, value = key.strip(), _unquote(value.strip())
    if not key or (not value and '""' not in body):
        raise PGLimitsError(f"{path}:{number}: expected 'key = value  # why', got {line!r}",
                            "fix that line of the settings file")
    return Setting(key, value, why.strip())


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def as_dict(settings: list[Setting]) -> dict[str, str]:
    return {s.key: s.value for s in settings}


def ledger(settings: list[Setting]) -> list[dict[str, str]]:
    """The tuning ledger for a manifest: one {key, value, why} per changed setting."""
    return [{"key": s.key, "value": s.value, "why": s.why} for s in settings]
