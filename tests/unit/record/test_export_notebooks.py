"""Executed notebooks, with their outputs, are exported beside the runs; one too big is named."""

from __future__ import annotations

from pglimits_core.record import export


def test_executed_notebooks_are_copied_and_an_oversized_one_is_named_not_copied(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path))
    executed = tmp_path / "executed" / "full"
    executed.mkdir(parents=True)
    (executed / "10-queue.ipynb").write_text('{"cells": []}')
    (executed / "20-search.ipynb").write_bytes(b"x" * 64)
    monkeypatch.setattr(export, "NOTEBOOK_LIMIT_BYTES", 32)
    assert export.export_notebooks("full") == ["10-queue.ipynb"]
    copied = export.profile_results_dir("full") / "notebooks"
    assert (copied / "10-queue.ipynb").read_text() == '{"cells": []}'
    assert not (copied / "20-search.ipynb").exists()
    assert "20-search.ipynb" in capsys.readouterr().out
