"""Reading Kafka client properties files and JAAS lines, without ever echoing a value.

``--command-config`` files are Java properties files, as Kafka's tools read
them: ``key=value``, ``key: value`` or ``key value`` lines; ``#`` and ``!``
start comments; a line ending in an odd number of backslashes continues on the
next; ``\\t``, ``\\n``, ``\\r``, ``\\f``, ``\\uXXXX`` and ``\\<char>`` escapes.
A file may hold passwords, so no error raised here ever quotes a value: only
line numbers and key names.

``sasl.jaas.config`` holds one login module entry:
``<class> <flag> key="value" key=value ...;``.  Only PLAIN and SCRAM login
modules are understood (their ``username`` and ``password`` options).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkacompat.cli.files import read_text
from kafkacompat.errors import ConfigError

__all__ = ["JaasEntry", "load_properties", "parse_jaas_config", "parse_properties"]

_COMMENT_STARTS = ("#", "!")
_SEPARATORS = "=: \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_JAAS_FLAGS = ("required", "requisite", "sufficient", "optional")


def load_properties(path: str | Path) -> dict[str, str]:
    """The properties of the file at ``path`` (read as UTF-8, as Kafka 9+ reads them)."""
    file = Path(path)
    text = read_text(file, "the command config file")
    return parse_properties(text, source=str(file))


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Physical lines joined at continuations, with the number of the first physical line."""
    out: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip(" \t\f")  # leading blanks go, on continuation lines too
        if pending is None:
            if not line or line.startswith(_COMMENT_STARTS):
                continue
            start = number
            pending = ""
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        out.append((start, pending + line))
        pending = None
    if pending is not None:
        out.append((start, pending))
    return out


def _unescape(text: str, line: int, source: str) -> str:
    chars: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 >= len(text):
            chars.append(char)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(f"{source} line {line}: malformed \\uXXXX escape")
            chars.append(chr(int(digits, 16)))
            i += 6
            continue
        chars.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(chars)


def _split_key(line: str) -> tuple[str, str]:
    """Split at the first unescaped separator; the value starts after ``=``/``:`` and blanks."""
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if char in _SEPARATORS:
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def parse_properties(text: str, *, source: str = "the command config") -> dict[str, str]:
    """Java properties text -> {key: value}; the last of a repeated key wins, as in Java."""
    properties: dict[str, str] = {}
    for number, line in _logical_lines(text):
        raw_key, raw_value = _split_key(line)
        key = _unescape(raw_key, number, source)
        if not key:
            raise ConfigError(f"{source} line {number}: a property without a name")
        properties[key] = _unescape(raw_value, number, source)
    return properties


@dataclass(frozen=True)
class JaasEntry:
    """One login module entry of ``sasl.jaas.config``; ``options`` hold secrets, never print them."""

    module: str
    flag: str
    options: dict[str, str] = field(repr=False)

    @property
    def short_module(self) -> str:
        return self.module.rsplit(".", 1)[-1]

    def __repr__(self) -> str:
        return f"JaasEntry({self.module!r}, {self.flag!r}, options={sorted(self.options)})"


def _jaas_tokens(text: str) -> list[tuple[str, bool]]:
    """Words, ``=``, ``;`` and quoted strings (flagged True), in order."""
    tokens: list[tuple[str, bool]] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif char in "=;":
            tokens.append((char, False))
            i += 1
        elif char == '"':
            value: list[str] = []
            i += 1
            while i < len(text) and text[i] != '"':
                if text[i] == "\\" and i + 1 < len(text):
                    i += 1
                value.append(text[i])
                i += 1
            if i >= len(text):
                raise ConfigError("sasl.jaas.config has an unterminated quoted value")
            tokens.append(("".join(value), True))
            i += 1
        else:
            start = i
            while i < len(text) and not text[i].isspace() and text[i] not in '=;"':
                i += 1
            tokens.append((text[start:i], False))
    return tokens


def parse_jaas_config(text: str) -> JaasEntry:
    """``<LoginModule class> <flag> name=value ...;`` -> ``JaasEntry`` (values unquoted)."""
    tokens = _jaas_tokens(text)
    if len(tokens) < 2 or tokens[0][1] or tokens[1][1]:
        raise ConfigError("sasl.jaas.config must start with a login module class and a control flag")
    module, flag = tokens[0][0], tokens[1][0].lower()
    if flag not in _JAAS_FLAGS:
        raise ConfigError(
            f"sasl.jaas.config: the control flag after {module} must be one of {', '.join(_JAAS_FLAGS)}"
        )
    options: dict[str, str] = {}
    i = 2
    while i < len(tokens):
        word, quoted = tokens[i]
        if word == ";" and not quoted:
            if any(not (w == ";" and not q) for w, q in tokens[i + 1 :]):
                raise ConfigError("sasl.jaas.config holds more than one login module entry")
            break
        if quoted or i + 2 >= len(tokens) or tokens[i + 1] != ("=", False):
            # Never quote the token: it may be a piece of a password.
            raise ConfigError(f"sasl.jaas.config: expected name=value options after {flag}")
        options[word] = tokens[i + 2][0]
        i += 3
    else:
        raise ConfigError("sasl.jaas.config must end with a semicolon")
    return JaasEntry(module, flag, options)
