"""Postgres with a BM25 extension as search systems: their registry entries and statements, the
sides the verdicts and the decision matrix pair them on, and the extensions table and README line,
from synthetic rows and from records that lack them ("not measured in these records")."""

from __future__ import annotations

import pandas as pd
import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.postgres_ext import LICENCES
from pglimits_core.workloads.search.decision import decisions
from pglimits_core.workloads.search.extensions import NOT_MEASURED, extension_lines, extension_table
from pglimits_core.workloads.search.head_to_head import family, is_engine, on_postgres
from pglimits_core.workloads.search.systems.registry import server_for, system_class
from pglimits_core.workloads.search.tables import all_tables, crossover_table, peak_table, qps_table
from pglimits_core.workloads.search.variant import variant
from tests.unit.workloads.search.test_search_tables import client_row


def test_the_extensions_run_on_postgres_17_as_a_side_of_their_own():
    assert server_for("pg_search") == server_for("pg_textsearch") == "postgres_ext"
    assert [family(s) for s in ("pg_gin", "pg_search", "pg_textsearch", "opensearch")] == \
        ["postgres", "extension", "extension", "engine"]
    assert not on_postgres("pg_search") and not is_engine("pg_search") and family("unknown") == ""
    assert {system_class(s).extension for s in ("pg_search", "pg_textsearch")} <= set(LICENCES)
    assert LICENCES["pg_search"].startswith("AGPL-3.0")


def test_the_statements_are_the_extensions_own_and_options_are_checked():
    assert variant("pg_search").label == "pg_search"
    assert variant("pg_search", plan_cache_mode="auto").label == "pg_search plan_cache_mode=auto"
    search = variant("pg_search").query_template()
    assert "&&& %s" in search and "ORDER BY pdb.score(id) DESC, id LIMIT 10" in search
    assert "<@> to_bm25query(%s" in variant("pg_textsearch").query_template()
    with pytest.raises(PGLimitsError, match="no option 'ranked'"):
        variant("pg_search", ranked=False)
    with pytest.raises(PGLimitsError, match="plan_cache_mode"):
        variant("pg_search", plan_cache_mode="sometimes")


def rows_for(stream: str = "mixed", experiment: str = "throughput") -> pd.DataFrame:
    return pd.DataFrame([client_row("a", "pg_gin ranked", stream, 8, 1000.0, experiment=experiment),
                         client_row("b", "opensearch", stream, 8, 5000.0, experiment=experiment),
                         client_row("c", "pg_search", stream, 8, 3000.0, experiment=experiment)])


def test_an_extension_is_judged_against_gin_and_is_never_the_engine_side_of_a_decision():
    crossover = crossover_table(rows_for("bucket 1", "crossover"))
    verdicts = crossover.set_index("variant")
    assert pd.notna(verdicts.loc["pg_search"].verdict_class)  # does the BM25 index beat GIN?
    assert pd.isna(verdicts.loc["pg_gin ranked"].verdict_class)
    cells = decisions({"crossover": crossover})
    assert len(cells) == 1 and (cells[0].postgres.system, cells[0].dedicated.system) == ("pg_gin ranked", "opensearch")


def test_the_extensions_table_sets_each_beside_gin_and_the_faster_engine():
    throughput = qps_table(rows_for())
    correctness = pd.DataFrame([{"variant": "pg_search", "queries checked": 50, "disagreed": 0, "first problem": ""},
                                {"variant": "pg_textsearch", "queries checked": 50, "disagreed": 50,
                                 "first problem": "x y: count 9 != exact 2"}])
    frame = pd.DataFrame([{"system": "pg_search", "server_version": "17.9"}])
    table = extension_table(frame, {"peak": peak_table(throughput), "throughput": throughput,
                                    "correctness": correctness}).set_index("system")
    search = table.loc["pg_search"]
    assert search.Postgres == "PostgreSQL 17.9" and search.correctness.startswith("measured: 0 of 50")
    assert (search["vs pg_gin ranked"], search["vs faster engine"]) == ("×3.00", "×0.60")
    assert "(opensearch)" in search["mixed: faster engine"]
    assert table.loc["pg_textsearch"].correctness.startswith("declined: 50 of 50 disagreed (x y: count 9")
    line = "".join(extension_lines(table.reset_index()))
    assert "pg_search (AGPL-3.0, PostgreSQL 17.9)" in line and "×0.60 the faster engine's" in line


def test_records_without_the_extensions_say_so_and_never_crash():
    tables = all_tables(pd.DataFrame(columns=["run_id", "experiment", "variant", "system"]))
    extensions = tables["extensions"]
    assert set(extensions.system) == {"pg_search", "pg_textsearch"}
    assert set(extensions.correctness) == {NOT_MEASURED}
    line = "".join(extension_lines(extensions))
    assert f"pg_search (AGPL-3.0): {NOT_MEASURED}" in line and "PG 16" in line
