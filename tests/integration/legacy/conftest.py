"""Fixtures for the legacy tests: the emulator's, and the CLI runner's, beside the real Kafka 0.9.0.1."""

from kafkacompat.testing.pytest_plugin import emulated_cluster, threaded_emulated_cluster
from tests.integration.cli.conftest import run_cli

__all__ = ["emulated_cluster", "run_cli", "threaded_emulated_cluster"]
