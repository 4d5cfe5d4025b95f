"""Disk usage of server data directories."""

from __future__ import annotations

import os
from pathlib import Path


def directory_bytes(path: Path) -> int:
    """Bytes allocated by the files under ``path`` (0 if it does not exist)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue  # a file removed while we walk (WAL recycling) is not an error
    return total
