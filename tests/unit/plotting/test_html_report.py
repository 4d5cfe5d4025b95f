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
    assert page.index("<nav") < page.index("<section")
    assert f"<summary>long one ({FOLD_ROWS + 1} rows)</summary>" in page
    assert "<summary>short one" not in page and page.count("<table") == 2


def test_a_large_png_is_embedded_with_a_palette_and_a_small_one_as_drawn(tmp_path):
    """The report stays under the repository's 5 MB a file: a chart PNG over the threshold is
    re-encoded with 256 colours for embedding (the file on disk is left as drawn)."""
    import base64

    import numpy as np
    from PIL import Image

    from pglimits_core.plotting.html_report import PALETTE_ABOVE_BYTES, data_uri

    noisy = np.random.default_rng(1).integers(0, 255, size=(700, 700, 3), dtype=np.uint8)
    big, small = tmp_path / "big.png", tmp_path / "small.png"
    Image.fromarray(noisy).save(big)
    Image.fromarray(np.zeros((50, 50, 3), dtype=np.uint8)).save(small)
    assert big.stat().st_size > PALETTE_ABOVE_BYTES
    embedded = base64.b64decode(data_uri(big).split(",", 1)[1])
    assert len(embedded) < big.stat().st_size and embedded[:8] == b"\x89PNG\r\n\x1a\n"
    assert base64.b64decode(data_uri(small).split(",", 1)[1]) == small.read_bytes()


def test_the_findings_keep_their_long_table_open_and_cells_read_as_words():
    long = pd.DataFrame({"sustained": [True, False] * FOLD_ROWS, "p99_ms": [1.23456, float("nan")] * FOLD_ROWS,
                         "note": [None, "x"] * FOLD_ROWS})
    page = render("T", "intro", [Section("The decision matrix", tables=[("cells", long)], tables_open=True)])
    assert "<summary>" not in page
    cells = page[page.index("<tbody>"):]
    assert "True" not in cells and "False" not in cells and "None" not in cells and "nan" not in cells.lower()
    assert "<td>yes</td>" in cells and "<td>no</td>" in cells and "<td>1.23</td>" in cells and "<td>—</td>" in cells


def test_a_figure_is_captioned_with_what_to_see_and_named_by_its_file(tmp_path):
    from pglimits_core.plotting.html_report import figure_html

    png = tmp_path / "queue-capacity.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n")
    said = figure_html(png, "The starred rate is the capacity.")
    assert "<figcaption>The starred rate is the capacity. <code>queue-capacity</code></figcaption>" in said
    assert "<figcaption>queue-capacity</figcaption>" in figure_html(png)


def test_a_long_table_caption_shows_its_first_sentence_and_folds_the_method():
    from pglimits_core.plotting.html_report import CAPTION_CHARS, caption_html

    method = "Each point is the median of three windows, " * 8
    said = caption_html(f"Capacity per design. {method}")
    assert said.startswith("<p class='caption'><b>Capacity per design.</b></p>")
    assert "<summary>how</summary>Each point" in said and len(method) > CAPTION_CHARS
    assert caption_html("Short one. Still short.") == "<p class='caption'><b>Short one. Still short.</b></p>"


def test_a_notebook_shows_a_table_formatted_as_the_report_does(monkeypatch):
    """``view.show`` displays the report's formatting (yes / no, "—", rounded numbers), not the
    raw frame's True / None / NaN; ``view.tables`` keeps the values."""
    import IPython.display

    from pglimits_core.analysis.outputs import Outputs
    from pglimits_core.notebook import StudyView

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    table = pd.DataFrame({"sustained": [True, False], "p99_ms": [1.23456, float("nan")], "note": [None, "x"]})
    workload = type("W", (), {"charts": []})()
    view = StudyView(Outputs(workload, [], pd.DataFrame(), {"latency": table}), paths=None, source="test")
    view.show("latency")
    page = shown[0].data
    assert "<td>yes</td>" in page and "<td>no</td>" in page and "<td>1.23</td>" in page and "<td>—</td>" in page
    assert "True" not in page and "None" not in page and "nan" not in page.lower()
    assert view.tables["latency"]["sustained"].tolist() == [True, False]
