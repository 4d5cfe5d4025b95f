"""Exporting nothing never replaces the committed results."""

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.record.export import export_runs


def test_an_empty_source_is_an_error_and_the_committed_runs_stay(tmp_path, monkeypatch):
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path / "data"))
    from pglimits_core.record.export import committed_runs_root

    committed = committed_runs_root("full")
    committed.mkdir(parents=True)
    (committed / "keep.txt").write_text("committed")
    with pytest.raises(PGLimitsError, match="no finished full runs"):
        export_runs("full", source=tmp_path / "nothing-here")
    assert (committed / "keep.txt").read_text() == "committed"
