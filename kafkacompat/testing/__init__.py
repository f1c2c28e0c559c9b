"""kafkacompat's public testing kit: real and emulated brokers on loopback."""

from kafkacompat.testing.emulator import (
    BrokerProfile,
    EmulatedBroker,
    EmulatedCluster,
    EmulatorConfigError,
    Fault,
    FaultKind,
    SaslConfig,
    ThreadedCluster,
    custom_profile,
    profile_for,
)
from kafkacompat.testing.hostile import HostileBroker, Reply, Request
from kafkacompat.testing.ports import BrokerStartError, free_port
from kafkacompat.testing.tansu import TansuBroker, tansu_binary

__all__ = [
    "BrokerProfile",
    "BrokerStartError",
    "EmulatedBroker",
    "EmulatedCluster",
    "EmulatorConfigError",
    "Fault",
    "FaultKind",
    "HostileBroker",
    "Reply",
    "Request",
    "SaslConfig",
    "TansuBroker",
    "ThreadedCluster",
    "custom_profile",
    "free_port",
    "profile_for",
    "tansu_binary",
]
