"""A nearly full disk stops a run before anything is written (no half-written record)."""

import shutil
from collections import namedtuple

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.record import rundir
from pglimits_core.record.manifest import new_manifest

Usage = namedtuple("Usage", "total used free")


def test_nearly_full_disk_refuses_to_create_a_run(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: Usage(10 << 30, (10 << 30) - (200 << 20), 200 << 20))
    manifest = new_manifest("r1", "queue", "pg_delete")
    with pytest.raises(PGLimitsError, match="disk nearly full: 200 MiB free") as info:
        rundir.RunDirectory.create(manifest, tmp_path / "runs")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_enough_space_creates_the_partial_run(tmp_path):
    run = rundir.RunDirectory.create(new_manifest("r2", "queue", "pg_delete"), tmp_path)
    assert run.path.name == "r2.partial" and (run.path / "manifest.json").exists()
