"""kafkacompat's public testing kit: real and emulated brokers on loopback."""

from kafkacompat.testing.ports import BrokerStartError, free_port
from kafkacompat.testing.tansu import TansuBroker, tansu_binary

__all__ = ["BrokerStartError", "TansuBroker", "free_port", "tansu_binary"]
