"""Where kafkacompat keeps what it fetches or builds on first use, on this machine.

``$KAFKACOMPAT_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/kafkacompat``
(``~/.cache/kafkacompat``): one place, so that one variable moves all of it.
The testing kit keeps real brokers and client releases there, the fleet
pipeline its local JVM's class-data archive.  A module of its own, so that the
pipeline finds the folder without importing the testing kit (trio, the
emulator).
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
