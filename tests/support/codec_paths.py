"""The codec's two decoding paths, for tests that must hold on both.

``each_codec_path`` (a fixture in tests/conftest.py) runs a test once on the
native reader and once on the generated Python readers.  Where the native
reader could have been built (this Python has a C compiler) but is not in use,
the native run fails instead of skipping: a build that silently fell back
would otherwise go unnoticed.

``outcome`` says what decoding some bytes gives, on the path in use, in a form
two paths can be compared by: the message's ``shape`` (every value with its
type, floats by their bits, down to the unknown tagged fields), or the error's
text and offset.
"""

from __future__ import annotations

import shutil
import struct
import sysconfig
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kafkacompat.errors import DecodeError
from kafkacompat.protocol import codec_path
from kafkacompat.protocol.message import KafkaMessage, KafkaStruct

PATHS = (codec_path.NATIVE, codec_path.PURE)


def compiler_present() -> bool:
    """Whether this Python's C compiler is installed (then the build makes the native reader)."""
    command = str(sysconfig.get_config_var("CC") or "").split()
    return bool(command) and shutil.which(command[0]) is not None


@contextmanager
def on_path(path: codec_path.CodecPath) -> Iterator[None]:
    previous = codec_path.current()
    codec_path.use(path)
    try:
        yield
    finally:
        codec_path.use(previous)


def shape(value: Any) -> Any:
    """``value`` as nested tuples of types and values: equal shapes are the same objects, type for type."""
    if isinstance(value, KafkaStruct):
        fields = tuple(shape(getattr(value, info.name)) for info in value._FIELDS)
        return (type(value), fields, value.unknown_tagged_fields)
    if isinstance(value, list):
        return (type(value), tuple(shape(item) for item in value))
    if isinstance(value, float):
        return (float, struct.pack(">d", value))  # a NaN is equal to itself here
    if isinstance(value, uuid.UUID):
        return (type(value), value.int, value.is_safe)
    return (type(value), value)


def outcome(cls: type[KafkaMessage], data: bytes, version: int) -> tuple[Any, ...]:
    """``("ok", shape)`` or ``("error", text, offset)`` of decoding ``data`` on the path in use."""
    try:
        return ("ok", shape(cls.decode(data, version)))
    except DecodeError as exc:
        return ("error", str(exc), exc.offset)


def same_on_both_paths(cls: type[KafkaMessage], data: bytes, version: int) -> tuple[Any, ...]:
    """The outcome on the path in use; on the native path, checked equal to the Python readers' one.

    Bytes the Python readers read must be read by the native reader itself: one
    it hands to them would still decode right, but at the Python readers' speed.
    """
    got = outcome(cls, data, version)
    if codec_path.current() == codec_path.NATIVE:
        with on_path(codec_path.PURE):
            assert got == outcome(cls, data, version)
        if got[0] == "ok":
            assert native_reads(cls, data, version)
    return got


def native_reads(cls: type[KafkaMessage], data: bytes, version: int) -> bool:
    """Whether the native reader reads ``data`` itself, without handing it to the Python reader."""
    reader = cls._READERS[version]
    strict = getattr(reader, "strict", None)
    assert strict is not None, f"{cls.NAME} v{version} is not read by the native reader"
    return strict(data, 0) is not None
