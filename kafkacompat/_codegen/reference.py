"""Render ``kafkacompat/reference/``: the release and feature tables as Python literals.

The installed package must not read the vendored inputs (``vendor/kafka-protocol``)
at run time, so the facts we need from them (which API ranges each Kafka release answers, per broker kind, and
the KIP-584 feature levels) are written out once as typed constants and
committed.  The output is a pure function of the input files: every mapping is
emitted in sorted order, so a re-run on the same data gives the same bytes and
``--check`` can compare them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kafkacompat._codegen.release_inputs import load_features, load_releases
from kafkacompat._codegen.removals import KINDS as REMOVAL_KINDS
from kafkacompat._codegen.removals import load_removals
from kafkacompat._codegen.render_messages import BANNER
from kafkacompat._codegen.spec import SpecError
from kafkacompat.errors import KafkaCompatError

__all__ = ["BANNER", "ReferenceDataError", "api_names", "render_reference"]


_WIDTH = 100
_COMMENT_LINE = re.compile(r"^\s*//.*$", re.MULTILINE)


class ReferenceDataError(KafkaCompatError):
    """The vendored reference files do not have the expected shape."""


def render_reference(shared_dir: Path) -> dict[str, str]:
    """Return ``{file name: text}`` for the generated ``kafkacompat/reference`` package."""
    try:
        releases = load_releases(shared_dir)
        features = load_features(shared_dir)
    except SpecError as exc:
        raise ReferenceDataError(str(exc)) from exc
    names = api_names(shared_dir)
    return {
        "__init__.py": _render_init(),
        "features.py": _render_features(features),
        "api_names.py": _render_api_names(releases, names),
        "releases.py": _render_releases(releases),
        "removals.py": render_removals(load_removals(shared_dir), names),
    }


def api_names(inputs: Path) -> dict[int, str]:
    """API key -> name. Kafka's current names win (ListClientMetricsResources is
    ListConfigResources since 4.1): the newest Kafka files name each API; the
    derived files only name an API no Kafka file has."""
    names = _api_names(inputs / "spec" / "message")
    names.update(_api_names(inputs / "spec-4.3" / "message"))
    names.update(_api_names(inputs / "spec-4.4" / "message"))
    for key, name in _api_names(inputs / "spec-4.3" / "derived").items():
        names.setdefault(key, name)
    return names


def _api_names(message_dir: Path) -> dict[int, str]:
    """API key -> name, from the request specs (Kafka's JSON carries // comments)."""
    names: dict[int, str] = {}
    for path in sorted(message_dir.glob("*Request.json")):
        spec = json.loads(_COMMENT_LINE.sub("", path.read_text(encoding="utf-8")))
        if spec.get("type") == "request" and isinstance(spec.get("apiKey"), int):
            names[spec["apiKey"]] = str(spec["name"]).removesuffix("Request")
    return names


def _literal(text: str) -> str:
    """A double-quoted Python string literal (JSON's escaping is valid Python)."""
    return json.dumps(text)


def _tuple_items(texts: list[str]) -> str:
    items = ", ".join(_literal(text) for text in texts)
    return f"{items}," if len(texts) == 1 else items


def _release_order(release: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in release.split("."))
    except ValueError:
        raise ReferenceDataError(f"not a release number: {release!r}") from None


def _wrapped(items: Iterable[str], indent: str) -> list[str]:
    """Pack comma-separated items into lines no wider than ``_WIDTH``."""
    lines: list[str] = []
    current = indent
    for item in items:
        piece = f"{item},"
        if current != indent and len(current) + 1 + len(piece) > _WIDTH:
            lines.append(current)
            current = indent
        separator = "" if current == indent else " "
        current = f"{current}{separator}{piece}"
    if current != indent:
        lines.append(current)
    return lines


def _isort_key(name: str) -> tuple[bool, str]:
    """Constants first, then classes, ``_`` before letters: the order ruff's isort wants."""
    return not name.isupper(), name.replace("_", " ")


def _render_init() -> str:
    homes = {
        "API_NAMES": "api_names",
        "FEATURES": "features",
        "FEATURE_DEFAULTS": "features",
        "FeatureLevelFact": "features",
        "KINDS": "releases",
        "RELEASES": "releases",
        "REMOVALS": "removals",
        "REMOVAL_KINDS": "removals",
        "ReleaseProfile": "releases",
        "RemovalFact": "removals",
    }
    by_module: dict[str, list[str]] = {}
    for name, module in homes.items():
        by_module.setdefault(module, []).append(name)
    # The package imports nothing eagerly: a module that needs one table (the
    # removal facts, say) must not pay for the release table by importing it.
    return "\n".join(
        [
            BANNER,
            '"""Facts about Kafka releases and KIP-584 features (generated; facts only).',
            "",
            "Each table is loaded on first use, so that importing one does not load the others.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "from typing import TYPE_CHECKING",
            "",
            "from kafkacompat._lazy import lazy_exports as _lazy_exports",
            "",
            "if TYPE_CHECKING:",
            *(
                f"    from kafkacompat.reference.{module} import {', '.join(sorted(names, key=_isort_key))}"
                for module, names in sorted(by_module.items())
            ),
            "",
            "_HOMES = {",
            *(f'    "{name}": "{module}",' for name, module in sorted(homes.items())),
            "}",
            "",
            "__all__ = [",
            *(f'    "{name}",' for name in sorted(homes, key=lambda name: (not name.isupper(), name))),
            "]",
            "",
            "",
            "__getattr__ = _lazy_exports(__name__, _HOMES)",
            "",
        ]
    )


def _render_api_names(data: Mapping[str, Any], names: Mapping[int, str]) -> str:
    # Its own module: naming an API (every version-picking message does) must not
    # load the release table beside it.
    try:
        used_keys = {
            int(key)
            for entry in data.get("releases", [])
            for key in [*entry["apis"], *entry.get("optional_apis", {})]  # optional: listed when configured
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise ReferenceDataError("releases.json: malformed entry") from exc
    lines = [
        BANNER,
        '"""The name of every API a Kafka release answers for (facts only)."""',
        "",
        "from collections.abc import Mapping",
        "from typing import Final",
        "",
        "# api key -> the API's name (Kafka's request name without 'Request')",
        "API_NAMES: Final[Mapping[int, str]] = {",
    ]
    lines += [f"    {key}: {_literal(names[key])}," for key in sorted(used_keys) if key in names]
    lines += ["}", ""]
    return "\n".join(lines)


def _render_releases(data: Mapping[str, Any]) -> str:
    profiles: list[tuple[str, str, dict[int, tuple[int, int]]]] = []
    for entry in data.get("releases", []):
        try:
            apis = {int(key): (int(r["min"]), int(r["max"])) for key, r in entry["apis"].items()}
            profiles.append((str(entry["release"]), str(entry["kind"]), apis))
        except (KeyError, TypeError, ValueError) as exc:
            raise ReferenceDataError(f"releases.json: malformed entry {entry!r}") from exc
    if not profiles:
        raise ReferenceDataError("releases.json lists no releases")
    profiles.sort(key=lambda p: (p[1], _release_order(p[0])))
    kinds = sorted({kind for _, kind, _ in profiles})
    seen = [(kind, release) for release, kind, _ in profiles]
    if len(set(seen)) != len(seen):
        raise ReferenceDataError("releases.json lists a (release, kind) twice")
    lines = [
        BANNER,
        '"""The ApiVersions answer of every Apache Kafka release, per broker kind (facts only)."""',
        "",
        "from collections.abc import Mapping",
        "from typing import Final, NamedTuple",
        "",
        "from kafkacompat.reference.api_names import API_NAMES as API_NAMES",
        "",
        "",
        "class ReleaseProfile(NamedTuple):",
        '    """What a broker of ``kind`` running ``release`` answers: api key -> (min, max)."""',
        "",
        "    release: str",
        "    kind: str",
        "    apis: Mapping[int, tuple[int, int]]",
        "",
        "",
        f"KINDS: Final[tuple[str, ...]] = ({_tuple_items(kinds)})",
        "",
        "# sorted by kind, then by release",
        "RELEASES: Final[tuple[ReleaseProfile, ...]] = (",
    ]
    for release, kind, apis in profiles:
        lines.append(f"    ReleaseProfile({_literal(release)}, {_literal(kind)}, {{")
        items = (f"{key}: ({low}, {high})" for key, (low, high) in sorted(apis.items()))
        lines += _wrapped(items, " " * 8)
        lines.append("    }),")
    lines += [")", ""]
    return "\n".join(lines)


def _render_features(data: Mapping[str, Any]) -> str:
    features = data.get("features")
    if not isinstance(features, dict) or not features:
        raise ReferenceDataError("features.json lists no features")
    lines = [
        BANNER,
        '"""KIP-584 feature levels known to Kafka, with their dependencies (facts only)."""',
        "",
        "from collections.abc import Mapping",
        "from typing import Final, NamedTuple",
        "",
        "",
        "class FeatureLevelFact(NamedTuple):",
        '    """One level of a feature (name, release, iv, metadata_changed: metadata.version)."""',
        "",
        "    level: int",
        "    requires: Mapping[str, int]",
        "    name: str | None = None",
        "    release: str | None = None",
        "    iv: str | None = None",
        "    metadata_changed: bool | None = None",
        "    bootstrap_metadata_version: int | None = None",
        "",
        "",
        "# feature name -> its levels, lowest first",
        "FEATURES: Final[Mapping[str, tuple[FeatureLevelFact, ...]]] = {",
    ]
    for name in sorted(features):
        lines.append(f"    {_literal(name)}: (")
        levels = features[name].get("levels", []) if isinstance(features[name], dict) else []
        for level in sorted(levels, key=lambda entry: int(entry["level"])):
            lines.append(f"        {_feature_level(name, level)},")
        lines.append("    ),")
    lines += ["}", ""]
    defaults = data.get("defaults", {})
    lines += [
        "# release -> the level of each feature a new cluster of that release is formatted with",
        "FEATURE_DEFAULTS: Final[Mapping[str, Mapping[str, int]]] = {",
    ]
    for release in sorted(defaults, key=_release_order):
        lines.append(f"    {_literal(release)}: {{")
        lines += _wrapped((f"{_literal(k)}: {int(v)}" for k, v in sorted(defaults[release].items())), " " * 8)
        lines.append("    },")
    lines += ["}", ""]
    return "\n".join(lines)


def _feature_level(feature: str, entry: Mapping[str, Any]) -> str:
    try:
        level = int(entry["level"])
        requires = {str(k): int(v) for k, v in dict(entry.get("requires", {})).items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise ReferenceDataError(f"features.json: malformed {feature} level {entry!r}") from exc
    pairs = ", ".join(f"{_literal(k)}: {v}" for k, v in sorted(requires.items()))
    args = [str(level), f"{{{pairs}}}"]
    if "release" in entry or "iv" in entry:
        args += [
            f"name={_literal(str(entry['name']))}",
            f"release={_literal(str(entry['release']))}",
            f"iv={_literal(str(entry['iv']))}",
            f"metadata_changed={bool(entry.get('metadata_changed', False))!r}",
        ]
    if entry.get("bootstrap_metadata_version") is not None:
        args.append(f"bootstrap_metadata_version={int(entry['bootstrap_metadata_version'])}")
    return f"FeatureLevelFact({', '.join(args)})"


def render_removals(removals: Mapping[int, Any], names: Mapping[int, str]) -> str:
    """``reference/removals.py``: the versions Kafka 4.0+ removed, per API key, and how."""
    lines = [
        BANNER,
        '"""The API versions Kafka 4.0 and later removed, and how a 4.x broker treats them (facts only)."""',
        "",
        "from collections.abc import Mapping",
        "from typing import Final, NamedTuple",
        "",
        "",
        "class RemovalFact(NamedTuple):",
        '    """Versions ``lowest``-``highest`` of API ``api_key`` are gone from Kafka ``since`` on."""',
        "",
        "    api_key: int",
        "    api: str",
        "    lowest: int",
        "    highest: int",
        "    kind: str",
        "    since: str",
        "",
        "    def covers(self, version: int) -> bool:",
        "        return self.lowest <= version <= self.highest",
        "",
        "",
        "# kind -> what it means",
        "REMOVAL_KINDS: Final[Mapping[str, str]] = {",
    ]
    lines += [f"    {_literal(k)}: {_literal(v)}," for k, v in REMOVAL_KINDS.items()]
    lines += ["}", "", "# api key -> the removal", "REMOVALS: Final[Mapping[int, RemovalFact]] = {"]
    for key in sorted(removals):
        r = removals[key]
        name = names.get(key, r.api)
        lines.append(
            f"    {key}: RemovalFact({key}, {_literal(name)}, {r.versions.lowest}, {r.versions.highest}, "
            f"{_literal(r.kind)}, {_literal(r.since)}),"
        )
    lines += ["}", ""]
    return "\n".join(lines)
