"""The three search systems, set up with equal care, and the exact query each one runs.

- **pg_gin**: a ``tsvector`` column generated with the ``simple`` configuration, a GIN index on
  it, ``to_tsquery('simple', 'a & b')``; ranked = ``ORDER BY ts_rank(tsv, q) DESC, id LIMIT 10``
  (the id only breaks ties, so answers are reproducible), unranked = ``@@`` with ``LIMIT 10``.
  Every connection runs the query as a prepared statement with ``plan_cache_mode =
  force_generic_plan`` (why: ``PLAN_CACHE_MODES``).
  Load: COPY per batch (each its own transaction), then ``CREATE INDEX``, ``VACUUM ANALYZE``
  (flushes the GIN pending list; recorded) and a CHECKPOINT so no point inherits the load's
  dirty pages.
- **elasticsearch / opensearch** (identical requests, byte for byte): 1 shard, 0 replicas,
  refresh off during the load, request cache off, a custom analyzer = ``standard`` tokenizer +
  ``lowercase`` (the tokens Postgres's ``simple`` reads on this corpus); ``_bulk`` per batch,
  then refresh, force-merge to 1 segment, refresh interval back to an explicit 1 s (an explicit
  value also keeps the shard from going search-idle), flush. The query: ``match`` with
  ``operator: and`` (the default is OR: a study that forgets it compares different queries),
  ``size: 10`` by BM25, ``_source: false`` (ids only, as Postgres returns), and
  ``track_total_hits`` as the variant says (default 10,000, the engines' own default: Lucene may
  stop counting past it, and skips non-competitive documents, while Postgres ranks every match).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.search.http import HttpError, KeepAliveHttp
from pglimits_core.workloads.search.queries import K

SERVERS = {"pg_gin": "postgres", "elasticsearch": "elasticsearch", "opensearch": "opensearch"}
LUCENE = ("elasticsearch", "opensearch")
DEFAULT_TRACK_TOTAL_HITS = 10_000  # what both engines count up to unless told otherwise
DEFAULTS: dict[str, dict[str, Any]] = {
    "pg_gin": {"ranked": True, "plan_cache_mode": "force_generic_plan"},
    "elasticsearch": {"operator": "and", "track_total_hits": DEFAULT_TRACK_TOTAL_HITS},
    "opensearch": {"operator": "and", "track_total_hits": DEFAULT_TRACK_TOTAL_HITS},
}

# --- Postgres -----------------------------------------------------------------------------------
#: how each connection plans the prepared query. The study's default is the generic plan (a GIN
#: bitmap scan whatever the terms): on these sub-millisecond queries planning each execution costs
#: about as much as running it, and the server default (auto: custom plans for the first five
#: executions, then whichever its cost estimate prefers, per connection) makes the plan depend on
#: which queries a connection happened to run first. ``auto`` stays available as a variant.
PLAN_CACHE_MODES = ("auto", "force_custom_plan", "force_generic_plan")
TABLE, GIN_INDEX, META_TABLE = "search_docs", "search_docs_tsv", "search_meta"
CREATE_TABLE = (f"CREATE TABLE {TABLE} (id integer PRIMARY KEY, body text NOT NULL, "
                "tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED)")
CREATE_INDEX = f"CREATE INDEX {GIN_INDEX} ON {TABLE} USING gin (tsv)"
RANKED_SQL = (f"SELECT id FROM {TABLE}, to_tsquery('simple', %s) AS q WHERE tsv @@ q "
              f"ORDER BY ts_rank(tsv, q) DESC, id LIMIT {K}")
UNRANKED_SQL = f"SELECT id FROM {TABLE} WHERE tsv @@ to_tsquery('simple', %s) LIMIT {K}"
COUNT_SQL = f"SELECT count(*) FROM {TABLE} WHERE tsv @@ to_tsquery('simple', %s)"

# --- Elasticsearch / OpenSearch -----------------------------------------------------------------
INDEX = "search_corpus"
ANALYZER = "plain"
INDEX_SETTINGS = {
    "number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1",
    "requests": {"cache": {"enable": False}},
    "analysis": {"analyzer": {ANALYZER: {"type": "custom", "tokenizer": "standard", "filter": ["lowercase"]}}},
}
REFRESH_AFTER_LOAD = "1s"


@dataclass(frozen=True)
class SearchVariant:
    """One system with its options; ``label`` names it in every table and chart."""

    label: str
    system: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def server(self) -> str:
        return SERVERS[self.system]

    @property
    def lucene(self) -> bool:
        return self.system in LUCENE

    @property
    def ranked(self) -> bool:
        return bool(self.options.get("ranked", True))

    def query_template(self) -> str:
        """The measured query as its system receives it (terms as placeholders)."""
        if self.lucene:
            return lucene_body("<a>", "<b>", self.options["operator"], self.options["track_total_hits"]).decode()
        return RANKED_SQL if self.ranked else UNRANKED_SQL


def variant(system: str, label: str | None = None, **options: Any) -> SearchVariant:
    """A validated variant; an unknown system or option is one line naming the fix."""
    if system not in DEFAULTS:
        raise PGLimitsError(f"search: unknown system {system!r}", f"use one of: {', '.join(DEFAULTS)}")
    unknown = sorted(set(options) - set(DEFAULTS[system]))
    if unknown:
        raise PGLimitsError(f"search: {system} has no option {unknown[0]!r}",
                            f"{system} takes: {', '.join(DEFAULTS[system])}")
    resolved = {**DEFAULTS[system], **options}
    if resolved.get("plan_cache_mode", "auto") not in PLAN_CACHE_MODES:
        raise PGLimitsError(f"search: plan_cache_mode {resolved['plan_cache_mode']!r}", f"use one of: {', '.join(PLAN_CACHE_MODES)}")
    if "operator" in resolved and resolved["operator"] not in ("and", "or"):
        raise PGLimitsError(f"search: operator {resolved['operator']!r}", "use and (or: only to show the check catches it)")
    return SearchVariant(label or default_label(system, resolved), system, resolved)


def default_label(system: str, options: dict[str, Any]) -> str:
    if system == "pg_gin":
        mode = options.get("plan_cache_mode", DEFAULTS["pg_gin"]["plan_cache_mode"])
        extras = [f"plan_cache_mode={mode}"] if mode != DEFAULTS["pg_gin"]["plan_cache_mode"] else []
        return " ".join(["pg_gin ranked" if options.get("ranked", True) else "pg_gin unranked", *extras])
    extras = [f"{k}={v}" for k, v in sorted(options.items())
              if v != DEFAULTS[system][k]]
    return " ".join([system, *extras])


def pg_terms(a: str, b: str) -> str:
    """The ``to_tsquery`` text of a 2-term AND."""
    return f"{a} & {b}"


def lucene_body(a: str, b: str, operator: str = "and",
                track_total_hits: int | bool = DEFAULT_TRACK_TOTAL_HITS) -> bytes:
    """The ``_search`` body of a 2-term query, the same bytes for both engines."""
    return json.dumps({"query": {"match": {"body": {"query": f"{a} {b}", "operator": operator}}},
                       "size": K, "_source": False, "track_total_hits": track_total_hits},
                      separators=(",", ":")).encode()


def lucene_count_body(a: str, b: str, operator: str = "and") -> bytes:
    return json.dumps({"query": {"match": {"body": {"query": f"{a} {b}", "operator": operator}}}},
                      separators=(",", ":")).encode()


# --- loading ------------------------------------------------------------------------------------
def copy_chunks(texts: Iterable[str], batch: int) -> list[bytes]:
    """COPY text-format rows ``id<TAB>body``; the corpus's words need no escaping."""
    chunks, rows = [], []
    for doc_id, text in enumerate(texts):
        rows.append(f"{doc_id}\t{text}\n")
        if len(rows) == batch:
            chunks.append("".join(rows).encode())
            rows = []
    return chunks + (["".join(rows).encode()] if rows else [])


