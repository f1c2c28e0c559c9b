"""kafkacompat: make clients and admin tools work with whatever Kafka broker they meet."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

# Every exception class, at the top level: ``except kafkacompat.KafkaCompatError``.
from kafkacompat.errors import (
    AuthenticationError,
    BrokerRejectedError,
    BrokerStartError,
    BrokersUnavailableError,
    BrokerTooOldError,
    ClientSoftwareWarning,
    ConfigError,
    DecodeError,
    EmulatorConfigError,
    EncodeError,
    FanOutLimitError,
    FeatureError,
    FeatureUpdateBlockedError,
    HandshakeConfigError,
    HandshakeStateError,
    InstallError,
    InvalidAddressError,
    InvalidRequestError,
    KafkaCompatError,
    KafkaTimeoutError,
    NegotiationError,
    NoBrokerReachableError,
    PeerClosedError,
    PipelineStateError,
    ProtocolError,
    ProtocolViolationError,
    ReplyTooLargeError,
    TransportError,
    UnknownBrokerError,
    UnsupportedVersionError,
    VersionRemovedError,
    WrongEndpointError,
    WrongProtocolError,
)
from kafkacompat.protocol.versions import VersionRange

__version__ = "0.1.0"

if TYPE_CHECKING:
    from kafkacompat.transport.cluster import connect
    from kafkacompat.transport.probe import probe_address, probe_broker
    from kafkacompat.transport.sync import connect_sync

__all__ = [
    "AuthenticationError",
    "BrokerRejectedError",
    "BrokerStartError",
    "BrokerTooOldError",
    "BrokersUnavailableError",
    "ClientSoftwareWarning",
    "ConfigError",
    "DecodeError",
    "EmulatorConfigError",
    "EncodeError",
    "FanOutLimitError",
    "FeatureError",
    "FeatureUpdateBlockedError",
    "HandshakeConfigError",
    "HandshakeStateError",
    "InstallError",
    "InvalidAddressError",
    "InvalidRequestError",
    "KafkaCompatError",
    "KafkaTimeoutError",
    "NegotiationError",
    "NoBrokerReachableError",
    "PeerClosedError",
    "PipelineStateError",
    "ProtocolError",
    "ProtocolViolationError",
    "ReplyTooLargeError",
    "TransportError",
    "UnknownBrokerError",
    "UnsupportedVersionError",
    "VersionRange",
    "VersionRemovedError",
    "WrongEndpointError",
    "WrongProtocolError",
    "__version__",
    "connect",
    "connect_sync",
    "probe_address",
    "probe_broker",
]

# The transport (trio, tenacity) is imported on first use, so that the codec and
# the negotiation core can be used without it.
_LAZY = {
    "connect": "kafkacompat.transport.cluster",
    "connect_sync": "kafkacompat.transport.sync",
    "probe_address": "kafkacompat.transport.probe",
    "probe_broker": "kafkacompat.transport.probe",
}


def _lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``, which imports its exports on first use.

    ``homes`` maps each lazy name to the module that defines it (a home without
    a dot is a submodule of ``package``).  The value is kept in the package, so
    each name is looked up once.  Every lazily exporting package uses this one.
    """
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(home if "." in home else f"{package}.{home}"), name)
        namespace[name] = value
        return value

    return __getattr__


__getattr__ = _lazy_exports(__name__, _LAZY)
