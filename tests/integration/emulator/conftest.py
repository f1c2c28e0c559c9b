"""The emulator's pytest fixtures (kafkacompat.testing.pytest_plugin), for these tests."""

from kafkacompat.testing.pytest_plugin import emulated_cluster, threaded_emulated_cluster

__all__ = ["emulated_cluster", "threaded_emulated_cluster"]
