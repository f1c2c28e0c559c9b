"""The release and feature facts the generator reads, from every vendored file that holds some.

``releases.json`` (0.8.0-4.2) and ``features.json`` came with the reference
folder; ``releases-4.3-4.4.json`` (the ApiVersions answers of real 4.3.1 and
4.4.0 nodes) and ``features-4.4.json`` (Kafka 4.4.0's own feature enums) were
added beside them.  A (release, kind) or a feature level listed in two files is
an error, so no file silently overrides another.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafkacompat._codegen.spec import SpecError

__all__ = ["FEATURE_FILES", "RELEASE_FILES", "load_features", "load_releases"]

RELEASE_FILES = ("releases.json", "releases-4.3-4.4.json")
FEATURE_FILES = ("features.json", "features-4.4.json", "features-measured.json")


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpecError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a JSON object at the top")
    return data


def load_releases(root: Path) -> dict[str, Any]:
    """``{"releases": [...]}`` with the entries of every release file (the first one must exist)."""
    entries: list[Any] = []
    seen: dict[tuple[str, str], str] = {}
    for name in RELEASE_FILES:
        path = root / name
        if name != RELEASE_FILES[0] and not path.exists():
            continue
        for entry in _read(path).get("releases", []):
            try:
                key = (str(entry["release"]), str(entry["kind"]))
            except (KeyError, TypeError) as exc:
                raise SpecError(f"{name}: malformed entry {entry!r}") from exc
            if key in seen:
                raise SpecError(f"{name}: {key[0]} {key[1]} is listed in {seen[key]} already")
            seen[key] = name
            entries.append(entry)
    return {"releases": entries}


def load_features(root: Path) -> dict[str, Any]:
    """``{"features": {name: {"levels": [...]}}, "defaults": {release: {name: level}}}``, merged."""
    features: dict[str, dict[str, list[Any]]] = {}
    defaults: dict[str, dict[str, int]] = {}
    where: dict[tuple[str, int], str] = {}
    for name in FEATURE_FILES:
        path = root / name
        if name != FEATURE_FILES[0] and not path.exists():
            continue
        data = _read(path)
        for feature, body in dict(data.get("features", {})).items():
            for level in body.get("levels", []) if isinstance(body, dict) else []:
                key = (str(feature), int(level["level"]))
                if key in where:
                    raise SpecError(f"{name}: {feature} level {key[1]} is listed in {where[key]} already")
                where[key] = name
                features.setdefault(str(feature), {"levels": []})["levels"].append(level)
        for release, levels in dict(data.get("defaults", {})).items():
            if release in defaults:
                raise SpecError(f"{name}: the defaults of {release} are listed twice")
            defaults[str(release)] = {str(k): int(v) for k, v in dict(levels).items()}
    return {"features": features, "defaults": defaults}
