"""What each vector engine's C load tool runs for the ``ceiling`` experiment: the harness's very
query, with the harness's query vectors.

pgvector (pgbench, ``-M prepared``): the harness's statement (``systems.pgvector.query_sql``)
with its vector parameter replaced by a subselect of the stored query vector —
``ORDER BY embedding <#> (SELECT v FROM vector_ceiling_queries WHERE id = :i) LIMIT 10`` after
``\\set i random(1, n)`` — the table filled from the dataset's queries, the very vectors the
harness sends. ``hnsw.ef_search`` is set per connection by ``PGOPTIONS=-c hnsw.ef_search=<ef>``
in the tool's environment (no extra statement per transaction); the plan check opens its
connection the same way, reads the setting back and EXPLAINs the statement both as a custom
plan (a literal id) and as the generic plan pgbench's prepared statement switches to: both must
scan the HNSW index, or the point fails with the plan in its reason (a subselect the planner
cannot fold would turn the search into a sort of every row).

Qdrant (vegeta, HTTP): ``POST /collections/<name>/points/search`` with the body the harness's
gRPC ``SearchPoints`` carries — the query vector, ``limit`` k, ``params.hnsw_ef`` = ef,
``exact: false``, no payload — one target per query of the dataset; one search is sent and its
answer checked before the run.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np

from pglimits_core.errors import PGLimitsError
from pglimits_core.load.tools import PgbenchLoad
from pglimits_core.workloads.vectors.systems.pgvector import INDEX, query_sql

QUERY_TABLE = "vector_ceiling_queries"
PLAN_STATEMENT = "vector_ceiling_plan"


# --- pgvector + pgbench ----------------------------------------------------------------------
def ceiling_sql(k: int, vector_id: str = ":i") -> str:
    """The harness's statement, the query vector read from ``QUERY_TABLE`` by ``vector_id``."""
    statement = query_sql(k)
    if statement.count("%b") != 1:
        raise ValueError(f"expected one vector parameter in {statement!r}")
    return statement.replace("%b", f"(SELECT v FROM {QUERY_TABLE} WHERE id = {vector_id})")


def pgbench_script(k: int, queries: int) -> str:
    """One search per transaction, a random stored query vector each (ids 1..queries)."""
    return f"\\set i random(1, {int(queries)})\n{ceiling_sql(k)};\n"


def ef_options(ef: int) -> str:
    return f"-c hnsw.ef_search={int(ef)}"


class EfPgbenchLoad(PgbenchLoad):
    """``PgbenchLoad`` whose every connection starts with ``options`` (``PGOPTIONS`` in the
    tool's environment; the record says so in ``tool_env``)."""

    def __init__(self, *args: Any, options: str, **kwargs: Any):
        self.options = options
        super().__init__(*args, **kwargs)

    def commands(self):
        return [replace(c, env={**c.env, "PGOPTIONS": self.options}) for c in super().commands()]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "tool_env": {"PGOPTIONS": self.options}}


def store_queries(conn: Any, queries: np.ndarray) -> int:
    """``QUERY_TABLE`` holds query ``i`` (from 1) of the dataset, by binary COPY (an open
    psycopg connection with pgvector's types registered)."""
    conn.execute(f"DROP TABLE IF EXISTS {QUERY_TABLE}")
    conn.execute(f"CREATE TABLE {QUERY_TABLE} (id int4 PRIMARY KEY, v vector({int(queries.shape[1])}) NOT NULL)")
    with conn.cursor() as cur, cur.copy(f"COPY {QUERY_TABLE} (id, v) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int4", "vector"])
        for i, vector in enumerate(np.asarray(queries, dtype=np.float32), start=1):
            copy.write_row((i, vector))
    conn.execute(f"ANALYZE {QUERY_TABLE}")
    return len(queries)


def pgbench_plans(url: str, k: int, ef: int) -> dict[str, Any]:
    """The statement's custom and generic plans on a connection opened as pgbench's are, and the
    ``hnsw.ef_search`` that connection has; raises unless both plans scan the HNSW index."""
    import psycopg

    with psycopg.connect(url, autocommit=True, options=ef_options(ef)) as conn:
        custom = _explain(conn, f"EXPLAIN {ceiling_sql(k, '1')}")
        conn.execute(f"PREPARE {PLAN_STATEMENT}(int4) AS {ceiling_sql(k, '$1')}")
        conn.execute("SET plan_cache_mode = force_generic_plan")
        generic = _explain(conn, f"EXPLAIN EXECUTE {PLAN_STATEMENT}(1)")
        seen = conn.execute("SHOW hnsw.ef_search").fetchone()[0]
    for name, plan in (("custom", custom), ("generic", generic)):
        if INDEX not in plan:
            raise PGLimitsError(f"pgbench ceiling at ef={ef}: the {name} plan does not scan {INDEX}: "
                                f"{' | '.join(line.strip() for line in plan.splitlines()[:4])}",
                                "pass the query vector another way (a CTE or LATERAL form) so the index orders")
    if str(seen) != str(ef):
        raise PGLimitsError(f"PGOPTIONS set hnsw.ef_search={ef} but the connection shows {seen}",
                            "set it with SET in the pgbench script instead")
    return {"plan": generic, "plan_custom": custom, "ef_search_seen": str(seen),
            "query_form": "subselect of the stored query vector in ORDER BY"}


def _explain(conn: Any, statement: str) -> str:
    return "\n".join(row[0] for row in conn.execute(statement).fetchall())


# --- Qdrant + vegeta (HTTP) ------------------------------------------------------------------
def search_url(base_url: str, collection: str) -> str:
    return f"{base_url.rstrip('/')}/collections/{collection}/points/search"


def search_body(vector: np.ndarray, ef: int, k: int) -> bytes:
    """The REST search body of the harness's gRPC request: vector, k, hnsw_ef, no payload."""
    return json.dumps({"vector": [float(x) for x in np.asarray(vector, dtype=np.float32)], "limit": int(k),
                       "params": {"hnsw_ef": int(ef), "exact": False}, "with_payload": False}).encode()


def check_search(url: str, body: bytes, k: int) -> dict[str, Any]:
    """One search as vegeta will send it: it must answer k points."""
    import urllib.request

    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        answer = json.loads(response.read())
    found = len(answer.get("result") or [])
    if found != k:
        raise PGLimitsError(f"qdrant REST search answered {found} points, not {k}: {str(answer)[:200]}",
                            "check the collection is built (the sweep builds it)")
    return {"check_search_points": found, "search_url": url}
