"""Which reader decodes messages: the native one, or the generated Python readers.

Issue 28 asks for decoding at native speed, built from the same generated code,
with the Python readers as the fallback wherever the native part is not built.
The generator writes two things per wire layout: a Python reader, and a layout
table that ``kafkacompat/protocol/_native.c`` interprets (built by the package's
own build when a C compiler is there; see ``hatch_build.py``).  Each generated
module calls ``install`` with its message classes; where the native reader is
built and in use, a class's ``_READERS`` then maps each version to a
``_native.Reader`` over that layout's table, which reads the bytes into the same
classes and hands bytes that break a rule to the Python reader of the same
layout, so errors are raised by one code path only.

``current()`` says which path is in use and ``describe()`` why (``kafkacompat
--version`` prints it); ``use()`` switches (the codec tests run on both paths).
``KAFKACOMPAT_CODEC=pure`` in the environment starts on the Python readers.
"""

from __future__ import annotations

import binascii
import os
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from kafkacompat.errors import ConfigError

if TYPE_CHECKING:
    from kafkacompat.protocol.message import KafkaMessage

__all__ = ["NATIVE", "PURE", "CodecPath", "current", "describe", "native_unavailable", "use"]

CodecPath = Literal["native", "pure"]
NATIVE: CodecPath = "native"
PURE: CodecPath = "pure"

#: The environment variable that starts a process on the Python readers.
ENV = "KAFKACOMPAT_CODEC"

# os.path, not pathlib, and a CRC, not hashlib: every decoding process imports this module.
_HERE = os.path.dirname(os.path.abspath(__file__))
#: What the build hook leaves beside the extension when it could not build it.
BUILD_NOTE = os.path.join(_HERE, "_native.build-failed")

Reader = Callable[[Any, int], tuple[Any, int]]


def source_crc(data: bytes) -> str:
    """The CRC-32 of ``_native.c`` the build compiles in (hatch_build.py computes it the same way)."""
    return f"{binascii.crc32(data):08x}"


def _load_native(source: str = os.path.join(_HERE, "_native.c")) -> tuple[ModuleType | None, str | None]:
    """The native module, or why there is none (not built, or built from another ``source``)."""
    try:
        from kafkacompat.protocol import _native
    except ImportError:
        try:
            with open(BUILD_NOTE, encoding="utf-8") as note_file:
                note = note_file.read().strip()
        except OSError:
            note = "it was not built (install the package with a C compiler present)"
        return None, f"native reader not built: {note}"
    try:
        with open(source, "rb") as source_file:  # beside it in a source tree or an editable install
            current_source = source_crc(source_file.read())
    except OSError:
        return _native, None
    if current_source != _native.SOURCE_CRC32:
        return None, "native reader built from another _native.c: reinstall (pip install -e .)"
    return _native, None


_NATIVE_MODULE, _UNAVAILABLE = _load_native()
_path: CodecPath = NATIVE if _NATIVE_MODULE is not None and os.environ.get(ENV) != PURE else PURE
# Every class installed: (class, its Python readers, its native readers or None).
_installed: list[tuple[type[KafkaMessage], Mapping[int, Reader], Mapping[int, Reader] | None]] = []


def native_unavailable() -> str | None:
    """Why the native reader cannot be used (not built, stale), or None when it can."""
    return _UNAVAILABLE


def current() -> CodecPath:
    """``"native"`` or ``"pure"``: the readers messages are decoded with now."""
    return _path


def describe() -> str:
    """One line: the path in use, and why when it is the Python one."""
    if _path == NATIVE:
        return "native, C extension kafkacompat.protocol._native"
    if _UNAVAILABLE is not None:
        return f"pure Python; {_UNAVAILABLE}"
    if os.environ.get(ENV) == PURE:
        return f"pure Python, chosen by {ENV}=pure"
    return "pure Python, chosen by codec_path.use('pure')"


def use(path: CodecPath) -> None:
    """Decode with ``path`` from now on, in every message class loaded and to be loaded."""
    global _path
    if path not in (NATIVE, PURE):
        raise ConfigError(f"unknown codec path {path!r} (one of: native, pure)")
    if path == NATIVE and _NATIVE_MODULE is None:
        raise ConfigError(f"the native codec path cannot be used: {_UNAVAILABLE}")
    _path = path
    for cls, pure, native in _installed:
        cls._READERS = native if path == NATIVE and native is not None else pure


def install(*classes: type[KafkaMessage]) -> None:
    """Give each class native readers beside its Python ones (called by every generated module)."""
    for cls in classes:
        if any(done is cls for done, _, _ in _installed):
            continue
        pure = cls._READERS
        native = _native_readers(cls) if _NATIVE_MODULE is not None else None
        _installed.append((cls, pure, native))
        if _path == NATIVE and native is not None:
            cls._READERS = native


def _native_readers(cls: type[KafkaMessage]) -> dict[int, Reader]:
    assert _NATIVE_MODULE is not None
    by_table: dict[int, Reader] = {}  # versions of one layout share one reader, as in Python
    readers = {}
    for version, table in cls._LAYOUTS.items():
        reader = by_table.get(id(table))
        if reader is None:
            reader = by_table[id(table)] = _NATIVE_MODULE.Reader(table, cls._READERS[version])
        readers[version] = reader
    return readers
