"""vegeta (Go, ``github.com/tsenart/vegeta/v12``, built by ``make setup`` into ``.tools/bin``)
sending given HTTP requests.

Targets are written in vegeta's JSON format (``-format=json``: one object per line, the body
base64-encoded), so every request can carry a different body, byte for byte the one the
harness sends; vegeta sends them in the file's order, round robin over its workers.

Two loops. ``rate=None``: closed loop, ``-rate=0 -max-workers=N -workers=N``: N workers, each
sends its next request when the last answer is in. ``rate=R``: open loop, ``-rate=R/1s`` with
up to N workers — but vegeta measures each latency from the moment it *sent* the request, not
from the moment the schedule meant it to go out, so a server that falls behind shows up as a
rate below the offered one rather than as queueing in the latencies (the record says so in
``tool_loop``). Every request is logged (``-output`` then ``vegeta encode --to csv``: start
time ns, status, latency ns), so the record has exact histograms, a per-second series and the
warm-up cut out by time, as pgbench's has. A non-2xx answer (or a transport error, status 0)
is a failed request and fails the run. ``-max-body=0``: answers are read in full (keep-alive
needs it) but not kept.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pglimits_core.config import PROJECT_ROOT
from pglimits_core.load.tools.process import (
    ToolCommand,
    ToolLoad,
    ToolProcess,
    end_margin,
    require_binary,
)
from pglimits_core.load.tools.result import sampled_step, tool_run_result

FIX = "make setup (needs go: it builds vegeta into .tools/bin)"
MODULE = "github.com/tsenart/vegeta/v12"
TARGETS, RESULTS, RESULTS_CSV = "targets.json", "results.bin", "results.csv"


@dataclass(frozen=True)
class HttpTarget:
    """One request exactly as sent: ``headers`` name -> value (one value each)."""

    method: str
    url: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    def json_line(self) -> str:
        """The target in vegeta's JSON target format."""
        target: dict[str, Any] = {"method": self.method, "url": self.url}
        if self.body:
            target["body"] = base64.b64encode(self.body).decode()
        if self.headers:
            target["header"] = {name: [value] for name, value in self.headers.items()}
        return json.dumps(target, separators=(",", ":"))


def vegeta_binary() -> str:
    """``.tools/bin/vegeta`` of the repository (``make setup``), else one on PATH."""
    local = PROJECT_ROOT / ".tools" / "bin" / "vegeta"
    if local.is_file():
        return require_binary("vegeta", str(local), FIX)
    import shutil

    return require_binary("vegeta", shutil.which("vegeta") or str(local), FIX)


def vegeta_version(binary: str) -> str:
    """The module version in the binary's Go build info (``go install`` leaves ``vegeta
    -version`` empty; the build info always names the module version it was built from)."""
    data = Path(binary).read_bytes()
    match = re.search(rb"mod\t" + re.escape(MODULE.encode()) + rb"\t(v[0-9][^\t\n]*)", data)
    return match.group(1).decode().lstrip("v") if match else "unknown"


def attack_argv(binary: str, workers: int, seconds: float, rate: int | None) -> list[str]:
    loop = ["-rate=0", f"-max-workers={workers}"] if rate is None else [f"-rate={int(rate)}/1s",
                                                                       f"-max-workers={workers}"]
    return [binary, "attack", "-format=json", f"-targets={TARGETS}", *loop, f"-workers={workers}",
            f"-duration={_go_seconds(seconds)}", "-max-body=0", "-keepalive=true", "-timeout=60s",
            f"-output={RESULTS}"]


def encode_argv(binary: str) -> list[str]:
    return [binary, "encode", "--to", "csv", f"--output={RESULTS_CSV}", RESULTS]


def _go_seconds(seconds: float) -> str:
    """A Go duration: ``3s``, ``1.5s``."""
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{seconds:g}s"


