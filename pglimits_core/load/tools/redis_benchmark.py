"""redis-benchmark (Debian ``redis-tools``, on PATH) running given commands, one after another.

``redis-benchmark -h H -p P -c CLIENTS -n REQUESTS -P PIPELINE --csv CMD ARG...`` per command:
closed loop only (each client sends its next request, or pipeline of them, when the last
reply is in) and totals only — requests/s and the tool's own latency percentiles, kept in the
record as reported (there is no per-request log, so no HDR histogram). One single-threaded
client process. Each command is its own step (phase) of the record.
"""

from __future__ import annotations

import csv
import io
import shutil
from typing import Any
from urllib.parse import urlparse

from pglimits_core.load.tools.process import ToolCommand, ToolLoad, ToolProcess, require_binary
from pglimits_core.load.tools.result import aggregate_step, tool_run_result

FIX = "make setup (installs redis-tools: apt-get install -y redis-tools)"


def redis_benchmark_binary() -> str:
    return require_binary("redis-benchmark", shutil.which("redis-benchmark"), FIX)


def redis_target(url: str) -> list[str]:
    """``-h host -p port`` (and ``-n db`` is not needed: the benchmark uses db 0 like the study)."""
    parsed = urlparse(url)
    return ["-h", parsed.hostname or "127.0.0.1", "-p", str(parsed.port or 6379)]


def redis_benchmark_argv(binary: str, target: list[str], clients: int, requests: int, pipeline: int,
                         command: list[str]) -> list[str]:
    return [binary, *target, "-c", str(clients), "-n", str(requests), "-P", str(pipeline), "--csv", *command]


def parse_csv(text: str) -> dict[str, Any]:
    """The one result row of ``--csv``: test, rps and the latency columns (ms) as numbers."""
    rows = [row for row in csv.reader(io.StringIO(text)) if row]
    if len(rows) < 2 or rows[0][:2] != ["test", "rps"]:
        return {}
    header, values = rows[0], rows[-1]
    parsed: dict[str, Any] = {"test": values[0]}
    for name, value in zip(header[1:], values[1:], strict=False):
        try:
            parsed[name] = float(value)
        except ValueError:
            parsed[name] = None
    return parsed


class RedisBenchmarkLoad(ToolLoad):
    """``steps``: (step name, command argv) run in order, ``requests`` each."""

    tool = "redis-benchmark"
    client_cores = 1

    def __init__(self, url: str, steps: list[tuple[str, list[str]]], clients: int, requests: int,
                 pipeline: int = 1, binary: str | None = None):
        super().__init__(binary or redis_benchmark_binary())
        self.url, self.steps, self.clients = url, steps, clients
        self.requests, self.pipeline = requests, pipeline

    def commands(self) -> list[ToolCommand]:
        target = redis_target(self.url)
        return [ToolCommand(step, redis_benchmark_argv(self.binary, target, self.clients, self.requests,
                                                       self.pipeline, command), timeout_s=600)
                for step, command in self.steps]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "tool_loop": "closed", "pipeline": self.pipeline, "requests": self.requests}

    def run(self, process: ToolProcess) -> Any:
        steps, reported, error = [], {}, None
        for command in self.commands():
            output = process.run(command)
            row = parse_csv(output.stdout)
            error = output.failure() or (None if row.get("rps") else f"redis-benchmark printed no rate: "
                                                                      f"{output.stdout.strip()[-200:]}")
            if error:
                break
            reported[command.step] = row
            steps.append(aggregate_step(command.step, command.step, self.clients, self.requests,
                                        self.requests / row["rps"]))
        return tool_run_result("tool", steps, error, params={"tool_reported": reported})
