"""The report page a reader skims: contents first, each section's figures before its tables, a
bulk table folded under its caption."""

from __future__ import annotations

import pandas as pd

from pglimits_core.plotting.html_report import FOLD_ROWS, Section, render


def test_contents_link_every_section_and_long_tables_fold():
    short = pd.DataFrame({"x": range(3)})
    long = pd.DataFrame({"x": range(FOLD_ROWS + 1)})
    page = render("T", "intro", [Section("Queue: headline", tables=[("short one", short), ("long one", long)]),
                                 Section("What could not be run, and why")])
    assert "<a href='#s-queue-headline'>Queue: headline</a>" in page
    assert "<section id='s-what-could-not-be-run-and-why'>" in page
    assert page.index("<nav>") < page.index("<section")
    assert f"<summary>long one ({FOLD_ROWS + 1} rows)</summary>" in page
    assert "<summary>short one" not in page and page.count("<table") == 2
