"""A vector row whose engine's own C tool ran faster than the harness (beyond the tie band) at the
same client count was capped by the harness: the cell may not read it as decided at the server."""

import pandas as pd

from pglimits_core.workloads.vectors.decision import harness_capped_by_ceiling


def _matched() -> pd.DataFrame:
    return pd.DataFrame({"variant": ["pgvector hnsw", "pgvector hnsw", "qdrant hnsw"], "clients": [1, 8, 1],
                         "client_bound": [False, False, False]})


def test_a_faster_tool_marks_the_row_harness_capped():
    ceiling = pd.DataFrame({"variant": ["pgvector hnsw", "pgvector hnsw", "qdrant hnsw"], "clients": [1, 8, 1],
                            "tool_over_harness": [1.73, 1.10, 1.30]})
    marked = harness_capped_by_ceiling(_matched(), ceiling)
    assert marked["client_bound"].tolist() == [True, False, True]


def test_without_a_ceiling_the_samplers_verdict_stands():
    assert harness_capped_by_ceiling(_matched(), None)["client_bound"].tolist() == [False, False, False]
    assert harness_capped_by_ceiling(_matched(), pd.DataFrame())["client_bound"].tolist() == [False, False, False]
