"""Executed notebooks, with their outputs, are exported beside the runs; one too big is named."""

from __future__ import annotations

import json

from pglimits_core.record import export

BAR = "queue study: {pct:>3}%|#         | {n}/184 [00:{n:02d}<03:00, 1.00s/it, churn: pgmq]"


def stderr(text: str) -> dict:
    return {"name": "stderr", "output_type": "stream", "text": text}


def stdout(text: str) -> dict:
    return {"name": "stdout", "output_type": "stream", "text": text}


def test_a_progress_bar_folds_into_its_last_line_where_it_started_and_the_rest_stays():
    bars = [stderr(BAR.format(pct=n // 2, n=n) + "\r") for n in range(1, 40)]
    warning = stderr("UserWarning: something a reader must see\n")
    table = {"output_type": "execute_result", "data": {"text/plain": "table"}}
    cell = {"cell_type": "code", "outputs": [stdout("Showing ...\n"), *bars[:20], warning, *bars[20:], stderr("\n"), table]}
    folded = export.without_progress({"cells": [cell, {"cell_type": "markdown"}]})
    assert folded["cells"][0]["outputs"] == [stdout("Showing ...\n"), stderr([BAR.format(pct=19, n=39) + "\n"]),
                                             warning, table]
    assert folded["cells"][1] == {"cell_type": "markdown"}


def test_a_cell_without_a_progress_bar_is_left_as_it_was():
    cell = {"cell_type": "code", "outputs": [stderr("\n"), stderr(["Traceback: 12% of 3/4 [x]\n"]), stdout("1\n")]}
    assert export.without_progress({"cells": [json.loads(json.dumps(cell))]}) == {"cells": [cell]}


def test_a_notebook_is_written_as_jupyter_writes_it():
    assert export.notebook_text({"b": 1, "a": ["é"]}) == '{\n "a": [\n  "é"\n ],\n "b": 1\n}\n'


def test_executed_notebooks_are_copied_and_an_oversized_one_is_named_not_copied(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path))
    executed = tmp_path / "executed" / "full"
    executed.mkdir(parents=True)
    (executed / "10-queue.ipynb").write_text('{"cells": []}')
    (executed / "20-search.ipynb").write_text(json.dumps({"cells": [], "metadata": {"pad": "x" * 64}}))
    monkeypatch.setattr(export, "NOTEBOOK_LIMIT_BYTES", 32)
    assert export.export_notebooks("full") == ["10-queue.ipynb"]
    copied = export.profile_results_dir("full") / "notebooks"
    assert json.loads((copied / "10-queue.ipynb").read_text()) == {"cells": []}
    assert not (copied / "20-search.ipynb").exists()
    assert "20-search.ipynb" in capsys.readouterr().out
