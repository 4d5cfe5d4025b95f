"""Footprint cells: the smaller side is ahead only when its largest figure is below the other's
smallest by the tie band; Postgres's memory is a range (PSS to PSS + its files), so a dedicated
PSS inside it decides nothing; a heap the study sets is shown, never judged (sizes canned from the
committed AMD EPYC build and load tables)."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.decision import (
    DEDICATED_WINS,
    NO_DIFFERENCE,
    NOT_DECIDED,
    POSTGRES_AHEAD,
    margin,
    row,
    words,
)
from pglimits_core.experiments.footprint_cells import Footprint, footprint_cell, footprint_outcome
from pglimits_core.workloads.search.footprint import footprint_decisions as search_footprint
from pglimits_core.workloads.vectors.footprint import footprint_decisions as vectors_footprint


def test_the_smaller_side_wins_only_beyond_the_band_from_end_to_end():
    assert footprint_outcome(Footprint("pg", 318.5), Footprint("os", 86.9))[0] == DEDICATED_WINS
    assert footprint_outcome(Footprint("pg", 100.0), Footprint("q", 130.0))[0] == POSTGRES_AHEAD
    assert footprint_outcome(Footprint("pg", 100.0), Footprint("q", 120.0))[0] == NO_DIFFERENCE
    # a range reaching into the other's figure: neither ahead nor a tie
    said, shown = footprint_outcome(Footprint("pg", 300.0, 1_000.0, "PSS to PSS + files"), Footprint("q", 500.0))
    assert said.startswith(NOT_DECIDED) and "300–1,000 MiB (PSS to PSS + files)" in said and shown == "—"


def test_a_range_decides_only_by_its_far_end():
    said, shown = footprint_outcome(Footprint("pg", 200.0, 390.0, "range"), Footprint("q", 500.0))
    assert said == POSTGRES_AHEAD and shown.startswith("Postgres ×1.28 smaller")
    assert footprint_outcome(Footprint("pg", 200.0, 410.0, "range"), Footprint("q", 500.0))[0].startswith(NOT_DECIDED)


def test_a_cell_is_a_size_never_judged_on_rate_nor_kept_undecided_by_short_windows():
    cell = footprint_cell("search", "footprint, 200,000 documents", "on disk", Footprint("pg_gin", 318.5),
                          Footprint("opensearch", 86.9), "load")
    assert words(cell) == DEDICATED_WINS and cell.window_s is None  # no window: a size is a state
    shown = row(cell)
    assert shown["postgres_figure"] == "318 MiB" and shown["dedicated_figure"] == "87 MiB"
    assert shown["margin"].startswith("dedicated ×3.67 smaller") and shown["class"].startswith("the smaller footprint")


def test_a_missing_side_says_why_and_a_set_heap_is_never_judged():
    missing = footprint_cell("vectors", "s", "memory", Footprint("pg", 500.0), None, "writes", missing="not read")
    assert words(missing) == f"{NOT_DECIDED}: not read" and margin(missing) == "—"
    heap = footprint_cell("search", "s", "memory", Footprint("pg", 500.0, 800.0, "r"), Footprint("os", 4_432.0),
                          "writes", unjudged="OpenSearch's PSS is mostly the heap this study sets")
    assert words(heap) == f"{NOT_DECIDED}: OpenSearch's PSS is mostly the heap this study sets"
    assert row(heap)["dedicated_figure"] == "4,432 MiB"


BUILD = pd.DataFrame([  # the committed AMD EPYC build table (table_mib: pg_table_size)
    {"variant": "pgvector hnsw", "rows": 200_000, "index_mib": 390.6, "table_mib": 331.0},
    {"variant": "qdrant hnsw", "rows": 200_000, "index_mib": 306.2, "table_mib": None},
    {"variant": "qdrant hnsw + filter payload index", "rows": 200_000, "index_mib": 360.8, "table_mib": None}])
WRITES = pd.DataFrame([
    {"variant": "pgvector hnsw", "write_pct_per_min": 1, "server_pss_mib_after_cleanup": 800.0},
    {"variant": "pgvector hnsw", "write_pct_per_min": 10, "server_pss_mib_after_cleanup": 950.0},
    {"variant": "qdrant hnsw", "write_pct_per_min": 1, "server_pss_mib_after_cleanup": 600.0},
    {"variant": "qdrant hnsw", "write_pct_per_min": 10, "server_pss_mib_after_cleanup": 700.0}])


def test_vectors_counts_postgres_table_and_index_against_qdrant_segments_and_reads_memory_at_the_lowest_rate():
    disk, memory = vectors_footprint({"build": BUILD, "writes": WRITES})
    assert disk.scale == "footprint, 200,000 vectors" and row(disk)["postgres_figure"] == "722 MiB"
    assert words(disk) == DEDICATED_WINS  # 721.6 against 306.2: ×2.36
    assert "1 %/min point" in memory.target
    # both read their files through the page cache: Postgres 800 to 800 + 721.6 MiB against
    # Qdrant's 600 to 600 + 306.2: 906 × 1.25 is above 800, so neither is ahead by the band
    assert words(memory).startswith(NOT_DECIDED) and row(memory)["postgres_figure"].startswith("800–1,522 MiB")
    assert row(memory)["dedicated_figure"].startswith("600–906 MiB")
    smaller = WRITES.assign(server_pss_mib_after_cleanup=[2_000.0, 2_000.0, 300.0, 300.0])
    assert words(vectors_footprint({"build": BUILD, "writes": smaller})[1]) == DEDICATED_WINS  # 606 × 1.25 < 2,000


def test_vectors_memory_without_the_writes_experiment_is_not_decided_and_says_why():
    disk, memory = vectors_footprint({"build": BUILD})
    assert words(memory).startswith(NOT_DECIDED) and "writes experiment" in words(memory)
    assert vectors_footprint({"build": BUILD[BUILD.variant != "qdrant hnsw"]}) == []


LOAD = pd.DataFrame([
    {"system": "pg_gin", "documents": 200_000, "table + index MiB (all on disk)": 318.5, "JVM heap": None},
    {"system": "opensearch", "documents": 200_000, "table + index MiB (all on disk)": 86.9, "JVM heap": "4g"}])


def test_search_on_disk_is_decided_and_its_memory_shown_never_judged():
    disk, memory = search_footprint({"load": LOAD, "writes": pd.DataFrame([
        {"variant": "pg_gin ranked", "write_pct_per_min": 1, "server_pss_mib_after_cleanup": 560.0},
        {"variant": "opensearch", "write_pct_per_min": 1, "server_pss_mib_after_cleanup": 4_500.0}])})
    assert words(disk) == DEDICATED_WINS and disk.scale == "footprint, 200,000 documents"
    assert words(memory).startswith(NOT_DECIDED) and "(4g, pre-touched)" in words(memory)
    assert row(memory)["postgres_figure"].startswith("560–878 MiB")
    assert words(search_footprint({"load": LOAD})[1]).startswith(f"{NOT_DECIDED}: the writes experiment")
