"""`pglimits datasets build/verify` on the test profile: built once, reused, damage is caught."""

from __future__ import annotations

import os
import subprocess
import sys

from pglimits_core.config import PROJECT_ROOT


def pglimits(*args: str, data_dir) -> subprocess.CompletedProcess:
    env = {**os.environ, "PGLIMITS_DATA_DIR": str(data_dir), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "pglimits_core", *args], capture_output=True, text=True,
                          env=env, cwd=PROJECT_ROOT, timeout=120, stdin=subprocess.DEVNULL)


def test_build_reuse_verify_and_a_flipped_byte(tmp_path):
    first = pglimits("datasets", "build", "--profile", "test", data_dir=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("built in") >= 2 and "2,000 documents" in first.stdout

    again = pglimits("datasets", "build", "--profile", "test", data_dir=tmp_path)
    assert again.returncode == 0 and again.stdout.count("reused") == 2 and "generating" not in again.stdout

    assert pglimits("datasets", "verify", "--profile", "test", data_dir=tmp_path).returncode == 0

    base = next((tmp_path / "datasets").glob("vectors-*")) / "base.npy"
    data = bytearray(base.read_bytes())
    data[-1] ^= 0xFF
    base.write_bytes(bytes(data))
    damaged = pglimits("datasets", "verify", "--profile", "test", data_dir=tmp_path)
    assert damaged.returncode == 2
    assert damaged.stderr.strip().count("\n") == 0 and "base.npy: sha256 differs" in damaged.stderr
    assert f"rm -rf {base.parent}" in damaged.stderr and "corpus-" not in damaged.stderr.split("fix:")[1]


def test_unknown_profile_is_a_one_line_error(tmp_path):
    result = pglimits("datasets", "build", "--profile", "huge", data_dir=tmp_path)
    assert result.returncode == 2 and "unknown profile 'huge'" in result.stderr
    assert not (tmp_path / "datasets").exists()
