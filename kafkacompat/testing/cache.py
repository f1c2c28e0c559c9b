"""Where the testing kit keeps what it fetches on first use (real brokers, client releases).

The folder is kafkacompat's cache (``kafkacompat._cache``, which the fleet
pipeline shares): ``$KAFKACOMPAT_CACHE_DIR`` when set, else
``$XDG_CACHE_HOME/kafkacompat`` (``~/.cache/kafkacompat``).
"""

from __future__ import annotations

from kafkacompat._cache import cache_root

__all__ = ["cache_root"]
