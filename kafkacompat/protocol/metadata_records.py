"""KRaft metadata records and their frame.

A record in the KRaft metadata log (and in its snapshots) is framed as three
unsigned varints, frame version, record type (the spec's apiKey) and record
version, followed by the record body.  Frame version 1 is the only one in use;
version 0 was the 2.8 KRaft preview, which Kafka refuses to read.  KIP-746
introduced this frame so that the layout could change later: an unknown frame
version is therefore reported as exactly that, with what is supported.
"""

from __future__ import annotations

from kafkacompat.errors import DecodeError, EncodeError
from kafkacompat.protocol import _wire, messages
from kafkacompat.protocol.message import KafkaMessage

__all__ = ["FRAME_VERSION", "SUPPORTED_FRAME_VERSIONS", "decode_record", "encode_record", "record_class"]

FRAME_VERSION = 1
SUPPORTED_FRAME_VERSIONS = frozenset({FRAME_VERSION})


def record_class(record_type: int) -> type[KafkaMessage]:
    """The metadata record class for a record type (its spec's apiKey)."""
    name = messages.CLASS_BY_KEY.get((record_type, "metadata"))
    if name is None:
        raise DecodeError(f"unknown metadata record type {record_type}", what="metadata record")
    cls: type[KafkaMessage] = getattr(messages, name)
    return cls


def encode_record(record: KafkaMessage, version: int) -> bytes:
    """Frame and encode one metadata record."""
    if record.MESSAGE_TYPE != "metadata" or record.API_KEY is None:
        raise EncodeError(f"{record.NAME} is not a metadata record")
    head = _wire.uvarint(FRAME_VERSION) + _wire.uvarint(record.API_KEY) + _wire.uvarint(version)
    return head + record.encode(version)


def decode_record(data: bytes | bytearray | memoryview) -> tuple[KafkaMessage, int]:
    """Read one framed metadata record: (record, record version)."""
    what = "metadata record frame"
    try:
        frame_version, pos = _wire.read_uvarint(data, 0)
        record_type, pos = _wire.read_uvarint(data, pos)
        version, pos = _wire.read_uvarint(data, pos)
    except IndexError:
        raise DecodeError("truncated frame", what=what, offset=len(data)) from None
    except DecodeError as exc:
        raise DecodeError(exc.reason, what=what, offset=exc.offset) from None
    if frame_version not in SUPPORTED_FRAME_VERSIONS:
        supported = ", ".join(str(v) for v in sorted(SUPPORTED_FRAME_VERSIONS))
        note = " (version 0 is the Kafka 2.8 KRaft preview format)" if frame_version == 0 else ""
        raise DecodeError(
            f"unsupported frame version {frame_version}{note}; supported: {supported}",
            what=what,
            offset=0,
        )
    cls = record_class(record_type)
    return cls.decode(memoryview(data)[pos:], version), version
