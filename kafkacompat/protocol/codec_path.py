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

The native module is loaded on the first decode that needs it, not at import:
mapped, it costs a process about 80 KiB, which a process that only negotiates
(a probe, ``inspect``, a connection opened for its capabilities) would pay for
nothing; the first contact's own messages (``_FIRST_CONTACT``) decode in Python
until something else has loaded it.

The broker side of each message module (the readers of requests, the writers
of responses) is generated apart, in ``messages/_broker/``: a client never
reads a request nor writes a response, so its table there is a ``broker_side``
mapping that imports that module on first use, which installs the real table
(``broker_side_loaded``).

``current()`` says which path is in use and ``describe()`` why (``kafkacompat
--version`` prints it); ``use()`` switches (the codec tests run on both paths).
``KAFKACOMPAT_CODEC=pure`` in the environment starts on the Python readers.
"""

from __future__ import annotations

import _thread
import binascii
import importlib
import os
from collections.abc import Callable, Iterator, Mapping
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


# The first contact's messages: decoded by every connection, each a few hundred bytes.
# They never load the native module (a process that only negotiates, a probe or an
# ``inspect``, is spared its memory); they use it once something else has loaded it.
_FIRST_CONTACT = frozenset({"ApiVersionsRequest", "ApiVersionsResponse", "RequestHeader", "ResponseHeader"})

_load_lock = _thread.allocate_lock()
_loaded = False  # whether the native module was looked for (_NATIVE_MODULE, _UNAVAILABLE say what came of it)
_NATIVE_MODULE: ModuleType | None = None
_UNAVAILABLE: str | None = None
_path: CodecPath = PURE if os.environ.get(ENV) == PURE else NATIVE  # NATIVE: once loaded, if it loads
# Every class installed -> [its Python readers, its native readers (None: not made, or none)].
_installed: dict[type[KafkaMessage], list[Any]] = {}


class _NativeOnFirstUse(dict):  # type: ignore[type-arg]
    """A class's Python readers until its first decode, which loads the native module and
    gives every installed class its native readers (the answer comes from those)."""

    __slots__ = ("cls",)

    def __init__(self, pure: Mapping[int, Reader], cls: type[KafkaMessage]) -> None:
        super().__init__(pure)
        self.cls = cls

    def __getitem__(self, version: int) -> Reader:
        _settle()
        return self.cls._READERS[version]

    def get(self, version: int, default: Any = None) -> Any:
        _settle()
        return self.cls._READERS.get(version, default)


class _BrokerSide(Mapping[int, Any]):
    """A class's readers or writers kept on the broker side (``messages/_broker/``): the
    first use imports that module, which puts the real table in this one's place."""

    __slots__ = ("_attribute", "_cls")

    def __init__(self, cls: type[KafkaMessage], attribute: str) -> None:
        self._cls, self._attribute = cls, attribute

    def _table(self) -> Mapping[int, Any]:
        module = self._cls.__module__
        head, _, name = module.rpartition(".")
        importlib.import_module(f"{head}._broker.{name}")
        table: Mapping[int, Any] = getattr(self._cls, self._attribute)
        if table is self:
            raise RuntimeError(f"{module}'s broker side did not set {self._cls.__name__}.{self._attribute}")
        return table

    def __getitem__(self, version: int) -> Any:
        return self._table()[version]

    def get(self, version: int, default: Any = None) -> Any:
        return self._table().get(version, default)

    def __iter__(self) -> Iterator[int]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


def broker_side(cls: type[KafkaMessage], attribute: str) -> Mapping[int, Any]:
    """``cls``'s ``_READERS`` or ``_WRITERS``, loaded from its broker side on first use."""
    return _BrokerSide(cls, attribute)


def broker_side_loaded(*classes: type[KafkaMessage]) -> None:
    """A broker side module set the real tables of ``classes``: readers now there are installed."""
    with _load_lock:
        for cls in classes:
            entry = _installed.get(cls)
            if entry is not None and isinstance(entry[0], _BrokerSide):
                entry[0] = cls._READERS
                _place(cls, entry)


def _settle() -> None:
    """Look for the native module (once) and give every installed class the readers of the path."""
    global _loaded, _NATIVE_MODULE, _UNAVAILABLE, _path
    with _load_lock:
        if _loaded:
            return
        _NATIVE_MODULE, _UNAVAILABLE = _load_native()
        if _NATIVE_MODULE is None:
            _path = PURE
        _loaded = True
        _apply()


def _apply() -> None:
    """Every installed class's ``_READERS``: its native readers on the native path, else its own."""
    for cls, entry in _installed.items():
        _apply_one(cls, entry)


def _apply_one(cls: type[KafkaMessage], entry: list[Any]) -> None:
    pure, native = entry
    if isinstance(pure, _BrokerSide):
        return  # its readers are installed when its broker side loads
    if _path == NATIVE and _NATIVE_MODULE is not None and native is None:
        native = entry[1] = _native_readers(cls, pure)
    cls._READERS = native if _path == NATIVE and native is not None else pure


def _place(cls: type[KafkaMessage], entry: list[Any]) -> None:
    """A class's readers as they stand: the path's, once the native module was looked for;
    before, its Python readers behind the mapping that looks for it on first use (except
    the first contact's, and a broker side not loaded yet)."""
    if _loaded:
        _apply_one(cls, entry)
    elif _path == NATIVE and cls.NAME not in _FIRST_CONTACT and not isinstance(entry[0], _BrokerSide):
        cls._READERS = _NativeOnFirstUse(entry[0], cls)


def native_unavailable() -> str | None:
    """Why the native reader cannot be used (not built, stale), or None when it can."""
    _settle()
    return _UNAVAILABLE


def current() -> CodecPath:
    """``"native"`` or ``"pure"``: the readers messages are decoded with now."""
    _settle()
    return _path


def describe() -> str:
    """One line: the path in use, and why when it is the Python one."""
    _settle()
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
    _settle()
    if path == NATIVE and _NATIVE_MODULE is None:
        raise ConfigError(f"the native codec path cannot be used: {_UNAVAILABLE}")
    with _load_lock:
        _path = path
        _apply()


def install(*classes: type[KafkaMessage]) -> None:
    """Give each class native readers beside its Python ones (called by every generated module).

    Until the native module is looked for, a class keeps its Python readers behind a
    mapping that looks for it on the class's first decode (the first contact's classes
    keep theirs as they are: see ``_FIRST_CONTACT``)."""
    with _load_lock:  # threads may import message modules while another settles the path
        for cls in classes:
            if cls not in _installed:
                entry = _installed[cls] = [cls._READERS, None]
                _place(cls, entry)


def _native_readers(cls: type[KafkaMessage], pure: Mapping[int, Reader]) -> dict[int, Reader]:
    assert _NATIVE_MODULE is not None
    by_table: dict[int, Reader] = {}  # versions of one layout share one reader, as in Python
    readers = {}
    for version, table in cls._LAYOUTS.items():
        reader = by_table.get(id(table))
        if reader is None:
            reader = by_table[id(table)] = _NATIVE_MODULE.Reader(table, pure[version])
        readers[version] = reader
    return readers
