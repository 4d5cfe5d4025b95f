"""The report's width check: the script it adds to a page, how it reads the findings back out of
Chromium's dumped DOM, the command's exit code, and — in headless Chromium, two tiny pages (one
Chromium run each, ~2-3 s on an idle box) — that a table sticking out of the window is listed
while one that scrolls inside its own box is not, and that the report's own CSS keeps a wide
table and a wide figure inside a 1280-px window."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pandas as pd
import pytest

from pglimits_core.analysis import report_width
from pglimits_core.analysis.report_width import (
    CHROMIUM_MISSING,
    MARKER,
    check_report,
    find_chromium,
    instrumented,
    parse_findings,
)
from pglimits_core.plotting.html_report import LONG_CELL, Section, breakable, render

OVERFLOWING = """<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>
<section id='s-seed'><h2>Seed</h2><p class='caption'><b>Seed headline figures</b></p>
<div class='plain'><table><tr><td>source</td><td><div style='width:1900px'>verdict</div></td></tr></table></div>
<div style='overflow-x:auto'><div style='width:3000px'>scrolls inside its own box</div></div>
</section></body></html>"""


def dumped(found: dict) -> str:
    """What Chromium's --dump-dom prints after the script ran: the JSON as escaped text."""
    return f"<html><body><p>page</p><pre id=\"{MARKER}\">{escape(json.dumps(found), quote=False)}</pre></body></html>"


def needs_chromium() -> None:
    if find_chromium() is None:
        pytest.skip(CHROMIUM_MISSING)


def test_the_script_goes_just_before_the_end_of_the_body():
    page = instrumented("<html><body><p>x</p></body></html>")
    assert page.index("<script>") > page.index("<p>x</p>") and page.endswith("</script></body></html>")
    assert f"'{MARKER}'" in page and "document.documentElement" in page
    assert instrumented("<p>no body tag</p>").startswith("<p>no body tag</p><script>")


def test_findings_are_read_back_from_the_dumped_dom():
    item = {"element": "table.dataframe", "section": "Beside the source documents", "caption": "Seed <vs> ours",
            "text": "source figure verdict & more", "right": 1534}
    check = parse_findings(dumped({"scroll_width": 1534, "client_width": 1280, "overflows": [item],
                                   "boxed": [{**item, "right": 1900, "box": 1248}]}))
    assert check.measured and check.client_width == 1280
    assert check.overflows[0].caption == "Seed <vs> ours" and check.overflows[0].right == 1534
    lines = check.lines()
    assert len(lines) == 2 and "the page is 1534 px wide in a 1280 px window" in lines[0]
    assert "table.dataframe in 'Beside the source documents / Seed <vs> ours' reaches 1534 px > 1280 px" in lines[1]
    assert check.boxed_lines() == ["scrolls inside its box: table.dataframe in 'Beside the source documents / "
                                   "Seed <vs> ours' is 1900 px wide in a 1248 px box"]


def test_a_page_that_fits_has_no_lines():
    check = parse_findings(dumped({"scroll_width": 1280, "client_width": 1280, "overflows": []}))
    assert check.measured and check.lines() == [] and check.boxed == []


def test_a_dom_without_findings_is_an_error_not_a_pass():
    with pytest.raises(RuntimeError, match="did not run"):
        parse_findings("<html><body><p>the script never ran</p></body></html>")


def test_without_chromium_the_check_says_so_and_exits_2(tmp_path: Path, monkeypatch, capsys):
    page = tmp_path / "report.html"
    page.write_text(OVERFLOWING)
    monkeypatch.setattr(report_width, "find_chromium", lambda: None)
    assert check_report(page).reason == CHROMIUM_MISSING and not check_report(page).measured
    assert report_width.main([str(page)]) == 2
    assert CHROMIUM_MISSING in capsys.readouterr().err


def test_the_command_prints_one_line_per_overflow_and_exits_1_if_any(tmp_path: Path, monkeypatch, capsys):
    page = tmp_path / "report.html"
    page.write_text(OVERFLOWING)
    item = {"element": "table", "section": "Seed", "caption": "", "text": "verdict", "right": 1900}
    found = {"scroll_width": 1900, "client_width": 1280, "overflows": [item]}
    monkeypatch.setattr(report_width, "check_report", lambda *args: parse_findings(dumped(found)))
    assert report_width.main([str(page)]) == 1
    assert len(capsys.readouterr().out.splitlines()) == 2  # the page, then the table
    found.update(scroll_width=1280, overflows=[])
    assert report_width.main([str(page)]) == 0 and capsys.readouterr().out == ""
    assert report_width.main([str(tmp_path / "missing.html")]) == 2


def test_column_names_wrap_after_underscores_and_long_cells_are_marked_with_their_text_intact():
    long_text = "pg_delete batch=1 synchronous_commit=off [fsync periodic/batched]"
    assert len(long_text) >= LONG_CELL
    table = pd.DataFrame({"p99_ms_end_to_end": [1.5], "variant": [long_text], "n": [3]}).to_html(index=False)
    shown = breakable(table)
    assert "<th>p99_<wbr>ms_<wbr>end_<wbr>to_<wbr>end</th>" in shown
    assert f"<td class='long'>{long_text}</td>" in shown and "<td>3</td>" in shown and "<td>1.5</td>" in shown


def test_chromium_lists_the_table_sticking_out_but_not_the_box_that_scrolls(tmp_path: Path):
    needs_chromium()
    page = tmp_path / "report.html"
    page.write_text(OVERFLOWING)
    check = check_report(page)
    assert check.measured and check.client_width <= 1280 and check.scroll_width > check.client_width
    assert [(o.element, o.section, o.caption) for o in check.overflows] == [("table", "Seed", "Seed headline figures")]
    assert [b.text for b in check.boxed] == ["scrolls inside its own box"]


def test_the_report_css_keeps_a_wide_table_and_a_wide_figure_inside_the_window(tmp_path: Path):
    from PIL import Image

    needs_chromium()
    figure = tmp_path / "wide-figure.png"
    Image.new("RGB", (2400, 300), (84, 130, 53)).save(figure)
    wide = pd.DataFrame({f"column_{i}_with_a_long_name": ["redis_reliable appendfsync=always batch=10 pipeline=10"]
                         for i in range(30)})
    prose = "A path without spaces: " + "data/results/a-very-long-host-name/" * 12
    page = tmp_path / "report.html"
    page.write_text(render("T", prose, [Section("Wide", [prose], [("A wide table", wide)], [figure])]))
    check = check_report(page)
    assert check.measured and check.lines() == []
    assert [b.caption for b in check.boxed] == ["A wide table"]  # it scrolls inside its own box