def bulk_chunks(texts: Iterable[str], batch: int) -> list[bytes]:
    """``_bulk`` NDJSON bodies of ``batch`` documents each (id = the document's number)."""
    chunks, lines = [], []
    for doc_id, text in enumerate(texts):
        lines.append(f'{{"index":{{"_id":"{doc_id}"}}}}\n{{"body":"{text}"}}\n')
        if len(lines) == batch:
            chunks.append("".join(lines).encode())
            lines = []
    return chunks + (["".join(lines).encode()] if lines else [])


def pg_session(conn: Any, options: dict[str, Any]) -> None:
    """A connection's session settings for ``options`` (its plan_cache_mode; recorded in every
    manifest with the variant's options)."""
    mode = options.get("plan_cache_mode", DEFAULTS["pg_gin"]["plan_cache_mode"])
    if mode not in PLAN_CACHE_MODES:
        raise PGLimitsError(f"search: plan_cache_mode {mode!r}", f"use one of: {', '.join(PLAN_CACHE_MODES)}")
    conn.execute(f"SET plan_cache_mode = {mode}")


class PostgresGin:
    """The study process's side of Postgres: load, check, count, top-10, sizes."""

    system = "pg_gin"

    def __init__(self, url: str, options: dict[str, Any] | None = None):
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)
        pg_session(self.conn, options or {})

    def close(self) -> None:
        self.conn.close()

    def loaded(self, dataset: str, documents: int) -> bool:
        exists = self.conn.execute("SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
                                   (META_TABLE, GIN_INDEX)).fetchone()[0]
        if not exists:
            return False
        row = self.conn.execute(f"SELECT dataset, documents FROM {META_TABLE}").fetchone()
        return row == (dataset, documents)

    def load(self, chunks: list[bytes], dataset: str, documents: int) -> dict[str, Any]:
        """Drop, create, COPY (one transaction per chunk), build the GIN index, VACUUM ANALYZE,
        CHECKPOINT; each step timed."""
        conn = self.conn
        conn.execute(f"DROP TABLE IF EXISTS {META_TABLE}")
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        conn.execute(CREATE_TABLE)
        times = {}
        started = time.perf_counter()
        for chunk in chunks:
            with conn.cursor().copy(f"COPY {TABLE} (id, body) FROM STDIN") as copy:
                copy.write(chunk)
        times["bulk_load_s"] = time.perf_counter() - started
        times["index_build_s"] = _timed(lambda: conn.execute(CREATE_INDEX))
        times["vacuum_analyze_s"] = _timed(lambda: conn.execute(f"VACUUM ANALYZE {TABLE}"))
        times["settle_s"] = _timed(lambda: conn.execute("CHECKPOINT"))
        conn.execute(f"CREATE TABLE {META_TABLE} (dataset text, documents integer)")
        conn.execute(f"INSERT INTO {META_TABLE} VALUES (%s, %s)", (dataset, documents))
        return times

    def documents(self) -> int:
        return self.conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]

    def sizes(self) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT pg_relation_size(%s), pg_table_size(%s), pg_indexes_size(%s), pg_total_relation_size(%s)",
            (GIN_INDEX, TABLE, TABLE, TABLE)).fetchone()
        pending = self.gin_pending()
        return {"index_bytes": row[0], "table_bytes": row[1], "all_indexes_bytes": row[2],
                "total_bytes": row[3], "gin_pending_pages": pending, "segments": None}

    def gin_pending(self) -> int | None:
        """Pages in the GIN pending list (0 after VACUUM), read from the metapage when the
        pgstattuple extension can be created; None otherwise."""
        try:
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
            return self.conn.execute("SELECT pending_pages FROM pgstatginindex(%s)", (GIN_INDEX,)).fetchone()[0]
        except Exception:  # the extension is optional: the VACUUM ANALYZE is recorded either way
            return None

    def count(self, a: str, b: str) -> int:
        return self.conn.execute(COUNT_SQL, (pg_terms(a, b),)).fetchone()[0]

    def top(self, a: str, b: str, ranked: bool) -> list[int]:
        return [row[0] for row in self.conn.execute(RANKED_SQL if ranked else UNRANKED_SQL, (pg_terms(a, b),))]

    def describe(self) -> dict[str, Any]:
        """The schema and index as the server has them, and the planner settings that matter."""
        indexdef = self.conn.execute("SELECT pg_get_indexdef(%s::regclass)", (GIN_INDEX,)).fetchone()[0]
        options = self.conn.execute("SELECT reloptions FROM pg_class WHERE relname = %s", (GIN_INDEX,)).fetchone()[0]
        settings = dict(self.conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN ('plan_cache_mode', "
            "'default_text_search_config', 'gin_fuzzy_search_limit', 'gin_pending_list_limit', 'work_mem', "
            "'max_parallel_workers_per_gather', 'jit')").fetchall())
        return {"table": CREATE_TABLE, "index": indexdef, "index_options": options or [], "settings": settings}


