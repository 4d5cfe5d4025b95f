"""**elasticsearch / opensearch**: the two Lucene engines, one class, identical requests byte for byte.

Why one class with the system name as a parameter: both engines speak the same HTTP API for
everything the study asks (index settings, ``_bulk``, refresh, force-merge, ``_search``,
``_count``, ``_stats``), and the comparison is only fair if they get the same bytes; two files
could drift apart. The name picks the server (``registry.SERVER_FOR``), the vendor client of the
product check and the name in records and errors.

Setup: 1 shard, 0 replicas, refresh off during the load, request cache off, a custom analyzer =
``standard`` tokenizer + ``lowercase`` (the tokens Postgres's ``simple`` reads on this corpus);
``_bulk`` per batch, then refresh, force-merge to 1 segment, refresh interval back to an explicit
1 s (an explicit value also keeps the shard from going search-idle), flush. The query: ``match``
with ``operator: and`` (the default is OR: a study that forgets it compares different queries),
``size: 10`` by BM25, ``_source: false`` (ids only, as Postgres returns), and
``track_total_hits`` as the variant says (default 10,000, the engines' own default: Lucene may
stop counting past it, and skips non-competitive documents, while Postgres ranks every match).
The requests go through ``workloads.search.http`` (why not the vendor clients: its docstring).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.search.http import HttpError, KeepAliveHttp
from pglimits_core.workloads.search.queries import K
from pglimits_core.workloads.search.systems.base import SearchSystem

DEFAULT_TRACK_TOTAL_HITS = 10_000  # what both engines count up to unless told otherwise
INDEX = "search_corpus"
ANALYZER = "plain"
INDEX_SETTINGS = {
    "number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1",
    "requests": {"cache": {"enable": False}},
    "analysis": {"analyzer": {ANALYZER: {"type": "custom", "tokenizer": "standard", "filter": ["lowercase"]}}},
}
REFRESH_AFTER_LOAD = "1s"
#: the index settings a load record shows
DESCRIBED_SETTINGS = ("number_of_shards", "number_of_replicas", "refresh_interval", "requests", "analysis",
                      "translog", "codec")


def lucene_body(a: str, b: str, operator: str = "and",
                track_total_hits: int | bool = DEFAULT_TRACK_TOTAL_HITS) -> bytes:
    """The ``_search`` body of a 2-term query, the same bytes for both engines."""
    return json.dumps({"query": {"match": {"body": {"query": f"{a} {b}", "operator": operator}}},
                       "size": K, "_source": False, "track_total_hits": track_total_hits},
                      separators=(",", ":")).encode()


def lucene_count_body(a: str, b: str, operator: str = "and") -> bytes:
    return json.dumps({"query": {"match": {"body": {"query": f"{a} {b}", "operator": operator}}}},
                      separators=(",", ":")).encode()


def meta(dataset: str, documents: int, loaded: bool) -> dict[str, Any]:
    """What the index mapping's ``_meta`` says about its load (``loaded`` reads it back)."""
    return {"dataset": dataset, "documents": documents, "loaded": loaded}


