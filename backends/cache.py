"""Where compiled artifacts live: $SCHEDLAB_CACHE_DIR, else ~/.cache/schedlab."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(kind: str) -> Path:
    root = os.environ.get("SCHEDLAB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "schedlab")
    d = Path(root) / kind
    d.mkdir(parents=True, exist_ok=True)
    return d
