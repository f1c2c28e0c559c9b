"""The ApiVersions handshake (KIP-35, KIP-511, KIP-1242): one sans-I/O machine, in parts.

Where each part lives:

- ``machine``: ``ApiVersionsHandshake``, the machine a connection drives
  (actions out, events in); it decides which outcome each event has.
- ``table``: the rules, and the table of states and transitions they make.
- ``reply``: what one ApiVersions reply means (a pure judgement), and the result built from it.
- ``legacy``: the part for brokers that do not answer ApiVersions (the probe
  that tells 0.9 from a slow broker, the 0.8.x check), held by the machine;
  ``legacy_probe`` holds those pre-0.10 requests (loaded only when needed).
- ``identity``: which broker a connection means to reach (KIP-1242), and the
  per-address memory of what each advertised.
- ``config``: ``HandshakeConfig``, checked once when made.
- ``types``: the actions, the result, and the quick twins that build them.
- ``transcript``: what was tried, for every error and report.

The names below are the ones the rest of the package uses.  ``BrokerIdentity`` and
``ApiVersionsMemory`` load on first use: only the cluster layer makes them, so a
connection made on its own never loads ``identity``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacompat._lazy import lazy_exports as _lazy_exports
from kafkacompat.negotiation.handshake.config import CODEC_MAX_VERSION, HandshakeConfig, release_ranges
from kafkacompat.negotiation.handshake.machine import ApiVersionsHandshake
from kafkacompat.negotiation.handshake.table import TRANSITIONS, Event, State, Transition
from kafkacompat.negotiation.handshake.transcript import HandshakeAttempt, HandshakeTranscript
from kafkacompat.negotiation.handshake.types import (
    Action,
    Connect,
    Done,
    Fail,
    HandshakeResult,
    ReceiveReply,
    SendProbe,
    SendRequest,
)

if TYPE_CHECKING:
    from kafkacompat.negotiation.handshake.identity import ApiVersionsMemory, BrokerIdentity

__getattr__ = _lazy_exports(__name__, {"ApiVersionsMemory": "identity", "BrokerIdentity": "identity"})

__all__ = [
    "CODEC_MAX_VERSION",
    "TRANSITIONS",
    "Action",
    "ApiVersionsHandshake",
    "ApiVersionsMemory",
    "BrokerIdentity",
    "Connect",
    "Done",
    "Event",
    "Fail",
    "HandshakeAttempt",
    "HandshakeConfig",
    "HandshakeResult",
    "HandshakeTranscript",
    "ReceiveReply",
    "SendProbe",
    "SendRequest",
    "State",
    "Transition",
    "release_ranges",
]
