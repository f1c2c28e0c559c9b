"""How large a reply may be, per request: ceilings checked from the size prefix, before allocating.

A frame limit of 100 MiB fits a Fetch; it does not fit an ApiVersions reply,
which from any real broker is a few kilobytes.  Held to the frame limit, a
broker that nobody vouches for can make a client buffer and decode up to
100 MiB of well-formed entries (10 million ApiVersions rows cost over a
gigabyte once decoded) for a question whose honest answer is tiny.  So each
reply is held to a ceiling that fits the request it answers, with room to
spare for the largest real answers:

==================================  ========  ========================================
request                             ceiling   the largest real answer
==================================  ========  ========================================
ApiVersions                         64 KiB    about 1 KiB (Kafka 4.x: ~90 APIs, features)
Metadata asking for no topics (v1+) 256 KiB   20-80 bytes a broker: 3,200 brokers or more
FindCoordinator                     1 MiB     a batch of keys with their coordinators
DescribeCluster                     256 KiB   as Metadata without topics
SaslHandshake, SaslAuthenticate     64 KiB    a mechanism list, a SCRAM message
UpdateFeatures                      1 MiB     one result per feature
Metadata v0, the pre-0.10 probe     2 MiB     every topic of the cluster (60,000 partitions)
Metadata naming topics, or all      16 MiB    100,000 partitions x 3 replicas: 4.5 MiB (v12)
anything else                       the connection's ``max_frame_size``
==================================  ========  ========================================

A size does not bound what a reply costs once decoded: a Metadata answer of
2 MiB can name 100,000 brokers, ten times as many objects as a real cluster
has brokers.  So Metadata is also held to ``metadata_brokers`` (20,000) brokers, a
count read from the frame before anything of it is decoded (``check_counts``).
A decoded Metadata answer costs about eight times its size (10,000 partitions x
3 replicas: 0.4 MiB on the wire, 3.5 MiB decoded).

``ReplyLimits`` lives in ``ConnectionConfig.reply_limits``; a user who needs
more raises one ceiling (``ReplyLimits(ceilings={18: 1 << 20})``,
``topic_metadata=64 << 20``, ``metadata_brokers=50_000``) or all of them.  No
ceiling is ever above ``max_frame_size``.  Sans-I/O: a driver asks
``limit_for`` when it writes a request and hands the number to
``FrameSplitter.next_frame`` when it reads the answer, then ``check_counts``
before it decodes the answer.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from kafkacompat.errors import ConfigError, DecodeError, ReplyTooLargeError
from kafkacompat.protocol import _wire
from kafkacompat.protocol.messages.api_key_numbers import (
    API_VERSIONS,
    DESCRIBE_CLUSTER,
    FIND_COORDINATOR,
    METADATA,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    UPDATE_FEATURES,
)

__all__ = ["DEFAULT_CEILINGS", "ReplyLimits"]

KIB = 1024
MIB = 1024 * KIB

# Plain ints (not ``ApiKey`` members, whose enum every connection would then define): compared
# for every request sent, and read per connect.
_METADATA: Final = METADATA
_API_VERSIONS: Final = API_VERSIONS

#: Ceiling per API key of the request answered (Metadata: when it asks for no topics).
DEFAULT_CEILINGS: Mapping[int, int] = MappingProxyType(
    {
        API_VERSIONS: 64 * KIB,
        METADATA: 256 * KIB,
        FIND_COORDINATOR: 1 * MIB,
        DESCRIBE_CLUSTER: 256 * KIB,
        SASL_HANDSHAKE: 64 * KIB,
        SASL_AUTHENTICATE: 64 * KIB,
        UPDATE_FEATURES: 1 * MIB,
    }
)


@dataclass(frozen=True, slots=True)
class ReplyLimits:
    """Ceilings on reply sizes by the API key of the request.

    ``ceilings`` overrides the defaults key by key; ``default`` is the ceiling
    of every other request (None: the connection's ``max_frame_size``).  A
    Metadata request that names topics, or asks for all of them, has no
    ceiling of its own: its answer grows with the cluster's topics.
    """

    ceilings: Mapping[int, int] = field(default_factory=dict)
    default: int | None = None
    #: The answer to the Metadata v0 request that tells a pre-0.10 broker (the handshake's
    #: probe): it lists every topic, yet it is read before anything is known of the broker.
    legacy_probe: int = 2 * MIB
    #: The answer to a Metadata request naming topics (or asking for all of them): it grows with
    #: the cluster's partitions, 4.5 MiB for 100,000 partitions of 3 replicas at v12.
    topic_metadata: int = 16 * MIB
    #: Brokers a Metadata answer may name, counted before any is decoded.
    metadata_brokers: int = 20_000

    def __post_init__(self) -> None:
        merged = {**DEFAULT_CEILINGS, **self.ceilings}
        for key, value in merged.items():
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 0x7FFFFFFF:
                raise ConfigError(
                    f"the reply ceiling for API key {key} must be 1 to 2**31-1 bytes, not {value!r}"
                )
        if isinstance(self.legacy_probe, bool) or not isinstance(self.legacy_probe, int) or not (
            0 < self.legacy_probe <= 0x7FFFFFFF
        ):
            raise ConfigError(
                f"the legacy probe's ceiling must be 1 to 2**31-1 bytes, not {self.legacy_probe!r}"
            )
        for name in ("topic_metadata", "metadata_brokers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 0x7FFFFFFF:
                raise ConfigError(f"the {name} ceiling must be 1 to 2**31-1, not {value!r}")
        if self.default is not None and not 0 < self.default <= 0x7FFFFFFF:
            raise ConfigError(f"the default reply ceiling must be 1 to 2**31-1 bytes, not {self.default!r}")
        object.__setattr__(self, "ceilings", MappingProxyType(merged))

    @staticmethod
    def depends_on_request(api_key: int) -> bool:
        """Whether the ceiling for ``api_key``'s replies depends on the request (Metadata's)."""
        return api_key == _METADATA

    def limit_for(
        self, api_key: int, max_frame_size: int, request: Any = None, version: int | None = None
    ) -> int:
        """The ceiling for the reply to ``request`` (its ``api_key``, sent at ``version``)."""
        ceiling = self.ceilings.get(api_key)
        if api_key == _METADATA and (getattr(request, "topics", None) != [] or version == 0):
            # Topics asked for (at v0 an empty list means all): sized by the cluster's partitions.
            ceiling = max(ceiling or 0, self.topic_metadata)
        if ceiling is None:
            ceiling = self.default if self.default is not None else max_frame_size
        return min(ceiling, max_frame_size)

    @property
    def handshake(self) -> int:
        """The ceiling for ApiVersions replies (before any other request on a connection)."""
        return self.ceilings[_API_VERSIONS]

    def check_counts(
        self, api_key: int, version: int, frame: bytes | bytearray | memoryview, start: int
    ) -> None:
        """Refuse an answer whose counts are above their ceilings, before it is decoded.

        ``frame`` is the whole response frame (without its size prefix) and
        ``start`` where its body begins (0: after a header this reads itself,
        with its tagged fields).  Only Metadata has a count ceiling: its brokers.
        """
        if api_key != _METADATA:
            return
        try:
            position = _body_start(frame, start)
            if version >= 3:
                position += 4  # throttle_time_ms
            if version >= 9:
                raw, _ = _wire.read_uvarint(frame, position)
                count = raw - 1
            else:
                (count,) = _wire.INT32.unpack_from(frame, position)
        except (IndexError, ValueError, DecodeError, struct.error):
            return  # too short to hold the count: the decoder says what is wrong
        if count > self.metadata_brokers:
            raise ReplyTooLargeError(
                f"the Metadata answer names {count} brokers, above the ceiling of {self.metadata_brokers}; "
                "the peer is not a real cluster (more can be allowed in "
                "ConnectionConfig.reply_limits: ReplyLimits(metadata_brokers=...))",
                size=count,
                limit=self.metadata_brokers,
                what="MetadataResponse brokers",
            )


def _body_start(frame: bytes | bytearray | memoryview, start: int) -> int:
    """Where the body begins: ``start``, or after a flexible header's tagged fields when 0."""
    if start:
        return start
    position = 4  # the correlation id
    count, position = _wire.read_uvarint(frame, position)
    for _ in range(min(count, _wire.MAX_TAGGED_FIELDS)):
        _, _, position = _wire.read_tag_header(frame, position)
    return position
