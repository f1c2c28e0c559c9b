"""Base classes of the generated messages.

Generated classes hold their fields in ``__slots__`` and carry, as class
attributes, the facts of their spec: the API key, the valid, flexible and
deprecated version ranges, and one reader and one writer per version.  All the
behaviour that is not on the hot path (equality, repr, dict conversion) lives
here once, driven by the ``_FIELDS`` table each class declares.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, Literal, NamedTuple, Self, TypeVar

from kafkacompat.errors import DecodeError, EncodeError
from kafkacompat.protocol import _wire
from kafkacompat.protocol.versions import VersionRange

__all__ = [
    "FieldAlias", "FieldInfo", "KafkaMessage", "KafkaRequest", "KafkaStruct", "MessageType", "ResponseT",
]

MessageType = Literal["request", "response", "header", "data", "metadata"]


class FieldInfo(NamedTuple):
    """One field of a generated struct, as its spec declares it."""

    name: str
    kind: str  # a primitive wire type, or the struct's name
    struct: type[KafkaStruct] | None
    is_array: bool
    versions: VersionRange
    nullable_versions: VersionRange
    tagged_versions: VersionRange
    tag: int | None
    ignorable: bool


Reader = Callable[[Any, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]


class KafkaStruct:
    """A struct of a Kafka message: named fields, value equality, dict form."""

    # Unknown tagged fields: written by every constructor and decoder, read by
    # writers directly (hot path) and by everyone else through the property.
    __slots__ = ("_unknown_tags",)

    def __init__(self) -> None:
        self._unknown_tags = _wire.EMPTY_TAGS

    _FIELDS: ClassVar[tuple[FieldInfo, ...]] = ()
    MAP_KEY: ClassVar[tuple[str, ...]] = ()
    # older name -> current name, for fields Kafka renamed (see FieldAlias)
    _ALIASES: ClassVar[Mapping[str, str]] = {}

    _unknown_tags: tuple[tuple[int, bytes], ...]

    @property
    def unknown_tagged_fields(self) -> tuple[tuple[int, bytes], ...]:
        """Tagged fields this codec does not know, kept so that re-encoding is lossless."""
        try:
            return self._unknown_tags
        except AttributeError:
            return _wire.EMPTY_TAGS

    @unknown_tagged_fields.setter
    def unknown_tagged_fields(self, value: tuple[tuple[int, bytes], ...]) -> None:
        self._unknown_tags = tuple(value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, info[0]) for info in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, KafkaStruct)
        return self._values() == other._values() and tuple(self.unknown_tagged_fields) == tuple(
            other.unknown_tagged_fields
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass with eq

    def __repr__(self) -> str:
        inner = ", ".join(f"{info[0]}={getattr(self, info[0])!r}" for info in self._FIELDS)
        if self.unknown_tagged_fields:
            inner += f", unknown_tagged_fields={self.unknown_tagged_fields!r}"
        return f"{type(self).__qualname__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with snake_case keys (UUIDs and bytes as text)."""
        out: dict[str, Any] = {}
        for name, kind, struct, is_array, *_ in self._FIELDS:
            value = getattr(self, name)
            if value is None:
                out[name] = None
            elif is_array:
                out[name] = [_to_plain(item, kind, struct) for item in value]
            else:
                out[name] = _to_plain(value, kind, struct)
        if self.unknown_tagged_fields:
            out["_unknown_tagged_fields"] = [
                [tag, _wire.bytes_to_text(data)] for tag, data in self.unknown_tagged_fields
            ]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Build from the form ``to_dict`` returns; unknown keys are an error."""
        if not isinstance(data, Mapping):
            raise EncodeError(f"{cls.__qualname__}.from_dict needs a mapping, not {type(data).__name__}")
        known = {info[0]: info for info in cls._FIELDS}
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key == "_unknown_tagged_fields":
                continue
            key = cls._ALIASES.get(key, key)
            info = known.get(key)
            if info is None:
                raise EncodeError(f"{cls.__qualname__} has no field {key!r}")
            _, kind, struct, is_array, *_ = info
            if value is None:
                kwargs[key] = None
            elif is_array:
                kwargs[key] = [_from_plain(item, kind, struct) for item in value]
            else:
                kwargs[key] = _from_plain(value, kind, struct)
        obj = cls(**kwargs)
        raw_tags = data.get("_unknown_tagged_fields")
        if raw_tags:
            obj.unknown_tagged_fields = tuple(
                (int(tag), _wire.bytes_from_text(text)) for tag, text in raw_tags
            )
        return obj


def _to_plain(value: Any, kind: str, struct: type[KafkaStruct] | None) -> Any:
    if struct is not None:
        return value.to_dict()
    if kind == "uuid":
        return _wire.uuid_to_text(value)
    if kind in ("bytes", "records"):
        return _wire.bytes_to_text(value)
    return value


def _from_plain(value: Any, kind: str, struct: type[KafkaStruct] | None) -> Any:
    if struct is not None:
        return struct.from_dict(value)
    if kind == "uuid":
        from uuid import UUID  # on first use: uuid imports platform

        return value if isinstance(value, UUID) else _wire.uuid_from_text(value)
    if kind in ("bytes", "records"):
        return value if isinstance(value, bytes | bytearray) else _wire.bytes_from_text(value)
    return value


class KafkaMessage(KafkaStruct):
    """A top-level message: a request, response, header, data or metadata record."""

    __slots__ = ()

    NAME: ClassVar[str]
    API_KEY: ClassVar[int | None] = None
    MESSAGE_TYPE: ClassVar[MessageType]
    VALID_VERSIONS: ClassVar[VersionRange]
    FLEXIBLE_VERSIONS: ClassVar[VersionRange]
    DEPRECATED_VERSIONS: ClassVar[VersionRange] = VersionRange.NONE
    LATEST_VERSION_UNSTABLE: ClassVar[bool] = False
    LISTENERS: ClassVar[tuple[str, ...]] = ()
    # Versions Kafka 4.0+ removed (kafkacompat.reference.removals says why); they
    # stay readable and writable here, for brokers of every era.
    REMOVED_VERSIONS: ClassVar[VersionRange] = VersionRange.NONE
    REMOVED_SINCE: ClassVar[str | None] = None
    REMOVAL_KIND: ClassVar[str | None] = None
    _READERS: ClassVar[Mapping[int, Reader]]
    _WRITERS: ClassVar[Mapping[int, Writer]]
    # Per version, the layout table the native reader interprets (kafkacompat.protocol.codec_path).
    _LAYOUTS: ClassVar[Mapping[int, tuple[Any, ...]]]

    @classmethod
    def defined_by_current_specs(cls, version: int) -> bool:
        """Whether Kafka's current (4.x) specs still define ``version`` of this message."""
        return version in cls.VALID_VERSIONS and version not in cls.REMOVED_VERSIONS

    def encode(self, version: int) -> bytes:
        """The body at ``version`` (no size prefix, no header)."""
        writer = self._WRITERS.get(version)
        if writer is None:
            raise EncodeError(f"{self.NAME} has no version {version} (valid versions: {self.VALID_VERSIONS})")
        out = bytearray()
        try:
            writer(out, self)
        except EncodeError as exc:
            raise EncodeError(f"{self.NAME} v{version}: {exc.message}") from None
        except _wire.ENCODE_FAILURES as exc:
            raise EncodeError(f"{self.NAME} v{version}: {exc}") from None
        return bytes(out)

    @classmethod
    def decode(
        cls, data: bytes | bytearray | memoryview, version: int, *, allow_trailing: bool = False
    ) -> Self:
        """Read a whole body at ``version``; every failure is a ``DecodeError``.

        Bytes left over after the message are an error unless ``allow_trailing``
        (Kafka's Java client does not check them; the handshake uses this to
        read replies the way Kafka does).
        """
        reader = cls._READERS.get(version)
        if reader is None:
            raise DecodeError(
                f"no such version (valid versions: {cls.VALID_VERSIONS})",
                what=cls.NAME,
                version=version,
            )
        obj, end = decode_at(cls.NAME, reader, data, 0, version)
        if end != len(data) and not allow_trailing:
            raise DecodeError(
                f"{len(data) - end} bytes left over after the message",
                what=cls.NAME,
                version=version,
                offset=end,
            )
        return obj  # type: ignore[no-any-return]


