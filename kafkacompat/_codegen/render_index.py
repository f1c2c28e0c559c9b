"""The ``messages`` package index: lazy class loading and the per-API tables.

Importing ``kafkacompat.protocol.messages`` loads no message module; a class is
imported the first time it is asked for, so a client that only negotiates
pays for the few modules it uses.
"""

from __future__ import annotations

from kafkacompat._codegen.render_messages import BANNER
from kafkacompat._codegen.spec import MessageSpec, module_name

#: The module holding the ``ApiKey`` enum, beside the message modules.
API_KEY_MODULE = "api_keys"


def render_alias_module(new_module: str, names: list[str]) -> str:
    """A module kept at an older path: Kafka renamed the messages it held."""
    return "\n".join(
        [
            BANNER,
            f'"""Kafka renamed these messages; they live in ``{new_module}`` under their new names."""',
            "",
            f"from kafkacompat.protocol.messages.{new_module} import {', '.join(names)}",
            "",
            f"__all__ = {names!r}",
            "",
        ]
    )


def render_api_keys(groups: dict[str, list[MessageSpec]]) -> str:
    """``ApiKey``: every API the codec has a request for, named after the request in the specs."""
    requests = sorted(
        (s for specs in groups.values() for s in specs if s.type == "request" and s.api_key is not None),
        key=lambda s: s.api_key or 0,
    )
    lines = [
        BANNER,
        '"""Every Kafka API by its key, named after its request in Kafka\'s specs."""',
        "",
        "from __future__ import annotations",
        "",
        "from enum import IntEnum",
        "",
        '__all__ = ["ApiKey"]',
        "",
        "",
        "class ApiKey(IntEnum):",
        '    """A Kafka API key (``ApiKey.FIND_COORDINATOR == 10``): equal to the int on the wire."""',
        "",
    ]
    lines += [f"    {module_name(s.name.removesuffix('Request')).upper()} = {s.api_key}" for s in requests]
    return "\n".join(lines) + "\n"


def render_index(groups: dict[str, list[MessageSpec]], message_aliases: dict[str, str] | None = None) -> str:
    class_modules = {s.name: module for module, specs in groups.items() for s in specs}
    aliases = dict(sorted((message_aliases or {}).items()))
    all_specs = [s for specs in groups.values() for s in specs]
    requests = sorted((s for s in all_specs if s.type == "request"), key=lambda s: s.api_key or 0)
    lines = [
        BANNER,
        '"""Every Kafka message, header, data spec and metadata record, and ApiKey, loaded on first use."""',
        "",
        "from __future__ import annotations",
        "",
        "import importlib",
        "from typing import TYPE_CHECKING, Any",
        "",
        "if TYPE_CHECKING:",
    ]
    typed = {
        **class_modules,
        **{old: class_modules[new] for old, new in aliases.items()},
        "ApiKey": API_KEY_MODULE,  # not a message: kept out of CLASS_MODULES, which lists messages
    }
    for name in sorted(typed, key=lambda n: (typed[n], n)):
        lines.append(f"    from kafkacompat.protocol.messages.{typed[name]} import {name} as {name}")
    lines += ["", "CLASS_MODULES: dict[str, str] = {"]
    lines += [f"    {name!r}: {class_modules[name]!r}," for name in sorted(class_modules)]
    lines += ["}", "", "CLASS_BY_KEY: dict[tuple[int, str], str] = {"]
    keyed = sorted(
        ((s.api_key, s.type, s.name) for s in all_specs if s.api_key is not None),
        key=lambda item: (item[1], item[0]),
    )
    lines += [f"    ({key}, {kind!r}): {name!r}," for key, kind, name in keyed]
    lines += [
        "}",
        "",
        "# api key -> (lowest, highest) request version this codec can write",
        "REQUEST_VERSIONS: dict[int, tuple[int, int]] = {",
    ]
    lines += [f"    {s.api_key}: ({s.valid.lowest}, {s.valid.highest})," for s in requests]
    lines += [
        "}",
        "",
        "# api key -> the first flexible version (32767 when never flexible)",
        "FIRST_FLEXIBLE: dict[int, int] = {",
    ]
    lines += [f"    {s.api_key}: {s.flexible.lowest if not s.flexible.empty else 32767}," for s in requests]
    lines += [
        "}",
        "",
        "# Kafka's older name of a message -> its current name (the same class)",
        "ALIASES: dict[str, str] = {",
    ]
    lines += [f"    {old!r}: {new!r}," for old, new in aliases.items()]
    lines += ["}", "", f"__all__ = {sorted(typed)!r}", ""]
    lines += [
        "",
        "def __getattr__(name: str) -> Any:",
        "    module = CLASS_MODULES.get(ALIASES.get(name, name))",
        "    if module is None and name == 'ApiKey':",
        f"        module = {API_KEY_MODULE!r}",
        "    if module is None:",
        '        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
        '    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)',
        "    globals()[name] = value",
        "    return value",
        "",
        "",
        "def __dir__() -> list[str]:",
        "    return sorted([*globals(), *CLASS_MODULES, *ALIASES, 'ApiKey'])",
    ]
    return "\n".join(lines) + "\n"
