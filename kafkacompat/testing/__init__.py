"""kafkacompat's public testing kit: real (Tansu, Kafka 0.9.0.1) and emulated brokers on loopback."""

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
from kafkacompat.testing.kafka09 import Kafka09Broker, kafka09_home
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
    "Kafka09Broker",
    "SaslConfig",
    "TansuBroker",
    "ThreadedCluster",
    "custom_profile",
    "free_port",
    "kafka09_home",
    "profile_for",
    "tansu_binary",
]