#: A request's type parameter: the response class it is answered with (covariant, so a
#: ``KafkaRequest[MetadataResponse]`` is also a ``KafkaRequest[KafkaMessage]``).
_Answer = TypeVar("_Answer", bound=KafkaMessage, covariant=True)
#: For signatures: ``def request(message: KafkaRequest[ResponseT]) -> ResponseT``.
ResponseT = TypeVar("ResponseT", bound=KafkaMessage)


class KafkaRequest(KafkaMessage, Generic[_Answer]):
    """A request whose response class is known: ``MetadataRequest`` is a
    ``KafkaRequest[MetadataResponse]``.

    The type parameter lets a driver's ``request()`` return the right response
    type to a type checker; ``RESPONSE_CLASS`` is the same class at run time.
    """

    __slots__ = ()

    RESPONSE_CLASS: ClassVar[type[KafkaMessage]]


def decode_at(name: str, reader: Reader, data: Any, pos: int, version: int) -> tuple[Any, int]:
    """Run a generated reader from ``pos``; returns the object and where it ended.

    Readers work on ``bytes`` (slicing and decoding strings is fastest there);
    any other buffer is copied once here.
    """
    if data.__class__ is not bytes:
        data = bytes(data)
    try:
        return reader(data, pos)
    except DecodeError as exc:
        raise DecodeError(exc.reason, what=name, version=version, offset=exc.offset) from None
    except _wire.DECODE_FAILURES as exc:  # pragma: no cover - generated readers translate
        raise DecodeError(str(exc), what=name, version=version) from None


class FieldAlias:
    """An older name of a field Kafka renamed: reads and writes the field under its new name."""

    __slots__ = ("target",)

    def __init__(self, target: str) -> None:
        self.target = target

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return self if obj is None else getattr(obj, self.target)

    def __set__(self, obj: object, value: Any) -> None:
        setattr(obj, self.target, value)
