"""pgbench (the PostgreSQL wheel's own, beside ``initdb``) running a custom script.

``pgbench -n -M prepared -f SCRIPT -c CLIENTS -j THREADS -T SECONDS -l`` against the server's
DSN, as root: pgbench is a client, only the server runs as the unprivileged OS user. Every
transaction is logged (``-l``: client, transaction number, latency µs, script, completion
epoch s + µs), so the record has exact HDR histograms, a per-second series and a warm-up cut
out by time, as a harness run has; pgbench's own summary (``tps = ... (without initial
connection time)``) is kept beside it, as reported. ``-T`` takes whole seconds. No ``-P``
progress lines: the log gives the per-second series exactly.

``rate`` (optional) makes the load open loop: ``-R rate`` (transactions/s over all clients,
Poisson-spaced by pgbench). pgbench then logs each transaction's time from its *scheduled* start
(schedule lag included, 7th log field), so the latencies are from the intended start, as the
harness's open loops measure; without ``rate`` the command is exactly the closed loop it was.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools.process import (
    ToolCommand,
    ToolLoad,
    ToolProcess,
    end_margin,
    require_binary,
)
from pglimits_core.load.tools.result import sampled_step, tool_run_result

LOG_PREFIX = "pgbench_log"
SUMMARY_PATTERNS = {
    "tps": r"tps = ([\d.]+) \(without initial connection time\)",
    "latency_average_ms": r"latency average = ([\d.]+) ms",
    "latency_stddev_ms": r"latency stddev = ([\d.]+) ms",
    "transactions": r"number of transactions actually processed: (\d+)",
    "failed_transactions": r"number of failed transactions: (\d+)",
    "initial_connection_ms": r"initial connection time = ([\d.]+) ms",
}


def pgbench_binary() -> str:
    """pgbench beside the server's own binaries (``servers.pg_install``)."""
    from pglimits_core.servers import pg_install

    try:
        path = pg_install.locate_install().tool("pgbench")
    except PGLimitsError as exc:
        raise PGLimitsError(f"pgbench not found: {exc.problem}", "make setup") from None
    return require_binary("pgbench", path, "make setup")


def connection_args(dsn: str) -> tuple[list[str], dict[str, str]]:
    """``(-h host -p port -U user dbname, env)`` from a libpq DSN or URL; a password goes in
    ``PGPASSWORD`` (the environment), never on the recorded command line."""
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(dsn)
    args = [flag_value for flag, key in (("-h", "host"), ("-p", "port"), ("-U", "user"))
            if parts.get(key) for flag_value in (flag, str(parts[key]))]
    env = {"PGPASSWORD": str(parts["password"])} if parts.get("password") else {}
    return [*args, str(parts.get("dbname") or parts.get("user") or "postgres")], env


def pgbench_argv(binary: str, connection: list[str], script: str, clients: int, threads: int,
                 seconds: int, rate: float | None = None) -> list[str]:
    paced = ["-R", f"{rate:g}"] if rate is not None else []
    return [binary, "-n", "-M", "prepared", "-f", script, "-c", str(clients), "-j", str(threads),
            "-T", str(seconds), *paced, "-l", f"--log-prefix={LOG_PREFIX}", *connection]


def parse_summary(text: str) -> dict[str, float | int]:
    """The figures of pgbench's closing summary that are present (numbers)."""
    found: dict[str, float | int] = {}
    for name, pattern in SUMMARY_PATTERNS.items():
        match = re.search(pattern, text)
        if match:
            value = match.group(1)
            found[name] = int(value) if value.isdigit() else float(value)
    return found


def parse_log_line(line: str) -> tuple[int, int | None] | None:
    """``(completion epoch µs, latency µs)`` of one ``-l`` line; latency None for a failed
    transaction ("failed"/"skipped" in pgbench 16); None for a line that is not a record."""
    fields = line.split()
    if len(fields) < 6:
        return None
    done_us = int(fields[4]) * 1_000_000 + int(fields[5])
    return (done_us, int(fields[2])) if fields[2].isdigit() else (done_us, None)


def read_logs(directory: Path) -> tuple[list[tuple[int, int]], int]:
    """Every transaction of every pgbench thread's log: ``(samples, failed)``."""
    samples, failed = [], 0
    for path in sorted(directory.glob(f"{LOG_PREFIX}.*")):
        for line in path.read_text().splitlines():
            record = parse_log_line(line)
            if record is None:
                continue
            if record[1] is None:
                failed += 1
            else:
                samples.append(record)
    return samples, failed


def relative_samples(samples: list[tuple[int, int]]) -> list[tuple[float, int]]:
    """Completion times as seconds since the run's start: the earliest transaction's start."""
    if not samples:
        return []
    start_us = min(done - latency for done, latency in samples)
    return [((done - start_us) / 1e6, latency) for done, latency in samples]


class PgbenchLoad(ToolLoad):
    """A custom script for ``warmup_s + duration_s`` seconds; each transaction moves
    ``items_per_transaction`` items (a queue claim of batch 10: ten jobs). ``rate``: open loop
    at that many transactions/s (``-R``); None: closed loop, as fast as the clients go."""

    tool = "pgbench"

    def __init__(self, dsn: str, script: str, clients: int, duration_s: int, warmup_s: int = 0,
                 items_per_transaction: int = 1, op: str = "script", threads: int | None = None,
                 binary: str | None = None, script_name: str = "script.sql", rate: float | None = None):
        super().__init__(binary or pgbench_binary())
        if rate is not None and not rate > 0:
            raise PGLimitsError(f"pgbench rate {rate} is not > 0", "give a positive transactions/s, or None")
        self.rate = rate
        self.dsn, self.script, self.script_name, self.op = dsn, script, script_name, op
        self.clients, self.duration_s, self.warmup_s = clients, int(duration_s), int(warmup_s)
        self.items_per_transaction = items_per_transaction
        self.client_cores = threads or max(1, min(clients, _cores()))

    def measured_offsets(self) -> tuple[float, float]:
        """One command: its warm-up, then the measured seconds, ended a little early
        (``TOOL_END_MARGIN_S``) so the closing read finds the tool still running."""
        return float(self.warmup_s), float(self.warmup_s + self.duration_s) - end_margin(self.duration_s)

    def commands(self) -> list[ToolCommand]:
        connection, env = connection_args(self.dsn)
        seconds = self.warmup_s + self.duration_s
        argv = pgbench_argv(self.binary, connection, self.script_name, self.clients, self.client_cores, seconds,
                            self.rate)
        return [ToolCommand("pgbench", argv, timeout_s=seconds + 120, env=env)]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "tool_scripts": {self.script_name: self.script},
                "tool_loop": "closed" if self.rate is None else "open",
                **({"tool_rate": self.rate} if self.rate is not None else {}),
                "items_per_transaction": self.items_per_transaction}

    def run(self, process: ToolProcess) -> Any:
        (process.cwd / self.script_name).write_text(self.script)
        output = process.run(self.commands()[0])
        samples, failed = read_logs(process.cwd)
        step = sampled_step(self.op, self.clients, relative_samples(samples), self.warmup_s, self.duration_s,
                            self.items_per_transaction, failed)
        reported = {**parse_summary(output.stdout), "logged_transactions": len(samples), "logged_failed": failed}
        error = output.failure() or (f"pgbench: {failed} failed transactions" if failed else None)
        if not samples and error is None:
            error = "pgbench logged no transaction"
        return tool_run_result("tool", [step], error, params={"tool_reported": reported,
                                                              "tool_elapsed_s": round(output.elapsed_s, 3)})


def _cores() -> int:
    import os

    return os.cpu_count() or 1
