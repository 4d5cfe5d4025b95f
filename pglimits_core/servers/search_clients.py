"""The client library for an Elasticsearch-family server is chosen by the server, never by habit.

elasticsearch-py 8 refuses OpenSearch (its product check raises ``UnsupportedProductError``), and
opensearch-py is not what Elasticsearch users run. So the search study asks for
``search_client_for(endpoint.system, endpoint.url)`` and gets the vendor's own client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pglimits_core.errors import PGLimitsError

DEFAULT_TIMEOUT_S = 60.0  # bulk loads and force-merges outlast the clients' 10 s default


def _opensearch_client(url: str, timeout_s: float) -> Any:
    from opensearchpy import OpenSearch  # imported lazily: each study needs only one client

    return OpenSearch(hosts=[url], timeout=timeout_s)


def _elasticsearch_client(url: str, timeout_s: float) -> Any:
    from elasticsearch import Elasticsearch  # 8.x, pinned in pyproject.toml

    return Elasticsearch(url, request_timeout=timeout_s)


SEARCH_CLIENTS: dict[str, Callable[[str, float], Any]] = {
    "opensearch": _opensearch_client,
    "elasticsearch": _elasticsearch_client,
}


def search_client_for(system: str, url: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> Any:
    """A client for ``system`` at ``url`` that has already talked to the server once.

    The first request (``info()``) runs now, so a wrong server/client pairing or a dead URL fails
    here as one line, not in the middle of a measurement.
    """
    try:
        factory = SEARCH_CLIENTS[system]
    except KeyError:
        raise PGLimitsError(f"no search client for {system!r}",
                            f"use one of: {', '.join(SEARCH_CLIENTS)}") from None
    client = factory(url, timeout_s)
    try:
        client.info()
    except Exception as exc:  # each library has its own error tree; all mean "cannot use it"
        client.close()
        raise PGLimitsError(f"{system} client cannot use {url}: {type(exc).__name__}: {_first_line(exc)}",
                            _fix_for(system, exc, url)) from exc
    return client


def _fix_for(system: str, exc: Exception, url: str) -> str:
    if type(exc).__name__ == "UnsupportedProductError":  # elasticsearch-py met a non-Elasticsearch
        return f"the server is not Elasticsearch; if it is OpenSearch use --external opensearch={url}"
    return f"check that {system} answers at {url}"


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else "")[:300]
