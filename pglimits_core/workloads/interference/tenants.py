"""The bystanders' data on the shared Postgres, in the same starting state for every run.

The corpus (``datasets: corpus:``) is loaded through the search study's ``pg_gin`` adapter and
the vectors (``datasets: vectors:``) through the vector study's ``pgvector`` adapter, with their
own load and index steps, unless the server already holds them (each adapter knows its own
"loaded" mark). Then both tables get ``VACUUM (FREEZE, ANALYZE)``: every row frozen and visible
to all, fresh statistics, so no run inherits a load's dead tuples or unfrozen XIDs and autovacuum
has nothing to do on them — the only vacuum work during a window is the churn's. Each run records
``age(relfrozenxid)`` of every table it touches (how far each is from its last freeze).

The OLTP tenant's table (``oltp_rows`` > 0) is pgbench's ``pgbench_accounts`` under its own name:
``aid`` the primary key, ``bid`` (100,000 accounts a branch), ``abalance`` 0, an 84-character
filler, so a row is the size pgbench's is; loaded once by ``generate_series`` and frozen with the
others.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pglimits_core.datasets.corpus import CorpusSpec
from pglimits_core.datasets.store import (
    dataset_id,
    ensure_dataset,
    load_corpus,
    load_vectors,
    verify_dataset,
)
from pglimits_core.datasets.vectors import VectorSpec
from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.interference.start_state import flush_statistics
from pglimits_core.workloads.search.systems.postgres import TABLE as FTS_TABLE
from pglimits_core.workloads.search.systems.registry import make_system as make_search_system
from pglimits_core.workloads.vectors.systems.base import Index, index_tag
from pglimits_core.workloads.vectors.systems.pgvector import TABLE as VECTOR_TABLE
from pglimits_core.workloads.vectors.systems.registry import make_system as make_vector_system

BULK_DOCS = 5000
K = 10


@dataclass(frozen=True)
class Data:
    """The two datasets (their specs) and the HNSW build parameters of the vector study."""

    corpus: CorpusSpec
    vectors: VectorSpec
    m: int = 16
    ef_construction: int = 64
    #: accounts in the OLTP tenant's table (0: no OLTP tenant)
    oltp_rows: int = 0

    @property
    def index(self) -> Index:
        return Index(index_tag(dataset_id(self.vectors), self.m, self.ef_construction), self.m, self.ef_construction)

    def params(self) -> dict[str, Any]:
        return {"corpus": dataset_id(self.corpus), "documents": self.corpus.documents,
                "vectors": dataset_id(self.vectors), "vector_count": self.vectors.count,
                "m": self.m, "ef_construction": self.ef_construction,
                **({"oltp_rows": self.oltp_rows} if self.oltp_rows else {})}


@functools.cache
def verified(spec: Any) -> Path:
    """The dataset's directory, built now if missing; a damaged one stops the study with the fix
    (checked once per study process: every file's checksum is read)."""
    path = ensure_dataset(spec, progress=lambda message: print(f"interference: {message}", file=sys.stderr))
    if problems := verify_dataset(path):
        raise PGLimitsError(f"dataset {path.name} fails verification: {problems[0]}",
                            f"delete {path} and rebuild it: pglimits datasets build --profile <profile>")
    return path


@functools.cache
def fts_queries(data: Data) -> list[tuple[str, str, int]]:
    """Every query of the corpus with the hit count a correct top 10 has."""
    corpus = load_corpus(verified(data.corpus))
    return [(q.term_a, q.term_b, min(K, len(corpus.matches(i)))) for i, q in enumerate(corpus.queries)]


def load_corpus_into(url: str, data: Data, system: str = "pg_gin") -> bool:
    """The search adapter's load (its bulk format, its index build and settling), unless the
    server holds this corpus; True when it loaded."""
    corpus = load_corpus(verified(data.corpus))
    engine = make_search_system(system)
    engine.check_product(url)
    with engine.open(url):
        name, documents = dataset_id(data.corpus), corpus.num_documents
        if engine.loaded(name, documents):
            return False
        engine.reset(name, documents)
        for chunk in engine.encode_chunks((corpus.text(d) for d in range(documents)), BULK_DOCS):
            engine.bulk(chunk)
        for _key, step in engine.build_steps():
            step()
        engine.mark_loaded(name, documents)
    return True


def load_vectors_into(endpoint: Any, data: Data, system: str = "pgvector") -> bool:
    """The vector adapter's load and HNSW build, unless this index is there; True when built."""
    base = load_vectors(verified(data.vectors)).base
    with make_vector_system(system, endpoint, data.index, f"{system} hnsw") as engine:
        if engine.has_index(len(base)):
            return False
        engine.reset(base.shape[1])
        engine.insert(base)
        engine.build()
        engine.settle()
    return True


OLTP_TABLE = "oltp_accounts"
#: pgbench's accounts per branch
ACCOUNTS_PER_BRANCH = 100_000
OLTP_SCHEMA_SQL = (f"CREATE TABLE IF NOT EXISTS {OLTP_TABLE} (aid integer PRIMARY KEY, bid integer NOT NULL, "
                   "abalance integer NOT NULL, filler character(84))")
OLTP_FILL_SQL = (f"INSERT INTO {OLTP_TABLE} (aid, bid, abalance, filler) "
                 f"SELECT g, (g - 1) / {ACCOUNTS_PER_BRANCH} + 1, 0, '' FROM generate_series(1, %s) AS g")


def load_oltp_into(conn, rows: int) -> bool:
    """The OLTP tenant's accounts 1..``rows``, unless the table holds exactly them; True when loaded."""
    conn.execute(OLTP_SCHEMA_SQL)
    count, top = conn.execute(f"SELECT count(*), coalesce(max(aid), 0) FROM {OLTP_TABLE}").fetchone()
    if count == rows and top == rows:
        return False
    conn.execute(f"TRUNCATE {OLTP_TABLE}")
    conn.execute(OLTP_FILL_SQL, (int(rows),))
    return True


def freeze(conn, data: Data) -> None:
    """Every bystander row frozen and all-visible, statistics fresh."""
    for table in bystander_tables(data):
        conn.execute(f"VACUUM (FREEZE, ANALYZE) {table}")


def frozen_ages(conn, tables: list[str]) -> dict[str, int]:
    """``age(relfrozenxid)`` per table: transactions since its last freeze."""
    rows = conn.execute("SELECT relname, age(relfrozenxid) FROM pg_class WHERE relname = ANY(%s)",
                        (tables,)).fetchall()
    return {name: int(age) for name, age in rows}


def bystander_tables(data: Data | None = None) -> list[str]:
    """The bystanders' tables (the OLTP tenant's where ``data`` has one)."""
    return [FTS_TABLE, VECTOR_TABLE, *([OLTP_TABLE] if data is not None and data.oltp_rows else [])]


_READY: set[tuple[str, Data]] = set()


def ready(url: str, endpoint: Any, data: Data) -> dict[str, Any]:
    """Both datasets loaded and frozen on this server (once per study process and server)."""
    import psycopg

    if (url, data) in _READY:
        return {}
    loaded = {"corpus_loaded": load_corpus_into(url, data), "vectors_built": load_vectors_into(endpoint, data)}
    with psycopg.connect(url, autocommit=True) as conn:
        if data.oltp_rows:
            loaded["oltp_loaded"] = load_oltp_into(conn, data.oltp_rows)
        # a load's pending insert counters land before the VACUUM resets them (``start_state``)
        flush_statistics(conn)
        freeze(conn, data)
    _READY.add((url, data))
    return loaded
