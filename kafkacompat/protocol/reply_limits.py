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
anything else                       the connection's ``max_frame_size``
==================================  ========  ========================================

``ReplyLimits`` lives in ``ConnectionConfig.reply_limits``; a user who needs
more raises one ceiling (``ReplyLimits(ceilings={18: 1 << 20})``) or all of
them.  No ceiling is ever above ``max_frame_size``.  Sans-I/O: a driver asks
``limit_for`` when it writes a request and hands the number to
``FrameSplitter.next_frame`` when it reads the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from kafkacompat.errors import ConfigError
from kafkacompat.protocol.messages import ApiKey

__all__ = ["DEFAULT_CEILINGS", "ReplyLimits"]

KIB = 1024
MIB = 1024 * KIB

# A plain int: compared for every request sent.
_METADATA: Final = int(ApiKey.METADATA)
_API_VERSIONS: Final = int(ApiKey.API_VERSIONS)  # read per connect: an enum member costs ~0.1 us on 3.11

#: Ceiling per API key of the request answered (Metadata: when it asks for no topics).
DEFAULT_CEILINGS: Mapping[int, int] = MappingProxyType(
    {
        ApiKey.API_VERSIONS: 64 * KIB,
        ApiKey.METADATA: 256 * KIB,
        ApiKey.FIND_COORDINATOR: 1 * MIB,
        ApiKey.DESCRIBE_CLUSTER: 256 * KIB,
        ApiKey.SASL_HANDSHAKE: 64 * KIB,
        ApiKey.SASL_AUTHENTICATE: 64 * KIB,
        ApiKey.UPDATE_FEATURES: 1 * MIB,
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
            ceiling = None  # topics asked for (at v0 an empty list means all): sized by the cluster
        if ceiling is None:
            ceiling = self.default if self.default is not None else max_frame_size
        return min(ceiling, max_frame_size)

    @property
    def handshake(self) -> int:
        """The ceiling for ApiVersions replies (before any other request on a connection)."""
        return self.ceilings[_API_VERSIONS]
