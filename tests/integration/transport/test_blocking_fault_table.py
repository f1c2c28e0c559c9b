"""The transport's fault table, case by case, through the blocking driver.

The same proxy (run by trio on a thread), the same exchange (open, Metadata,
FindCoordinator v4 with a key the answer must echo), the same allowed
outcomes as the trio and asyncio drivers' tables: all three share one sans-I/O
connection, so they must end every case the same way.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkacompat.blocking.connection import open_blocking_connection
from kafkacompat.errors import KafkaCompatError
from kafkacompat.protocol import messages as m
from kafkacompat.testing.tansu import TansuBroker
from tests.integration.transport.test_connection_faults import (
    CONFIG,
    KEY,
    TABLE,
    Case,
    check_case_from_another_loop,
)

pytestmark = pytest.mark.broker


def _exchange(address: tuple[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {"stage": "open", "error": None}
    try:
        with open_blocking_connection(*address, CONFIG) as conn:
            result["handshake"] = conn.handshake
            result["stage"] = "request"
            metadata = conn.request(m.MetadataRequest(topics=None))
            assert isinstance(metadata, m.MetadataResponse), metadata  # never another's answer
            found = conn.request(m.FindCoordinatorRequest(coordinator_keys=[KEY]), version=4)
            assert isinstance(found, m.FindCoordinatorResponse), found
            assert [c.key for c in found.coordinators] == [KEY], found  # its own answer
            result["stage"] = "done"
    except KafkaCompatError as exc:
        result["error"] = exc
    return result


@pytest.mark.parametrize("case", TABLE, ids=[c.id for c in TABLE])
def test_fault_table_through_the_blocking_driver(tansu: TansuBroker, case: Case) -> None:
    check_case_from_another_loop(tansu, case, _exchange)  # every socket call has a deadline
