"""Wire primitives under the generated codec.

The generated modules are straight-line code: one function per struct and per
wire layout, reading fixed-width runs with precompiled ``struct.Struct``
objects and calling the readers below for everything of variable length.
Readers take ``(buf, pos)`` and return ``(value, new_pos)``; writers append to
a ``bytearray``.

Every length read from the wire is checked against the bytes actually present
before anything is allocated or looped over, so a hostile count of 2**31-1 in a
ten-byte body fails at once with a ``DecodeError`` instead of allocating or
spinning.  Counts are also held to Kafka's own ceilings (Kafka 4.4 refuses
arrays of more than 1,000,000 elements and tagged sections of more than 10,000
fields while reading, before allocating): a count that fits the bytes can still
ask for far more objects than any real reply holds.  Low-level failures
(``struct.error``, ``IndexError``, bad UTF-8) are turned into ``DecodeError``
by the generated code, which knows the offset.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from kafkacompat.errors import DecodeError, EncodeError

if TYPE_CHECKING:
    import uuid

# Failures of the standard library that mean "these bytes are not what the
# schema says"; generated code catches exactly these and reports an offset.
DECODE_FAILURES = (struct.error, IndexError, ValueError, OverflowError, TypeError)
ENCODE_FAILURES = (struct.error, TypeError, AttributeError, ValueError, OverflowError)

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")
BOOL = struct.Struct(">?")

# ``uuid`` imports ``platform`` (together about 80 kB of bytecode) and no message a
# plain handshake exchanges has a UUID field, so both are loaded on first use:
# ``ZERO_UUID`` through the module ``__getattr__`` below, the class in ``read_uuid``.
ZERO_UUID: uuid.UUID
EMPTY_TAGS: tuple[tuple[int, bytes], ...] = ()


def __getattr__(name: str) -> Any:
    if name != "ZERO_UUID":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from uuid import UUID

    value = globals()["ZERO_UUID"] = UUID(int=0)
    return value


class _Default:
    """Marks an argument left out, where ``None`` is itself a meaningful value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()

T = TypeVar("T")


class KeyedList(list[T]):
    """A list of structs whose schema names key fields (Kafka's ``mapKey``).

    It stays a plain list for equality and iteration, and adds lookups by key,
    as Kafka's keyed collections do.  Duplicate keys are kept; ``find`` returns
    the first match.
    """

    __slots__ = ()

    def find(self, *key: Any) -> T | None:
        for item in self:
            if _key_of(item) == key:
                return item
        return None

    def by_key(self) -> dict[tuple[Any, ...], T]:
        index: dict[tuple[Any, ...], T] = {}
        for item in self:
            index.setdefault(_key_of(item), item)
        return index


def _key_of(item: Any) -> tuple[Any, ...]:
    return tuple(getattr(item, name) for name in item.MAP_KEY)


# ---------------------------------------------------------------- varints --


def read_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (a uint32)."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    value = byte & 0x7F
    shift = 7
    for _ in range(4):
        pos += 1
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + 1
        shift += 7
    raise DecodeError("unsigned varint longer than 5 bytes", offset=pos)


