"""The report opens on its findings: the answer in a line per workload, the capacity picture and
both scoreboards, drawn from the report's own cells."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from pglimits_core.analysis.findings import CAPTIONS, TITLE, findings_section, inline_markdown
from tests.unit.analysis.test_capacity_figure import cells


def test_generated_markdown_reads_as_html_and_nothing_else_is_markup():
    assert inline_markdown("**queue**, `box` <b> & ≥ ×2") == "<b>queue</b>, <code>box</code> &lt;b&gt; &amp; ≥ ×2"


def test_the_section_lists_a_line_per_workload_and_shows_its_pictures(tmp_path):
    placed = [replace(cell, machine="box-a") for cell in cells()]
    section = findings_section(placed, pd.DataFrame(), tmp_path / "runs", tmp_path / "figures", "box-a · git abc")
    assert section.title == TITLE
    text = " ".join(section.paragraphs)
    assert "<li><b>vectors</b>, Postgres against Qdrant" in text and "<li><b>pubsub</b>" in text
    assert [path.name for path in section.figures] == ["capacity-at-target.png", "decision-scoreboard.png"]
    assert set(CAPTIONS) >= {path.stem for path in section.figures}


def test_no_cell_no_section(tmp_path):
    assert findings_section([], pd.DataFrame(), tmp_path, tmp_path, None) is None


def test_the_report_links_a_workloads_executed_notebook_and_a_committed_one_only(tmp_path, monkeypatch):
    from pglimits_core.analysis import report

    executed = tmp_path / "executed"
    (executed / "10-queue.ipynb").parent.mkdir(parents=True)
    (executed / "10-queue.ipynb").write_text("{}")
    monkeypatch.setattr(report, "executed_dir", lambda profile: executed)
    page = tmp_path / "results" / "report.html"
    assert report.notebook_link("10-queue", "quick", page, committed=True) is None
    assert "href='../executed/10-queue.ipynb'" in report.notebook_link("10-queue", "quick", page, committed=False)
    (page.parent / "notebooks").mkdir(parents=True)
    (page.parent / "notebooks" / "10-queue.ipynb").write_text("{}")
    assert "href='notebooks/10-queue.ipynb'" in report.notebook_link("10-queue", "quick", page, committed=True)


def test_a_tile_keeps_its_scale_and_cuts_its_target_to_the_room_left():
    from pglimits_core.analysis.scoreboard import TILE_LINE_CHARS, TILE_LINES, tile_label

    label = tile_label("durability none, a process kill loses acknowledged jobs",
                       "send → claim p99 ≤ 10 ms and a long tail of words that cannot fit on the tile")
    lines = label.split("\n")
    assert len(lines) == TILE_LINES and all(len(line) <= TILE_LINE_CHARS for line in lines)
    assert " ".join(lines).startswith("durability none, a process kill loses acknowledged jobs")
    assert lines[-1].endswith("…") and tile_label("1 subscriber", "flat out") == "1 subscriber\nflat out"


def test_a_planned_point_its_sitting_never_timed_reads_as_newer_than_the_block_not_as_failed():
    from pglimits_core.analysis.report import NOT_IN_ITS_PLAN, unplanned_then

    planned = {("queue", "pg batch=1", "soak"), ("queue", "pg batch=1", "capacity"), ("search", "x", "soak")}
    timed = {("queue", "pg batch=1", "capacity")}
    assert unplanned_then("queue", timed, planned) == {("queue", "pg batch=1", "soak"): NOT_IN_ITS_PLAN}
    assert unplanned_then("queue", set(), planned) == {}  # an outcome without timings says nothing
