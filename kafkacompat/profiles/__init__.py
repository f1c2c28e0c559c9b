"""Client profiles measured from real client releases (``measured.jsonl``), and how they are made.

``installs`` pins the client releases (Python, Java, Go, Node) and installs
them into the cache; ``clients/`` holds the traffic programs of the languages
other than Python; ``measure`` regenerates the data (``make profiles``),
``merge`` turns one release's recordings into its profile, ``confusion``
puts ``check``'s verdicts next to what the clients do on real brokers
(``make verdict-table``); ``load_measured`` reads the data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["MEASURED_PATH", "load_measured"]

MEASURED_PATH = Path(__file__).resolve().parent / "measured.jsonl"


def load_measured() -> list[dict[str, Any]]:
    """Every measured profile, in file order."""
    return [json.loads(line) for line in MEASURED_PATH.read_text(encoding="utf-8").splitlines() if line]