class LuceneIndex:
    """The study process's side of Elasticsearch or OpenSearch: identical requests to both."""

    def __init__(self, system: str, url: str):
        self.system = system
        self.http = KeepAliveHttp(url).connect()

    def close(self) -> None:
        self.http.close()

    def loaded(self, dataset: str, documents: int) -> bool:
        try:
            mapping = self.http.json("GET", f"/{INDEX}/_mapping")
        except HttpError:
            return False
        meta = mapping.get(INDEX, {}).get("mappings", {}).get("_meta", {})
        return meta == {"dataset": dataset, "documents": documents, "loaded": True}

    def load(self, chunks: list[bytes], dataset: str, documents: int) -> dict[str, Any]:
        """Drop, create (refresh off), ``_bulk`` per chunk, then refresh + force-merge to one
        segment (the index build), refresh interval back on, flush; each step timed."""
        http = self.http
        http.json("DELETE", f"/{INDEX}", ok=(200, 404))
        http.json("PUT", f"/{INDEX}", {"settings": {"index": INDEX_SETTINGS},
                                       "mappings": {"_meta": {"dataset": dataset, "documents": documents, "loaded": False},
                                                    "properties": {"body": {"type": "text", "analyzer": ANALYZER}}}})
        times = {}
        started = time.perf_counter()
        for chunk in chunks:
            answer = http.json("POST", f"/{INDEX}/_bulk", chunk)
            if answer.get("errors"):
                first = next(item for item in answer["items"] if item["index"].get("error"))
                raise PGLimitsError(f"{self.system} bulk load failed: {first['index']['error']}",
                                    "check the engine's log")
        times["bulk_load_s"] = time.perf_counter() - started

        def build() -> None:
            http.json("POST", f"/{INDEX}/_refresh")
            http.json("POST", f"/{INDEX}/_forcemerge?max_num_segments=1")
            http.json("POST", f"/{INDEX}/_refresh")

        times["index_build_s"] = _timed(build)

        def settle() -> None:
            http.json("PUT", f"/{INDEX}/_settings", {"index": {"refresh_interval": REFRESH_AFTER_LOAD}})
            http.json("POST", f"/{INDEX}/_flush")

        times["settle_s"] = _timed(settle)
        http.json("PUT", f"/{INDEX}/_mapping", {"_meta": {"dataset": dataset, "documents": documents, "loaded": True}})
        return times

    def documents(self) -> int:
        return self.http.json("GET", f"/{INDEX}/_count")["count"]

    def sizes(self) -> dict[str, Any]:
        stats = self.http.json("GET", f"/{INDEX}/_stats/store,segments")["indices"][INDEX]["primaries"]
        return {"index_bytes": stats["store"]["size_in_bytes"], "table_bytes": None, "all_indexes_bytes": None,
                "total_bytes": stats["store"]["size_in_bytes"], "gin_pending_pages": None,
                "segments": stats["segments"]["count"]}

    def count(self, a: str, b: str, operator: str = "and") -> int:
        return self.http.json("POST", f"/{INDEX}/_count", lucene_count_body(a, b, operator))["count"]

    def search(self, a: str, b: str, operator: str = "and",
               track_total_hits: int | bool = DEFAULT_TRACK_TOTAL_HITS) -> dict[str, Any]:
        """The measured query's answer: ids and ``hits.total`` as the engine reports it."""
        answer = self.http.json("POST", f"/{INDEX}/_search", lucene_body(a, b, operator, track_total_hits))
        hits = answer["hits"]
        return {"ids": [int(hit["_id"]) for hit in hits["hits"]], "total": hits.get("total")}

    def describe(self) -> dict[str, Any]:
        """Index settings and mapping as the engine reports them (after the load)."""
        settings = self.http.json("GET", f"/{INDEX}/_settings")[INDEX]["settings"]["index"]
        mapping = self.http.json("GET", f"/{INDEX}/_mapping")[INDEX]["mappings"]
        keep = ("number_of_shards", "number_of_replicas", "refresh_interval", "requests", "analysis",
                "translog", "codec")
        return {"index": INDEX, "settings": {k: v for k, v in settings.items() if k in keep},
                "mapping": mapping}


def _timed(step) -> float:
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def open_engine(system: str, url: str, options: dict[str, Any] | None = None) -> PostgresGin | LuceneIndex:
    """The study process's connection to ``system`` (with the variant's session ``options``)."""
    return PostgresGin(url, options) if system == "pg_gin" else LuceneIndex(system, url)
