"""The ``messages`` package index: lazy class loading and the per-API tables.

Importing ``kafkacompat.protocol.messages`` loads no message module; a class is
imported the first time it is asked for, so a client that only negotiates
pays for the few modules it uses.
"""

from __future__ import annotations

from kafkacompat._codegen.render_messages import BANNER
from kafkacompat._codegen.spec import WORD_BOUNDARY, MessageSpec, module_name, snake_case

#: The module holding the ``ApiKey`` enum, beside the message modules.
API_KEY_MODULE = "api_keys"
#: The same keys as plain ints, for the modules every connection imports.
API_KEY_NUMBERS_MODULE = "api_key_numbers"


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


def _requests_by_key(groups: dict[str, list[MessageSpec]]) -> list[tuple[str, int]]:
    """(the key's name, the key) of every API the codec has a request for, by key."""
    requests = sorted(
        (s for specs in groups.values() for s in specs if s.type == "request" and s.api_key is not None),
        key=lambda s: s.api_key or 0,
    )
    return [(module_name(s.name.removesuffix("Request")).upper(), s.api_key or 0) for s in requests]


def render_api_keys(groups: dict[str, list[MessageSpec]]) -> str:
    """``ApiKey``: every API the codec has a request for, named after the request in the specs."""
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
    lines += [f"    {name} = {key}" for name, key in _requests_by_key(groups)]
    return "\n".join(lines) + "\n"


def render_api_key_numbers(groups: dict[str, list[MessageSpec]]) -> str:
    """The keys of ``ApiKey`` as module constants: plain ints, which cost next to nothing to define
    (no ``__all__`` nor annotations either: every name is public, and each is an int)."""
    lines = [
        BANNER,
        '"""Every Kafka API key as a plain int, named as in ``ApiKey``.',
        "",
        "For the modules every connection imports: defining the ``ApiKey`` enum costs a",
        "process some 40-70 KiB of memory, and its members are these same ints.",
        '"""',
        "",
    ]
    lines += [f"{name} = {key}" for name, key in _requests_by_key(groups)]
    return "\n".join(lines) + "\n"


def _module_by_rule(name: str) -> str:
    """The module the index finds for ``name`` without a table: the rule its ``_module_of`` applies."""
    return snake_case(name.removesuffix("Request").removesuffix("Response"))


def _exported(
    groups: dict[str, list[MessageSpec]], message_aliases: dict[str, str] | None
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(class -> module, old name -> new name, every exported name -> the module that holds it)."""
    class_modules = {s.name: module for module, specs in groups.items() for s in specs}
    aliases = dict(sorted((message_aliases or {}).items()))
    typed = {
        **class_modules,
        **{old: class_modules[new] for old, new in aliases.items()},
        "ApiKey": API_KEY_MODULE,  # not a message: kept out of CLASS_BY_KEY, which lists messages
    }
    return class_modules, aliases, typed


def render_index(groups: dict[str, list[MessageSpec]], message_aliases: dict[str, str] | None = None) -> str:
    class_modules, aliases, typed = _exported(groups, message_aliases)
    all_specs = [s for specs in groups.values() for s in specs]
    requests = sorted((s for s in all_specs if s.type == "request"), key=lambda s: s.api_key or 0)
    # Only the classes the naming rule misses are listed: a table of every class would
    # cost each connection about 27 KiB for what one regular expression says.
    irregular = {name: module for name, module in class_modules.items() if _module_by_rule(name) != module}
    irregular["ApiKey"] = API_KEY_MODULE
    lines = [
        BANNER,
        '"""Every Kafka message, header, data spec and metadata record, and ApiKey, loaded on first use.',
        "",
        "The names' types are in ``__init__.pyi``: this module holds only what a lookup needs.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import importlib",
        "import re",
        "from typing import Any",
        "",
        "# A class lives in the module named after it, without Request or Response",
        "# (FetchRequest -> fetch); these are the exceptions.",
        "_IRREGULAR_MODULES: dict[str, str] = {",
    ]
    lines += [f"    {name!r}: {irregular[name]!r}," for name in sorted(irregular)]
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
        f"_WORD_BOUNDARY = re.compile({WORD_BOUNDARY!r})  # the generator's snake_case",
        "",
        "",
        "def _module_of(name: str) -> str:",
        "    module = _IRREGULAR_MODULES.get(name)",
        "    if module is None:",
        '        base = name.removesuffix("Request").removesuffix("Response")',
        '        module = _WORD_BOUNDARY.sub("_", base).lower()',
        "    return module",
        "",
        "",
        "def _class_modules() -> dict[str, str]:",
        '    """Every message class -> its module: built when asked for, not at import."""',
        "    return {name: _module_of(name) for name in __all__ if name not in ALIASES and name != 'ApiKey'}",
        "",
        "",
        "def __getattr__(name: str) -> Any:",
        "    if name == 'CLASS_MODULES':",
        "        table = globals()[name] = _class_modules()",
        "        return table",
        "    if name not in __all__:",
        '        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
        "    real = ALIASES.get(name, name)",
        '    value = getattr(importlib.import_module(f"{__name__}.{_module_of(real)}"), real)',
        "    globals()[name] = value",
        "    return value",
        "",
        "",
        "def __dir__() -> list[str]:",
        "    return sorted({*globals(), *__all__})",
    ]
    return "\n".join(lines) + "\n"


def render_index_stub(
    groups: dict[str, list[MessageSpec]], message_aliases: dict[str, str] | None = None
) -> str:
    """``__init__.pyi``: every lazily loaded name with its type, for type checkers only."""
    _, _, typed = _exported(groups, message_aliases)
    lines = [
        BANNER,
        '"""The types of ``kafkacompat.protocol.messages``, whose names load on first use."""',
        "",
    ]
    for name in sorted(typed, key=lambda n: (typed[n], n)):
        lines.append(f"from kafkacompat.protocol.messages.{typed[name]} import {name} as {name}")
    lines += [
        "",
        "CLASS_MODULES: dict[str, str]",
        "CLASS_BY_KEY: dict[tuple[int, str], str]",
        "REQUEST_VERSIONS: dict[int, tuple[int, int]]",
        "FIRST_FLEXIBLE: dict[int, int]",
        "ALIASES: dict[str, str]",
        "",
        f"__all__ = {sorted(typed)!r}",
        "",
        "def __dir__() -> list[str]: ...",
    ]
    return "\n".join(lines) + "\n"
