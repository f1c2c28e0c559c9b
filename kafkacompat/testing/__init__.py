"""kafkacompat's public testing kit: real and emulated brokers on loopback.

Real brokers, each started, checked and stopped by a context manager:
``TansuBroker`` (Tansu), ``NoidaBroker`` (noida-db's Kafka service),
``LibrdkafkaMockBroker`` (librdkafka 2.0.2's mock cluster) and
``Kafka09Broker`` (Apache Kafka 0.9.0.1 with ZooKeeper) and ``ApacheKafka``
(any Apache Kafka release from Maven Central, ZooKeeper or KRaft).  Emulated ones:
``EmulatedCluster`` and friends; a scripted ``HostileBroker``.  Brokers that
fail: ``EmulatorProcess`` (the emulator in a process of its own, to
``kill()`` with SIGKILL and start again) and ``BlackHole`` (a port that drops
every SYN).  See docs/testing.md.
"""

from kafkacompat.testing.apache_kafka import ApacheKafka
from kafkacompat.testing.black_hole import BlackHole
from kafkacompat.testing.emulator import (
    BrokerProfile,
    EmulatedBroker,
    EmulatedCluster,
    Fault,
    FaultKind,
    SaslConfig,
    ThreadedCluster,
    custom_profile,
    profile_for,
)
from kafkacompat.testing.emulator_process import EmulatorProcess
from kafkacompat.testing.hostile import HostileBroker, Reply, Request
from kafkacompat.testing.kafka09 import Kafka09Broker, kafka09_home
from kafkacompat.testing.librdkafka_mock import LibrdkafkaMockBroker, install_confluent_kafka
from kafkacompat.testing.noida import NoidaBroker, noida_binary
from kafkacompat.testing.ports import free_port
from kafkacompat.testing.process import BrokerProcess
from kafkacompat.testing.tansu import TansuBroker, tansu_binary

__all__ = [
    "ApacheKafka",
    "BlackHole",
    "BrokerProcess",
    "BrokerProfile",
    "EmulatedBroker",
    "EmulatedCluster",
    "EmulatorProcess",
    "Fault",
    "FaultKind",
    "HostileBroker",
    "Kafka09Broker",
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
    "kafka09_home",
    "noida_binary",
    "profile_for",
    "tansu_binary",
]
