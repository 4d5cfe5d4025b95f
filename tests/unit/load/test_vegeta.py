"""vegeta as a tool load, without a server: the command lines it runs (closed and open loop), the
JSON targets (every request its own body, byte for byte), the per-request CSV it reads back into
a run result (warm-up cut by time, non-2xx as failures), its version from the binary's build
info, and a missing binary as one line naming the fix."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools import HttpTarget, VegetaLoad
from pglimits_core.load.tools import vegeta as vegeta_module
from pglimits_core.load.tools.process import ToolOutput
from pglimits_core.load.tools.vegeta import parse_results, relative_samples, vegeta_version

BUILD_INFO = b"\x00path\tgithub.com/tsenart/vegeta/v12\nmod\tgithub.com/tsenart/vegeta/v12\tv12.13.0\th1:abc=\n"
START_NS = 1_700_000_000_000_000_000


@pytest.fixture
def fake_binary(tmp_path: Path) -> str:
    path = tmp_path / "vegeta"
    path.write_bytes(b"\x7fELF fake" + BUILD_INFO)
    path.chmod(0o755)
    return str(path)


def targets() -> list[HttpTarget]:
    return [HttpTarget("POST", "http://127.0.0.1:9200/idx/_search", f'{{"q":"{word}"}}'.encode(),
                       {"Content-Type": "application/json"}) for word in ("alpha", "beta")]


def csv_row(offset_ms: float, code: int, latency_ms: float, error: str = "") -> str:
    start = START_NS + int(offset_ms * 1e6)
    return f"{start},{code},{int(latency_ms * 1e6)},10,20,{error},,,0,POST,http://x/,\n"


def test_version_comes_from_the_binary_build_info(fake_binary):
    assert vegeta_version(fake_binary) == "12.13.0"


def test_closed_loop_commands_and_record(fake_binary):
    load = VegetaLoad(targets(), workers=4, duration_s=3, warmup_s=1, binary=fake_binary)
    attack, encode = (command.argv for command in load.commands())
    assert attack[:2] == [fake_binary, "attack"]
    assert {"-format=json", "-rate=0", "-max-workers=4", "-workers=4", "-duration=4s", "-max-body=0"} <= set(attack)
    assert encode == [fake_binary, "encode", "--to", "csv", "--output=results.csv", "results.bin"]
    described = load.describe()
    assert described["tool"] == "vegeta" and described["tool_version"] == "12.13.0"
    assert described["tool_loop"] == "closed" and described["tool_targets"] == 2
    assert [c["argv"] for c in described["tool_commands"]] == [attack, encode]


def test_open_loop_says_where_latency_is_measured_from(fake_binary):
    load = VegetaLoad(targets(), workers=8, duration_s=1.5, warmup_s=0.5, rate=300, binary=fake_binary)
    attack = load.commands()[0].argv
    assert "-rate=300/1s" in attack and "-max-workers=8" in attack and "-duration=2s" in attack
    assert load.describe()["tool_loop"].startswith("open at 300/s") and "send time" in load.describe()["tool_loop"]


def test_targets_carry_each_body_byte_for_byte(fake_binary, tmp_path):
    load = VegetaLoad(targets(), workers=1, duration_s=1, binary=fake_binary)
    load.write_targets(tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "targets.json").read_text().splitlines()]
    assert [base64.b64decode(line["body"]) for line in lines] == [t.body for t in targets()]
    assert lines[0]["method"] == "POST" and lines[0]["header"] == {"Content-Type": ["application/json"]}


def test_results_csv_parsing_counts_non_2xx_as_failed():
    text = csv_row(0, 200, 2) + csv_row(1, 500, 1) + csv_row(2, 0, 5, "connection refused") + csv_row(3, 204, 1)
    samples, failed, first = parse_results(text)
    assert [code for _, code, _ in samples] == [200, 204] and failed == 2 and first == "HTTP 500"
    # completion time since the first start, latency in µs
    assert relative_samples(samples) == [(0.002, 2000), (0.004, 1000)]


def fake_process(tmp_path: Path, rows: str, returncode: int = 0):
    class Process:
        cwd = tmp_path

        def run(self, command):
            if command.step == "encode":
                (tmp_path / "results.csv").write_text(rows)
            return ToolOutput(command, returncode, "", "boom" if returncode else "", 0.0, 2.0)

    return Process()


def test_run_cuts_the_warmup_by_time_and_fails_on_any_error(fake_binary, tmp_path):
    rows = "".join(csv_row(ms, 200, 1) for ms in range(0, 2000, 10))  # 200 requests over 2 s
    load = VegetaLoad(targets(), workers=2, duration_s=1, warmup_s=1, binary=fake_binary)
    result = load.run(fake_process(tmp_path, rows))
    assert result.status == "complete" and result.error is None
    counts = {phase: c["ops"] for (_, _, phase), c in result.counts.items()}
    assert counts == {"warmup": 100, "measure": 100} and result.roles[0].loop == "closed"
    failing = VegetaLoad(targets(), workers=2, duration_s=1, warmup_s=1, rate=100, binary=fake_binary)
    failed = failing.run(fake_process(tmp_path, rows + csv_row(1500, 503, 1)))
    assert failed.status == "failed" and "1 failed requests (first: HTTP 503)" in failed.error
    assert failed.roles[0].loop == "open" and failed.roles[0].offered_rate == 100
    crashed = load.run(fake_process(tmp_path, rows, returncode=1))
    assert crashed.status == "failed" and "exited 1" in crashed.error


def test_a_missing_binary_is_one_line_naming_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(vegeta_module, "PROJECT_ROOT", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PGLimitsError) as caught:
        VegetaLoad(targets(), workers=1, duration_s=1)
    assert "\n" not in str(caught.value) and "vegeta not found" in str(caught.value)
    assert "make setup" in str(caught.value) and "go" in str(caught.value)
