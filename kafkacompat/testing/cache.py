"""Where the testing kit keeps what it fetches on first use (real brokers, client releases).

``$KAFKACOMPAT_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/kafkacompat``
(``~/.cache/kafkacompat``): one place, so that one variable moves all of it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    configured = os.environ.get("KAFKACOMPAT_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafkacompat"
