"""The server log's autovacuum lines, and vacuum windows on a sampler frame's time axis.

With ``log_autovacuum_min_duration = 0`` (set in ``configs/servers/postgres.conf``) every
autovacuum run ends with one multi-line LOG entry, stamped when it *finished*::

    2026-12-01 21:43:13.568 UTC [26148] LOG:  automatic vacuum of table "pglimits.public.jobs": index scans: 1
    \ttuples: 83 removed, 0 remain, 0 are dead but not yet removable
    \tsystem usage: CPU: user: 0.00 s, system: 0.00 s, elapsed: 0.42 s

So a logged vacuum ran from ``end - elapsed`` to ``end`` (10 ms resolution): it sees runs the
one-second sampler misses. Usage::

    tail = ServerLogTail(server_log_path(server_or_endpoint))   # remembers where the log ends
    ...                                                         # the samplers and the load run
    logged = parse_autovacuum_log(tail.read())                  # [LoggedVacuum(...)]
    windows = windows_from_log(logged, frame)                   # [Window] on frame["t"]'s axis

``frame`` is a ``SamplerSet.dataframe()`` holding ``VacuumSampler`` rows: their ``epoch_s``
column (the server's clock) ties the log's wall-clock stamps to the samplers' ``t``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

#: the message autovacuum logs at its end; kinds: vacuum, aggressive vacuum, ... to prevent wraparound
HEAD_RE = re.compile(r'automatic (?P<kind>(?:aggressive )?vacuum(?: to prevent wraparound)?|analyze) '
                     r'of table "(?P<name>[^"]+)"')
#: the auto-ANALYZE that follows a vacuum (its own log line, its own elapsed time)
ANALYZE = "analyze"
#: the default log_line_prefix '%m [%p] ' starts each line with this timestamp
STAMP_RE = re.compile(r"(?P<stamp>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)"
                      r"(?: (?P<zone>[A-Za-z]+|[+-]\d{2}(?::?\d{2})?))?")
TUPLES_RE = re.compile(r"tuples: (?P<removed>\d+) removed, (?P<remain>\d+) remain, "
                       r"(?P<not_yet>\d+) are dead but not yet removable")
#: PG 15+: the oldest XID whose deletions the run could remove, and its age when the run ended
#: ("removable cutoff: 745, which was 1004 XIDs old when operation ended"): a horizon held
#: back shows here as a cutoff at or below the holder's XID or snapshot xmin
CUTOFF_RE = re.compile(r"removable cutoff: (?P<cutoff>\d+), which was (?P<age>-?\d+) XIDs old")
ELAPSED_RE = re.compile(r"elapsed: (?P<elapsed>\d+(?:\.\d+)?) s")
UTC_NAMES = ("UTC", "GMT", "Z", "UCT")


@dataclass(frozen=True)
class Window:
    """One vacuum of ``table`` from ``start_s`` to ``end_s`` (seconds on a frame's ``t`` axis)."""

    table: str
    start_s: float
    end_s: float

    @property
    def length_s(self) -> float:
        return self.end_s - self.start_s

    def shifted(self, offset_s: float) -> Window:
        """The same window ``offset_s`` later: moves it onto another time axis."""
        return replace(self, start_s=self.start_s + offset_s, end_s=self.end_s + offset_s)


@dataclass(frozen=True)
class LoggedVacuum:
    """One autovacuum run as the server logged it. ``table`` is the bare relation name (as the
    samplers' columns name it); ``end_time`` is the line's timestamp (tz-aware): the end."""

    table: str
    end_time: datetime
    elapsed_s: float
    tuples_removed: int | None
    remain: int | None
    not_yet_removable: int | None
    qualified_name: str = ""  # "database.schema.table" as logged
    kind: str = "vacuum"  # or "aggressive vacuum", "vacuum to prevent wraparound", ...
    removable_cutoff: int | None = None  # PG 15+ (``CUTOFF_RE``); None: not logged
    cutoff_age_xids: int | None = None

    @property
    def end_epoch_s(self) -> float:
        return self.end_time.timestamp()

    @property
    def start_epoch_s(self) -> float:
        return self.end_epoch_s - self.elapsed_s


def parse_stamp(stamp: str, zone: str | None) -> datetime:
    """A log timestamp as a tz-aware datetime. A named zone other than UTC (log_timezone comes
    from initdb's environment) is read as this machine's local zone: the server runs here."""
    moment = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f" if "." in stamp else "%Y-%m-%d %H:%M:%S")
    if zone is None or zone.upper() in UTC_NAMES:
        return moment.replace(tzinfo=UTC)
    if zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        return moment.replace(tzinfo=timezone(offset if zone[0] == "+" else -offset))
    return moment.astimezone()


def bare_name(name: str) -> str:
    """``db.schema.table`` / ``schema.table`` / ``"Quoted"`` -> the relation name alone."""
    return name.rsplit(".", 1)[-1].strip('"')


def dead_tuple_counts(text: str) -> tuple[int | None, int | None, int | None]:
    """(removed, remain, not yet removable) from a vacuum report (the log's or VACUUM VERBOSE's)."""
    match = TUPLES_RE.search(text)
    if match is None:
        return None, None, None
    return int(match["removed"]), int(match["remain"]), int(match["not_yet"])


def removable_cutoff(text: str) -> tuple[int | None, int | None]:
    """(removable cutoff XID, its age in XIDs) from a vacuum report; (None, None) before PG 15."""
    match = CUTOFF_RE.search(text)
    return (None, None) if match is None else (int(match["cutoff"]), int(match["age"]))


def log_entries(text: str) -> list[str]:
    """The log split into entries: a line plus the tab-indented lines continuing it."""
    entries: list[str] = []
    for line in text.splitlines():
        if line.startswith(("\t", " ")) and entries:
            entries[-1] += "\n" + line
        else:
            entries.append(line)
    return entries


def parse_entry(entry: str) -> LoggedVacuum | None:
    """One log entry as a LoggedVacuum, or None (another message, or no timestamp to place it)."""
    head = HEAD_RE.search(entry)
    stamp = STAMP_RE.search(entry, 0, head.start()) if head else None
    if head is None or stamp is None:
        return None
    elapsed = ELAPSED_RE.search(entry)
    removed, remain, not_yet = dead_tuple_counts(entry)
    cutoff, age = removable_cutoff(entry)
    return LoggedVacuum(table=bare_name(head["name"]), end_time=parse_stamp(stamp["stamp"], stamp["zone"]),
                        elapsed_s=float(elapsed["elapsed"]) if elapsed else 0.0,
                        tuples_removed=removed, remain=remain, not_yet_removable=not_yet,
                        qualified_name=head["name"], kind=head["kind"], removable_cutoff=cutoff,
                        cutoff_age_xids=age)


def parse_autovacuum_log(text: str, analyze: bool = False) -> list[LoggedVacuum]:
    """Every autovacuum run logged in ``text``; with ``analyze`` only the auto-ANALYZE runs
    (kind "analyze") instead. Other messages are skipped."""
    return [vacuum for entry in log_entries(text)
            if (vacuum := parse_entry(entry)) is not None and (vacuum.kind == ANALYZE) == analyze]


def epoch_origin(frame: Any) -> float:
    """The epoch second at ``t = 0`` of a sampler frame, from its ``epoch_s`` column (median of
    ``epoch_s - t`` over the rows that have it: robust to one slow sample)."""
    if frame is None or "epoch_s" not in getattr(frame, "columns", ()):
        raise ValueError("the frame has no epoch_s column: record it with VacuumSampler")
    offsets = (frame["epoch_s"] - frame["t"]).dropna()
    if offsets.empty:
        raise ValueError("the frame's epoch_s column is empty: no VacuumSampler row was recorded")
    return float(offsets.median())


def windows_from_log(logged: list[LoggedVacuum], frame: Any = None, origin_epoch_s: float | None = None,
                     tables: list[str] | None = None) -> list[Window]:
    """The logged runs as windows on ``frame``'s ``t`` axis (or relative to ``origin_epoch_s``,
    an epoch second that becomes 0), only ``tables`` if given, in time order."""
    origin = origin_epoch_s if origin_epoch_s is not None else epoch_origin(frame)
    chosen = [v for v in logged if tables is None or v.table in tables]
    windows = [Window(v.table, v.start_epoch_s - origin, v.end_epoch_s - origin) for v in chosen]
    return sorted(windows, key=lambda w: (w.start_s, w.table))


def server_log_path(server: Any) -> Path:
    """The log file of a project Postgres: a started server's ``log_path``, or from an Endpoint's
    ``extra["data_dir"]`` (PostgresServer writes ``<data_dir>/postgres.log``)."""
    if hasattr(server, "log_path"):
        return Path(server.log_path)
    return Path(server.extra["data_dir"]) / "postgres.log"


class ServerLogTail:
    """What a log file gained since this object was made (the log is appended across runs)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def read(self) -> str:
        """The text written since construction (not advancing: call again for a longer view)."""
        if not self.path.exists():
            return ""
        with open(self.path, "rb") as log:
            log.seek(self.offset)
            return log.read().decode("utf-8", errors="replace")