def read_uvarlong(buf: Any, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 10 bytes (a uint64)."""
    value = 0
    shift = 0
    for _ in range(10):
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise DecodeError("unsigned varlong longer than 10 bytes", offset=pos)


def read_varint(buf: Any, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed int32."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: Any, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed int64."""
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


_SMALL_UVARINTS = tuple(bytes((n,)) for n in range(0x80))


def uvarint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _SMALL_UVARINTS[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise EncodeError(f"{value} does not fit an unsigned varint")
    return _uvarint_bytes(value)


def _uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise EncodeError(f"{value} does not fit a varint (int32)")
    return _uvarint_bytes(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def varlong(value: int) -> bytes:
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise EncodeError(f"{value} does not fit a varlong (int64)")
    return _uvarint_bytes(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


# ------------------------------------------------------ lengths and counts --

#: Kafka 4.4's ceilings on what one count may announce, refused before allocating.
MAX_ARRAY_ELEMENTS = 1_000_000
MAX_TAGGED_FIELDS = 10_000


def _check_room(buf: Any, pos: int, length: int) -> int:
    end = pos + length
    if end > len(buf):
        raise DecodeError(
            f"length {length} runs past the end of the data ({len(buf) - pos} bytes left)",
            offset=pos,
        )
    return end


def read_array_count(buf: Any, pos: int) -> tuple[int, int]:
    """A classic array count (int32, -1 for null), checked against the bytes left."""
    (count,) = INT32.unpack_from(buf, pos)
    pos += 4
    if count > len(buf) - pos:
        raise DecodeError(f"array count {count} exceeds the {len(buf) - pos} bytes left", offset=pos - 4)
    if count > MAX_ARRAY_ELEMENTS:
        _too_many(count, pos - 4)
    return (count if count >= -1 else _bad_length(count, pos - 4)), pos


def read_compact_array_count(buf: Any, pos: int) -> tuple[int, int]:
    """A compact array count (uvarint N+1, 0 for null), checked against the bytes left."""
    start = pos
    raw, pos = read_uvarint(buf, pos)
    count = raw - 1
    if count > len(buf) - pos:
        raise DecodeError(f"array count {count} exceeds the {len(buf) - pos} bytes left", offset=start)
    if count > MAX_ARRAY_ELEMENTS:
        _too_many(count, start)
    return count, pos


def read_tag_count(buf: Any, pos: int) -> tuple[int, int]:
    """The number of fields in a tagged section, held to ``MAX_TAGGED_FIELDS`` and the bytes left.

    Each field takes at least two bytes (its tag and its size), so a count
    above half the bytes left cannot be true.
    """
    start = pos
    count, pos = read_uvarint(buf, pos)
    if count > MAX_TAGGED_FIELDS:
        raise DecodeError(
            f"tagged section of {count} fields is above the limit of {MAX_TAGGED_FIELDS}", offset=start
        )
    if 2 * count > len(buf) - pos:
        left = len(buf) - pos
        raise DecodeError(f"tagged section of {count} fields exceeds the {left} bytes left", offset=start)
    return count, pos


def _too_many(count: int, pos: int) -> None:
    raise DecodeError(f"array of {count} elements is above the limit of {MAX_ARRAY_ELEMENTS}", offset=pos)


def _bad_length(length: int, pos: int) -> int:
    raise DecodeError(f"negative length {length}", offset=pos)


def null_error(field: str, pos: int) -> DecodeError:
    return DecodeError(f"non-nullable field {field} was null", offset=pos)


# ---------------------------------------------------------------- strings --


def read_string(buf: Any, pos: int) -> tuple[str | None, int]:
    """A classic string (int16 length, -1 for null)."""
    (length,) = INT16.unpack_from(buf, pos)
    pos += 2
    if length < 0:
        if length == -1:
            return None, pos
        _bad_length(length, pos - 2)
    end = _check_room(buf, pos, length)
    return str(buf[pos:end], "utf-8"), end


def read_compact_string(buf: Any, pos: int) -> tuple[str | None, int]:
    """A compact string (uvarint N+1, 0 for null)."""
    raw, pos = read_uvarint(buf, pos)
    if raw == 0:
        return None, pos
    end = _check_room(buf, pos, raw - 1)
    return str(buf[pos:end], "utf-8"), end


def read_compact_text(buf: Any, pos: int, field: str) -> tuple[str, int]:
    """A compact string that may not be null (``field`` names it in the error)."""
    value, end = read_compact_string(buf, pos)
    if value is None:
        raise null_error(field, pos)
    return value, end


def read_bytes(buf: Any, pos: int) -> tuple[bytes | None, int]:
    """Classic bytes (int32 length, -1 for null)."""
    (length,) = INT32.unpack_from(buf, pos)
    pos += 4
    if length < 0:
        if length == -1:
            return None, pos
        _bad_length(length, pos - 4)
    end = _check_room(buf, pos, length)
    return bytes(buf[pos:end]), end


def read_compact_bytes(buf: Any, pos: int) -> tuple[bytes | None, int]:
    """Compact bytes (uvarint N+1, 0 for null)."""
    raw, pos = read_uvarint(buf, pos)
    if raw == 0:
        return None, pos
    end = _check_room(buf, pos, raw - 1)
    return bytes(buf[pos:end]), end


def read_uuid(buf: Any, pos: int) -> tuple[uuid.UUID, int]:
    end = pos + 16
    if end > len(buf):
        raise DecodeError("uuid runs past the end of the data", offset=pos)
    from uuid import UUID

    return UUID(bytes=bytes(buf[pos:end])), end


_ARRAY_FORMATS: dict[tuple[str, int], struct.Struct] = {}


class _ShortArrayFormats(dict[str, tuple[struct.Struct, ...]]):
    """Per element type, the formats of its short arrays, compiled the first time a message uses it.

    Seven types times 32 formats is about 40 KiB that a connection exchanging
    only ApiVersions never touches; after the first miss a lookup is a plain dict hit.
    ``layout`` gives the format of ``n`` elements of type ``code``.
    """

    def __init__(self, layout: Callable[[int, str], str], sizes: int = 32) -> None:
        super().__init__()
        self.layout = layout
        self.sizes = sizes

    def __missing__(self, code: str) -> tuple[struct.Struct, ...]:
        layouts = self[code] = tuple(struct.Struct(self.layout(n, code)) for n in range(self.sizes))
        return layouts


# Formats of 0..31 numbers per element type ("bhiqHId"), for the short arrays
# generated readers meet most (replica lists, ISRs, partition ids).
SHORT_ARRAYS: dict[str, tuple[struct.Struct, ...]] = _ShortArrayFormats(lambda n, code: f">{n}{code}")
# Readers: indexed by a compact count byte 1..32 (n - 1 elements), which the format skips.
COUNTED_ARRAYS: dict[str, tuple[struct.Struct, ...]] = _ShortArrayFormats(
    lambda n, code: f">x{max(0, n - 1)}{code}", sizes=33
)
# Writers: 0..31 numbers after their count, a compact count byte or a classic int32.
COMPACT_PREFIXED: dict[str, tuple[struct.Struct, ...]] = _ShortArrayFormats(lambda n, code: f">B{n}{code}")
CLASSIC_PREFIXED: dict[str, tuple[struct.Struct, ...]] = _ShortArrayFormats(lambda n, code: f">i{n}{code}")


def read_int_array(buf: Any, pos: int, count: int, code: str, width: int) -> tuple[list[Any], int]:
    """``count`` fixed-width numbers in one unpack (count already checked)."""
    end = pos + count * width
    if end > len(buf):
        _check_room(buf, pos, count * width)
    layout = _ARRAY_FORMATS.get((code, count))
    if layout is None:
        layout = struct.Struct(f">{count}{code}")
        if count <= 256:  # keep the cache small: large arrays are rare and cheap to compile
            _ARRAY_FORMATS[(code, count)] = layout
    return list(layout.unpack_from(buf, pos)), end


def write_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise EncodeError(f"string of {len(data)} bytes is longer than 32767")
    out += INT16.pack(len(data))
    out += data


def write_compact_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise EncodeError(f"string of {len(data)} bytes is longer than 32767")
    out += uvarint(len(data) + 1)
    out += data


def write_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT32.pack(len(value))
    out += value


def write_compact_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out.append(0)
        return
    out += uvarint(len(value) + 1)
    out += value


def write_varint(out: bytearray, value: int) -> None:
    out += varint(value)


def write_varlong(out: bytearray, value: int) -> None:
    out += varlong(value)


def write_uuid(out: bytearray, value: uuid.UUID) -> None:
    out += value.bytes


def write_int_array(out: bytearray, values: Sequence[Any], code: str) -> None:
    out += struct.pack(f">{len(values)}{code}", *values)


# ----------------------------------------------------------- tagged fields --


def read_tag_header(buf: Any, pos: int) -> tuple[int, int, int]:
    """One tagged field's (tag, start, end); the caller decodes buf[start:end]."""
    tag, pos = read_uvarint(buf, pos)
    size, pos = read_uvarint(buf, pos)
    return tag, pos, _check_room(buf, pos, size)


def write_tagged_fields(
    out: bytearray,
    known: Iterable[tuple[int, bytes | bytearray]],
    unknown: Iterable[tuple[int, bytes]],
) -> None:
    """Write the tagged section: known fields and unknown ones kept from decoding, by tag."""
    fields = sorted([*known, *unknown], key=lambda item: item[0])
    out += uvarint(len(fields))
    previous = -1
    for tag, data in fields:
        if tag == previous:
            raise EncodeError(f"tagged field {tag} is written twice")
        previous = tag
        out += uvarint(tag)
        out += uvarint(len(data))
        out += data


# ---------------------------------------------------- dict representation --


def uuid_to_text(value: uuid.UUID) -> str:
    """Kafka's text form of a UUID: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_text(text: str) -> uuid.UUID:
    from uuid import UUID

    if len(text) == 22:
        return UUID(bytes=base64.urlsafe_b64decode(text + "=="))
    return UUID(text)


def bytes_to_text(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def bytes_from_text(text: str) -> bytes:
    return base64.b64decode(text, validate=True)