def parse_results(text: str) -> tuple[list[tuple[int, int, int]], int, str | None]:
    """``([(start ns, status, latency ns) of each 2xx request], failed, first failure)`` from
    ``vegeta encode --to csv`` (no header; columns: timestamp, code, latency, ..., error, ...)."""
    samples, failed, first = [], 0, None
    for row in csv.reader(text.splitlines()):
        if len(row) < 6:
            continue
        start, code, latency, error = int(row[0]), int(row[1]), int(row[2]), row[5]
        if 200 <= code < 300 and not error:
            samples.append((start, code, latency))
        else:
            failed += 1
            first = first or f"HTTP {code}{': ' + error if error else ''}"
    return samples, failed, first


def relative_samples(samples: list[tuple[int, int, int]]) -> list[tuple[float, int]]:
    """(completion s since the first request's start, latency µs) per request."""
    if not samples:
        return []
    begin = min(start for start, _, _ in samples)
    return [((start + latency - begin) / 1e9, max(1, round(latency / 1000))) for start, _, latency in samples]


class VegetaLoad(ToolLoad):
    """``targets`` round robin for ``warmup_s + duration_s`` seconds with ``workers`` workers,
    closed loop (``rate=None``) or open loop at ``rate`` requests/s."""

    tool = "vegeta"

    def __init__(self, targets: list[HttpTarget], workers: int, duration_s: float, warmup_s: float = 0,
                 rate: int | None = None, op: str = "request", binary: str | None = None):
        if not targets:
            raise ValueError("vegeta needs at least one target")
        self.binary = binary or vegeta_binary()
        self.version = vegeta_version(self.binary)
        self.targets, self.workers, self.rate, self.op = list(targets), int(workers), rate, op
        self.duration_s, self.warmup_s = float(duration_s), float(warmup_s)
        self.client_cores = os.cpu_count() or 1  # a Go program: its goroutines run on every core

    def measured_offsets(self) -> tuple[float, float]:
        """One command: its warm-up, then the measured seconds, ended a little early
        (``TOOL_END_MARGIN_S``) so the closing read finds the tool still running."""
        return float(self.warmup_s), float(self.warmup_s + self.duration_s) - end_margin(self.duration_s)

    def commands(self) -> list[ToolCommand]:
        seconds = self.warmup_s + self.duration_s
        return [ToolCommand("attack", attack_argv(self.binary, self.workers, seconds, self.rate),
                            timeout_s=seconds + 120),
                ToolCommand("encode", encode_argv(self.binary), timeout_s=600)]

    @property
    def loop(self) -> str:
        return ("closed" if self.rate is None else
                f"open at {self.rate}/s (latency from vegeta's own send time, not the intended start)")

    def describe(self) -> dict[str, Any]:
        first = self.targets[0]
        return {**super().describe(), "tool_loop": self.loop, "tool_targets": len(self.targets),
                "tool_target_example": {"method": first.method, "url": first.url, "headers": first.headers,
                                        "body": first.body.decode(errors="replace")}}

    def write_targets(self, directory: Path) -> None:
        (directory / TARGETS).write_text("".join(t.json_line() + "\n" for t in self.targets))

    def run(self, process: ToolProcess) -> Any:
        self.write_targets(process.cwd)
        attack, encode = self.commands()
        output = process.run(attack)
        error = output.failure()
        samples, failed, first = [], 0, None
        if error is None:
            error = process.run(encode).failure()
        if error is None:
            samples, failed, first = parse_results((process.cwd / RESULTS_CSV).read_text())
        step = sampled_step(self.op, self.workers, relative_samples(samples), self.warmup_s, self.duration_s,
                            failed=failed)
        error = error or (f"vegeta: {failed} failed requests (first: {first})" if failed else None)
        if not samples and error is None:
            error = "vegeta logged no request"
        reported = {"requests": len(samples) + failed, "ok": len(samples), "failed": failed}
        result = tool_run_result("tool", [step], error, params={"tool_reported": reported,
                                                                "tool_elapsed_s": round(output.elapsed_s, 3)})
        return result if self.rate is None else _open_loop(result, self.rate)


def _open_loop(result: Any, rate: int) -> Any:
    """The roles of an open-loop run marked so (offered rate), for the summary's achieved rate."""
    result.roles = [dataclasses.replace(role, loop="open", offered_rate=float(rate)) for role in result.roles]
    return result
