"""Client profiles measured from real client releases (``measured.jsonl``), and how they are made.

``measure`` regenerates the data (``make profiles``); ``load_measured`` reads it.
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
