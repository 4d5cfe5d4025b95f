"""The report embeds the figures a notebook already wrote from the same records, and draws them
again when any is missing or older than a record."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pandas as pd

from pglimits_core.analysis.outputs import drawn_charts, written_figures

TABLES = {"t": pd.DataFrame({"qps": [1.0, 2.0]}), "empty": pd.DataFrame({"qps": [None]})}
WORKLOAD = SimpleNamespace(charts=[SimpleNamespace(name="w-qps", table="t", needs="qps"),
                                   SimpleNamespace(name="w-none", table="empty", needs="qps")])


def record(tmp_path, mtime: float) -> dict:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text("{}")
    os.utime(run / "manifest.json", (mtime, mtime))
    return {"path": run, "manifest": {}, "summary": None}


def figure(directory, name: str, mtime: float) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.png").write_bytes(b"png")
    os.utime(directory / f"{name}.png", (mtime, mtime))


def test_only_charts_whose_table_has_data_are_drawn():
    assert drawn_charts(WORKLOAD, TABLES) == ["w-qps"]


def test_figures_newer_than_every_record_are_reused(tmp_path):
    records = [record(tmp_path, 1000.0)]
    figure(tmp_path / "fig", "w-qps", 2000.0)
    assert written_figures(WORKLOAD, TABLES, records, tmp_path / "fig") == {"w-qps": [tmp_path / "fig" / "w-qps.png"]}


def test_a_figure_older_than_a_record_or_missing_is_drawn_again(tmp_path):
    records = [record(tmp_path, 3000.0)]
    figure(tmp_path / "fig", "w-qps", 2000.0)
    assert written_figures(WORKLOAD, TABLES, records, tmp_path / "fig") is None
    assert written_figures(WORKLOAD, TABLES, records, tmp_path / "nothing") is None
