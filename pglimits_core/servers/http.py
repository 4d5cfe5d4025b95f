"""Tiny JSON-over-HTTP helpers for the servers that speak HTTP (OpenSearch, Qdrant)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


def get_json(url: str, timeout_s: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return json.loads(response.read() or b"null")


def answers(url: str, timeout_s: float = 1.0) -> bool:
    """True when ``url`` returns HTTP 200 within the timeout."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False
