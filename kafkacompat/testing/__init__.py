"""kafkacompat's public testing kit: real and emulated brokers on loopback.

Real brokers, each a ``BrokerProcess`` (started, checked and stopped by a
context manager): ``TansuBroker`` (Tansu), ``NoidaBroker`` (noida-db's Kafka
service), ``LibrdkafkaMockBroker`` (librdkafka 2.0.2's mock cluster).
Emulated ones: ``EmulatedCluster`` and friends.  See docs/testing.md.
"""

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
from kafkacompat.testing.librdkafka_mock import LibrdkafkaMockBroker, install_confluent_kafka
from kafkacompat.testing.noida import NoidaBroker, noida_binary
from kafkacompat.testing.ports import BrokerStartError, free_port
from kafkacompat.testing.process import BrokerProcess
from kafkacompat.testing.tansu import TansuBroker, tansu_binary

__all__ = [
    "BrokerProcess",
    "BrokerProfile",
    "BrokerStartError",
    "EmulatedBroker",
    "EmulatedCluster",
    "EmulatorConfigError",
    "Fault",
    "FaultKind",
    "HostileBroker",
    "LibrdkafkaMockBroker",
    "NoidaBroker",
    "Reply",
    "Request",
    "SaslConfig",
    "TansuBroker",
    "ThreadedCluster",
    "custom_profile",
    "free_port",
    "install_confluent_kafka",
    "noida_binary",
    "profile_for",
    "tansu_binary",
]
