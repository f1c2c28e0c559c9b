"""The emulator's fixtures, to set emulated pre-0.10 brokers beside the real Kafka 0.9.0.1."""

from kafkacompat.testing.pytest_plugin import emulated_cluster, threaded_emulated_cluster

__all__ = ["emulated_cluster", "threaded_emulated_cluster"]
