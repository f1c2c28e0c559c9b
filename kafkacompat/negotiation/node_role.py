"""Which kind of node an ApiVersions answer comes from: a broker, or a KRaft controller.

A KRaft controller answers on its own listener with the APIs of that
listener: the Raft quorum (Vote, BeginQuorumEpoch, ...), broker registration
and heartbeats, features and a few admin APIs, but never Metadata, which is
how clients find brokers.  Vote and BrokerRegistration are listed by every
controller from 3.0 to 4.2 and by no broker of any release (2.8's
early-access controller still listed Metadata, so it passes for a broker and
is handled as one).  The transport uses this rule to tell a controller
address from a broker, the fleet pipeline to keep controllers out of what
clients would negotiate.
"""

from __future__ import annotations

from typing import Final, Literal

from kafkacompat.negotiation.capabilities import BrokerCapabilities

__all__ = ["CONTROLLER_ONLY_APIS", "METADATA_API", "NodeKind", "looks_like_controller"]

NodeKind = Literal["broker", "controller"]
METADATA_API: Final = 3
#: Vote and BrokerRegistration: every KRaft controller lists them, no broker does.
CONTROLLER_ONLY_APIS: Final = (52, 62)


def looks_like_controller(capabilities: BrokerCapabilities) -> bool:
    """True for a KRaft controller's answer: no Metadata, but the controller-only APIs."""
    return not capabilities.lists_api(METADATA_API) and all(
        capabilities.lists_api(key) for key in CONTROLLER_ONLY_APIS
    )
