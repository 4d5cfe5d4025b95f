"""A vector row whose engine's own C tool ran faster than the harness (beyond the tie band) at the
same client count, at an ef the row was read between, was capped by the harness: the matched table
and the decision matrix read it as a floor (its load the limit). A tool point at another ef says
nothing about the row."""

import pandas as pd

from pglimits_core.workloads.vectors.matched import harness_capped_by_ceiling


def _matched() -> pd.DataFrame:
    # rows read between ef 16 and 32, 32 and 64, 128 and 320
    return pd.DataFrame({"variant": ["pgvector hnsw", "pgvector hnsw", "qdrant hnsw", "qdrant hnsw", "qdrant hnsw"],
                         "clients": [1, 8, 1, 1, 1], "ef_low": [32, 32, 16, 32, 128], "ef": [64, 64, 32, 64, 320],
                         "client_bound": [False, False, False, False, False]})


def _ceiling(**over) -> pd.DataFrame:
    return pd.DataFrame({"variant": ["pgvector hnsw", "pgvector hnsw", "qdrant hnsw", "qdrant hnsw"],
                         "clients": [1, 8, 1, 1], "ef": [64, 64, 64, 320],
                         "tool_over_harness": [1.73, 1.10, 1.49, 0.93], **over})


def test_a_faster_tool_marks_only_the_rows_read_between_its_ef():
    marked = harness_capped_by_ceiling(_matched(), _ceiling())
    # qdrant at 1 client: the tool at ef 64 was x1.49 the harness -> the 32-64 row only; ef 16-32
    # was never measured by the tool, and at ef 320 the tool was within the band
    assert marked["client_bound"].tolist() == [True, False, False, True, False]
    assert marked["limit"].tolist() == ["load", "neither", "neither", "load", "neither"]


def test_without_a_ceiling_the_samplers_verdict_stands():
    assert harness_capped_by_ceiling(_matched(), None)["client_bound"].tolist() == [False] * 5
    assert harness_capped_by_ceiling(_matched(), pd.DataFrame())["client_bound"].tolist() == [False] * 5


def test_a_capped_row_is_a_floor_and_its_server_cpu_is_only_printed():
    from pglimits_core.workloads.vectors.matched import side

    row = pd.Series({"variant": "pgvector hnsw", "qps": 650.0, "qps_min": 600.0, "qps_max": 700.0, "client_bound": True,
                     "server_cpu_us_per_query": 2607.1, "server_cpu_us_min": 2607.1, "server_cpu_us_max": 2607.1,
                     "server_cpu_runs": 1})
    found = side(row)
    assert (found.limit, found.floor, found.value_range) == ("load", True, (600.0, 700.0))
    assert found.server_cpu_us_per_op == 2607.1
