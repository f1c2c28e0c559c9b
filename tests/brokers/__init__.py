"""Real peers for the integration tests: librdkafka's mock cluster and raw exchanges.

Tansu lives in the public testing kit (``kafkacompat.testing.tansu``).  Every
peer listens on, and is talked to on, 127.0.0.1 only.  A peer that cannot be
started raises ``BrokerStartError``; the fixtures turn that into a test
failure, never a skip.
"""

from __future__ import annotations

from kafkacompat.testing.ports import LOOPBACK, free_port

__all__ = ["LOOPBACK", "free_port"]
