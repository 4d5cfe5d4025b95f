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
