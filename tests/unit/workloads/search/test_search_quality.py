"""The search cells carry each side's top-10 agreement with exact BM25 beside its speed (rows
canned from the committed AMD EPYC ranking table); it never changes a verdict."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.decision import Cell, row, words
from pglimits_core.analysis.verdict import SERVER, Side
from pglimits_core.workloads.search.quality import overlap, with_quality

RANKING = pd.DataFrame(
    [("pg_gin ranked vs exact BM25", group, queries, value) for group, queries, value in
     (("frequent", 100, 0.163), ("medium", 100, 1.0), ("rare", 100, 1.0), ("all", 420, 0.605))]
    + [("opensearch vs exact BM25", group, queries, value) for group, queries, value in
       (("frequent", 100, 0.96), ("medium", 100, 1.0), ("rare", 100, 1.0))],
    columns=["compared", "group", "queries", "mean overlap@10"])


def cell(stream):
    return Cell("search", f"capacity, {stream} stream", "none", Side("pg_gin ranked", 183.0, SERVER, (180.0, 190.0)),
                Side("opensearch", 1148.0, SERVER, (1100.0, 1200.0)), "capacity", unit="queries/s")


def test_a_class_stream_reads_its_class_and_the_mixed_stream_every_class_weighted():
    assert overlap(RANKING, "pg_gin ranked", "frequent") == (0.163, 100)
    mean, queries = overlap(RANKING, "pg_gin ranked", "mixed")
    assert queries == 300 and abs(mean - (0.163 + 1 + 1) / 3) < 1e-9
    assert overlap(RANKING, "elasticsearch", "rare") is None


def test_each_side_figure_carries_its_agreement_and_the_verdict_does_not_move():
    plain, (shown,) = cell("frequent"), with_quality([cell("frequent")], RANKING)
    assert words(shown) == words(plain)
    out = row(shown)
    assert out["postgres_figure"] == "183 queries/s; top 10 = exact BM25's 0.16 (mean overlap, 100 queries)"
    assert out["dedicated_figure"] == "1,148 queries/s; top 10 = exact BM25's 0.96 (mean overlap, 100 queries)"
    assert with_quality([cell("frequent")], None) == [plain]