class LuceneIndex(SearchSystem):
    """Elasticsearch or OpenSearch (``system``), one index ``search_corpus``."""

    defaults = {"operator": "and", "track_total_hits": DEFAULT_TRACK_TOTAL_HITS}
    chunk_format = "bulk"
    reports_total = True
    jvm_heap = True

    def check_options(self) -> None:
        if self.options["operator"] not in ("and", "or"):
            raise PGLimitsError(f"search: operator {self.options['operator']!r}",
                                "use and (or: only to show the check catches it)")

    def default_label(self) -> str:
        extras = [f"{k}={v}" for k, v in sorted(self.options.items()) if v != self.defaults[k]]
        return " ".join([self.system, *extras])

    def body(self, a: str, b: str) -> bytes:
        """The measured query's ``_search`` body for the variant's options."""
        return lucene_body(a, b, self.options["operator"], self.options["track_total_hits"])

    def query_template(self) -> str:
        return self.body("<a>", "<b>").decode()

    @staticmethod
    def encode_chunks(texts: Iterable[str], batch: int) -> list[bytes]:
        """``_bulk`` NDJSON bodies of ``batch`` documents each (id = the document's number)."""
        chunks, lines = [], []
        for doc_id, text in enumerate(texts):
            lines.append(f'{{"index":{{"_id":"{doc_id}"}}}}\n{{"body":"{text}"}}\n')
            if len(lines) == batch:
                chunks.append("".join(lines).encode())
                lines = []
        return chunks + (["".join(lines).encode()] if lines else [])

    # --- connection -------------------------------------------------------------------------
    def open(self, url: str) -> LuceneIndex:
        self.http = KeepAliveHttp(url).connect()
        return self

    def close(self) -> None:
        self.http.close()

    def check_product(self, url: str) -> None:
        """The vendor's own client accepts the server (elasticsearch-py refuses OpenSearch)."""
        from pglimits_core.servers.search_clients import search_client_for

        search_client_for(self.system, url).close()

    # --- load and index -----------------------------------------------------------------------
    def loaded(self, dataset: str, documents: int) -> bool:
        try:
            mapping = self.http.json("GET", f"/{INDEX}/_mapping")
        except HttpError:
            return False
        return mapping.get(INDEX, {}).get("mappings", {}).get("_meta", {}) == meta(dataset, documents, True)

    def reset(self, dataset: str, documents: int) -> None:
        """Drop, then create with refresh off (the load says it is incomplete until ``mark_loaded``)."""
        self.http.json("DELETE", f"/{INDEX}", ok=(200, 404))
        self.http.json("PUT", f"/{INDEX}", {"settings": {"index": INDEX_SETTINGS},
                                            "mappings": {"_meta": meta(dataset, documents, False),
                                                         "properties": {"body": {"type": "text", "analyzer": ANALYZER}}}})

    def bulk(self, chunk: bytes) -> None:
        answer = self.http.json("POST", f"/{INDEX}/_bulk", chunk)
        if answer.get("errors"):
            first = next(item for item in answer["items"] if item["index"].get("error"))
            raise PGLimitsError(f"{self.system} bulk load failed: {first['index']['error']}",
                                "check the engine's log")

    def build_steps(self) -> list[tuple[str, Callable[[], Any]]]:
        """The index build (refresh, force-merge to one segment, refresh), then the settling
        (refresh interval back on, flush)."""
        return [("index_build_s", self._merge), ("settle_s", self._settle)]

    def _merge(self) -> None:
        self.http.json("POST", f"/{INDEX}/_refresh")
        self.http.json("POST", f"/{INDEX}/_forcemerge?max_num_segments=1")
        self.http.json("POST", f"/{INDEX}/_refresh")

    def _settle(self) -> None:
        self.http.json("PUT", f"/{INDEX}/_settings", {"index": {"refresh_interval": REFRESH_AFTER_LOAD}})
        self.http.json("POST", f"/{INDEX}/_flush")

    def mark_loaded(self, dataset: str, documents: int) -> None:
        self.http.json("PUT", f"/{INDEX}/_mapping", {"_meta": meta(dataset, documents, True)})

    def documents(self) -> int:
        return self.http.json("GET", f"/{INDEX}/_count")["count"]

    def sizes(self) -> dict[str, Any]:
        stats = self.http.json("GET", f"/{INDEX}/_stats/store,segments")["indices"][INDEX]["primaries"]
        return {"index_bytes": stats["store"]["size_in_bytes"], "table_bytes": None, "all_indexes_bytes": None,
                "total_bytes": stats["store"]["size_in_bytes"], "gin_pending_pages": None,
                "segments": stats["segments"]["count"]}

    def describe(self) -> dict[str, Any]:
        """Index settings and mapping as the engine reports them (after the load)."""
        settings = self.http.json("GET", f"/{INDEX}/_settings")[INDEX]["settings"]["index"]
        mapping = self.http.json("GET", f"/{INDEX}/_mapping")[INDEX]["mappings"]
        return {"index": INDEX, "settings": {k: v for k, v in settings.items() if k in DESCRIBED_SETTINGS},
                "mapping": mapping}

    # --- writes -------------------------------------------------------------------------------
    def rewrite(self, doc_id: int, body: str) -> None:
        """An index request of the same document under its id (the translog fsynced before the
        reply under the default ``request`` durability, which ``write_state`` reads back): Lucene marks the old version deleted
        in its segment and writes the new one to a new segment, searchable at the next refresh
        (every 1 s here), the deleted one kept until a merge."""
        self.http.json("PUT", f"/{INDEX}/_doc/{int(doc_id)}", {"body": body})

    def write_state(self) -> dict[str, Any]:
        """Live and deleted documents, segments and the index's size, from its statistics; the
        translog durability in force (with the defaults: the index's own settings omit it)."""
        stats = self.http.json("GET", f"/{INDEX}/_stats/docs,segments,store")["indices"][INDEX]["primaries"]
        settings = self.http.json("GET", f"/{INDEX}/_settings?include_defaults=true&flat_settings=true")[INDEX]
        durability = (settings.get("settings", {}).get("index.translog.durability")
                      or settings.get("defaults", {}).get("index.translog.durability"))
        return {"live_versions": stats["docs"]["count"], "dead_versions": stats["docs"]["deleted"],
                "segments": stats["segments"]["count"], "index_bytes": stats["store"]["size_in_bytes"],
                "translog_durability": durability}

    cleanup_kind = ("_forcemerge?only_expunge_deletes=true: segments whose deleted share passes the merge "
                    "policy's allowance merged away, then a refresh")

    def cleanup(self) -> dict[str, Any]:
        """The engine's own way to drop deleted documents: a force-merge that only expunges
        deletes (segments whose deleted share passes ``index.merge.policy.expunge_deletes_allowed``,
        10 % by default, are merged; the rest stay), then a refresh."""
        self.http.json("POST", f"/{INDEX}/_forcemerge?only_expunge_deletes=true")
        self.http.json("POST", f"/{INDEX}/_refresh")
        return {}

    # --- queries ------------------------------------------------------------------------------
    def count(self, a: str, b: str) -> int:
        return self.http.json("POST", f"/{INDEX}/_count", lucene_count_body(a, b, self.options["operator"]))["count"]

    def search(self, a: str, b: str) -> tuple[list[int], Any]:
        """The ids and ``hits.total`` as the engine reports it."""
        hits = self.http.json("POST", f"/{INDEX}/_search", self.body(a, b))["hits"]
        return [int(hit["_id"]) for hit in hits["hits"]], hits.get("total")

    def prepare_stream(self, pairs: list[tuple[str, str]]) -> None:
        self.requests = [self.http.encode("POST", f"/{INDEX}/_search", self.body(a, b)) for a, b in pairs]

    def stream_hits(self, i: int) -> int:
        status, body = self.http.send(self.requests[i])
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {body[:200].decode(errors='replace')}")
        return len(json.loads(body)["hits"]["hits"])
