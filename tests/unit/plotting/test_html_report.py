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
